"""The main process of a run on workers makes a fresh checkout's bytecode once, before they start
(tests/support/precompile.py): the test modules rewritten as pytest's import hook rewrites them, the plain modules
compiled, each file by one forked child, and nothing again once it is there."""
import importlib.util
import os
import sys

import precompile
import pytest
from _pytest.assertion import rewrite

FAILING_TEST = "def test_one():\n    found = 1\n    assert found == 2\n"


def test_a_fresh_checkouts_test_modules_are_rewritten_once_and_its_modules_compiled(pytestconfig, tmp_path,
                                                                                     monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    tests, package = tmp_path / "tests", tmp_path / "package"
    (tests / "fixtures").mkdir(parents=True)
    package.mkdir()
    (tests / "test_example.py").write_text(FAILING_TEST)
    (tests / "helper.py").write_text("VALUE = 1\n")
    (tests / "fixtures" / "test_not_collected.py").write_text(FAILING_TEST)     # norecursedirs
    (package / "module.py").write_text("VALUE = 2\n")
    found = precompile.test_modules(pytestconfig, [tests], set())
    assert found == [tests / "test_example.py"]

    assert precompile.precompile(pytestconfig, found, [package / "module.py"], processes=2) == 2
    code = rewrite._read_pyc(found[0], precompile.rewritten_pyc(found[0]))
    assert code is not None and code.co_filename == str(found[0])
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match="assert 1 == 2"):        # pytest's explanation: the asserts rewritten
        namespace["test_one"]()
    assert os.path.exists(importlib.util.cache_from_source(str(package / "module.py")))

    assert precompile.precompile(pytestconfig, found, [package / "module.py"], processes=2) == 0
    found[0].write_text(FAILING_TEST.replace("2", "3"))
    assert precompile.precompile(pytestconfig, found, [package / "module.py"], processes=2) == 1


def test_nothing_is_made_where_bytecode_is_not_written(pytestconfig, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    (tmp_path / "test_example.py").write_text(FAILING_TEST)
    assert precompile.precompile(pytestconfig, [tmp_path / "test_example.py"], [], processes=2) == 0
    assert not precompile.rewritten_pyc(tmp_path / "test_example.py").exists()

