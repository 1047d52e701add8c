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



def test_another_checkout_of_the_same_tests_copies_their_rewritten_bytecode_and_never_runs_a_wrong_copy(
        pytestconfig, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    seed = tmp_path / "seed"
    checkouts = [tmp_path / name / "tests" for name in ("first", "second", "third")]
    for tests in checkouts:
        tests.mkdir(parents=True)
        (tests / "test_example.py").write_text(FAILING_TEST)
    first, second, third = (tests / "test_example.py" for tests in checkouts)
    assert precompile.precompile(pytestconfig, [first], [], processes=2, seed=seed) == 1
    assert precompile.precompile(pytestconfig, [second], [], processes=2, seed=seed) == 0      # copied
    code = rewrite._read_pyc(second, precompile.rewritten_pyc(second))
    assert code is not None and code.co_filename == str(second)
    namespace: dict = {}
    exec(code, namespace)
    with pytest.raises(AssertionError, match="assert 1 == 2"):
        namespace["test_one"]()

    other = tmp_path / "other" / "test_example.py"        # a kept entry holding another source's bytecode
    other.parent.mkdir()
    other.write_text(FAILING_TEST.replace("2", "3"))
    assert precompile.precompile(pytestconfig, [other], [], processes=1) == 1
    precompile.seeded(pytestconfig, third, seed).write_bytes(precompile.rewritten_pyc(other).read_bytes())
    assert precompile.precompile(pytestconfig, [third], [], processes=2, seed=seed) == 1       # rewritten, not run
    namespace = {}
    exec(rewrite._read_pyc(third, precompile.rewritten_pyc(third)), namespace)
    with pytest.raises(AssertionError, match="assert 1 == 2"):
        namespace["test_one"]()


def test_the_seed_keeps_the_most_recently_used(pytestconfig, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    modules = []
    for number in range(3):
        modules.append(tmp_path / f"test_{number}.py")
        modules[-1].write_text(FAILING_TEST.replace("2", str(number + 5)))
    assert precompile.precompile(pytestconfig, modules, [], processes=2) == 3
    for number, module in enumerate(modules):
        precompile.keep(pytestconfig, [module], tmp_path / "seed", most=2)
        os.utime(precompile.seeded(pytestconfig, module, tmp_path / "seed"), (number, number + 1000))
    precompile.keep(pytestconfig, [], tmp_path / "seed", most=2)
    assert sorted(p.name for p in (tmp_path / "seed").iterdir()) == sorted(
        precompile.seeded(pytestconfig, module, tmp_path / "seed").name for module in modules[1:])
