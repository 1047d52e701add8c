"""tests/ mirrors the grader package: every stage (a folder of posenc_autograder) has a folder of tests of its own,
so a newcomer finds a stage's tests where its code is (tests/<stage>/), beside the suites that cross stages."""
import ast
import configparser
import importlib.util
import pathlib
import re
import types

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder" / "posenc_autograder"
ACROSS_STAGES = {"architecture", "book", "end_to_end", "support"}     # folders of tests/ that are no stage's


def root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_config(expression: str, basetemp=None):
    """What the root conftest reads of a run: its -m expression, --basetemp and pytest.ini's markers."""
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    markers = [line for line in ini["pytest"]["markers"].splitlines() if line.strip()]
    return types.SimpleNamespace(option=types.SimpleNamespace(markexpr=expression, basetemp=basetemp),
                                 getini=lambda name: markers if name == "markers" else None)


def fast_run_expression() -> str:
    """make test-fast's -m expression, read from the Makefile."""
    return re.search(r'^test-fast:.*?-m "([^"]+)"', (ROOT / "Makefile").read_text(), re.M | re.S).group(1)


def stages() -> set[str]:
    return {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}


def test_every_stage_has_a_folder_of_tests():
    missing = {stage for stage in stages() if not list((ROOT / "tests" / stage).glob("test_*.py"))}
    assert missing == set(), f"stages without tests/<stage>/: {sorted(missing)}"


def test_every_folder_of_tests_is_a_stage_or_says_why_not():
    folders = {path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert folders - stages() - ACROSS_STAGES == set()


def test_each_test_the_root_conftest_names_still_exists(request):
    """conftest.SLOW_TESTS and DEAR_TESTS name tests by node id (or its prefix): a renamed or moved one would silently
    come back into test-fast; so does WHY_SLOW, whose reason would silently leave the slowest tests' list. An entry of
    a file this run collected names a test it collected (a parameter's id too, which the module may make up); of
    another file, a function its source defines."""
    conftest = root_conftest()
    collected = next(plugin.COLLECTED for plugin in request.config.pluginmanager.get_plugins()
                     if getattr(plugin, "__file__", None) == str(ROOT / "conftest.py"))
    files = {node.split("::", 1)[0] for node in collected}
    for node in [*conftest.SLOW_TESTS, *conftest.DEAR_TESTS, *conftest.WHY_SLOW]:
        path, _, name = node.partition("::")
        if path in files:
            assert any(test.startswith(node) for test in collected), f"{node} names no test"
            continue
        name, _, parameters = name.partition("[")
        source = (ROOT / path).read_text()
        assert not name or re.search(rf"^def {re.escape(name)}", source, re.M), f"{node} names no test"


def test_each_test_left_to_make_test_says_why_and_what_it_cost():
    conftest = root_conftest()
    for node, why in [*conftest.SLOW_TESTS.items(), *conftest.DEAR_TESTS.items()]:
        assert re.fullmatch(r".{10,}, \d+(\.\d+)? CPU-s", why), f"{node}: '{why}' gives no reason and CPU-seconds"


def test_a_test_left_to_make_test_has_its_reason_in_the_slowest_list():
    """The slowest tests' list (the run's record, which make bench-waits prints) reads a test's reason from WHY_SLOW
    or, failing that, from the record of tests left to make test: one reason a test, written once."""
    conftest = root_conftest()
    for reasons in (conftest.SLOW_TESTS, conftest.DEAR_TESTS):
        for node, why in reasons.items():
            if not any(node.startswith(prefix) or prefix.startswith(node) for prefix in conftest.WHY_SLOW):
                assert conftest.why_slow(node) == why, node
    assert conftest.why_slow("tests/nowhere.py::test_nothing") is None


def functions_of(path: pathlib.Path) -> list[str]:
    """The node id of each test function of a test file (a class's as Class::name), parameters left out."""
    tree = ast.parse(path.read_text())
    found = [node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]
    for cls in (node for node in tree.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test")):
        found += [f"{cls.name}::{node.name}" for node in cls.body
                  if isinstance(node, ast.FunctionDef) and node.name.startswith("test")]
    return [f"{path.relative_to(ROOT).as_posix()}::{name}" for name in found]


def test_the_dear_tests_leave_every_file_a_test_in_test_fast():
    """make test-fast still touches every module: the dear tests never take a file's last test out of it (an entry
    naming some parameters of a function leaves it the others). A file every test of which runs a whole stage for real
    (SLOW_TESTS, as the type check) is the only kind left out whole, as are the folders of slow tests."""
    conftest = root_conftest()
    emptied = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if conftest.SLOW_FOLDERS & set(path.relative_to(ROOT).parts):
            continue
        # only a file some dear entry may name can be emptied by them: the others are not parsed (every test file
        # parsed was this test's whole cost)
        file = path.relative_to(ROOT).as_posix() + "::"
        if not any(prefix.startswith(file) or file.startswith(prefix) for prefix in conftest.DEAR_TESTS):
            continue
        functions = functions_of(path)
        not_slow = [name for name in functions if not name.startswith(tuple(conftest.SLOW_TESTS))]
        if not_slow and all(name.startswith(tuple(conftest.DEAR_TESTS)) for name in not_slow):
            emptied.append(path.relative_to(ROOT).as_posix())
    assert emptied == [], f"files left with no test in make test-fast: {emptied}"


def test_make_test_runs_every_test_that_test_fast_leaves_to_it():
    """A dear test is marked, not skipped: make test selects every test (no -m, -k or --deselect), test-fast's
    expression leaves out exactly what is marked dear among the unit tests."""
    from _pytest.mark.expression import Expression
    conftest = root_conftest()
    recipe = re.search(r"^test: .*?\n((?:\t.*\n|\t*#.*\n)+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    command = next(line for line in recipe.splitlines() if "-m pytest" in line)
    assert not re.search(r" (-m|-k|--deselect|--ignore)\b", command.split("-m pytest", 1)[1]), command
    expression = Expression.compile(fast_run_expression())
    assert expression.evaluate(conftest.marked_only(set())) and not expression.evaluate(conftest.marked_only({"dear"}))
    node = next(iter(conftest.DEAR_TESTS))
    markers: list = []
    item = types.SimpleNamespace(nodeid=node + ("" if "[" in node else "[x]"), fixturenames=(),
                                 add_marker=markers.append)
    conftest.pytest_collection_modifyitems(types.SimpleNamespace(option=types.SimpleNamespace()), [item])
    assert {marker.name for marker in markers} == {"dear", "xdist_group"}


def test_a_run_leaving_out_every_slow_test_skips_only_the_folders_of_slow_tests():
    """conftest.leaves_out_slow decides whether tests/end_to_end/ is imported at all: only when the -m expression
    (make test-fast's, read from the Makefile) is false for every test marked slow, whatever else it is marked."""
    conftest = root_conftest()

    def leaves_out(expression: str) -> bool:
        return conftest.leaves_out_slow(run_config(expression))
    test_fast = fast_run_expression()
    assert leaves_out(test_fast) and leaves_out("not slow") and leaves_out("hub and not slow")
    for keeps in ("", "slow", "not book", "slow or hub", "not slow or hub", "not (slow and browser)"):
        assert not leaves_out(keeps), keeps


def test_leaving_out_the_slow_tests_is_decided_over_the_markers_the_expression_names(monkeypatch):
    """Every test process asks it (the main one twice) before its first test: the expression is evaluated for each
    set of the markers it names, not of every marker registered (pytest's and its plugins' ones too)."""
    conftest = root_conftest()
    config = run_config(fast_run_expression())
    ini_markers = config.getini("markers")
    registered = ini_markers + [f"plugin_marker_{number}: registered by a plugin" for number in range(8)]
    monkeypatch.setattr(config, "getini", lambda name: registered if name == "markers" else None)
    asked = []
    matcher = conftest.marked_only
    monkeypatch.setattr(conftest, "marked_only", lambda markers: asked.append(markers) or matcher(markers))
    assert conftest.leaves_out_slow(config)
    named = len(re.findall(r"\bnot (\w+)", fast_run_expression()))
    assert len(asked) == 2 ** (named - 1), len(asked)


def test_a_file_marked_whole_with_a_marker_the_run_leaves_out_is_not_imported(tmp_path):
    """Its module's pytestmark (one marker, as written in its source) or SLOW_TESTS naming the file whole: make
    test-fast does not import it; a run that may select its tests imports it, as every run imports a file marked
    otherwise."""
    conftest = root_conftest()
    fast, every = run_config(fast_run_expression()), run_config("")
    written = {"slow": "pytestmark = pytest.mark.slow      # why\n", "hub": "pytestmark = pytest.mark.hub\n",
               "list": "pytestmark = [pytest.mark.slow, pytest.mark.hub]\n",
               "arguments": "pytestmark = pytest.mark.skipif(True, reason='no')\n",
               "a test's own": "@pytest.mark.slow\ndef test_one():\n    pass\n"}
    ignored = {}
    for name, source in written.items():
        path = tmp_path / f"test_{len(ignored)}.py"
        path.write_text(f"import pytest\n\n{source}")
        ignored[name] = conftest.pytest_ignore_collect(path, fast)
        assert conftest.pytest_ignore_collect(path, every) is None, name
    assert ignored == {"slow": True, "hub": True, "list": None, "arguments": None, "a test's own": None}
    named_whole = next(node.split("::")[0] for node in conftest.SLOW_TESTS if node.endswith("::"))
    assert conftest.pytest_ignore_collect(ROOT / named_whole, fast) is True
    assert conftest.pytest_ignore_collect(ROOT / named_whole, run_config("not dear")) is None


def test_make_test_fast_goes_without_anyios_plugin_which_no_test_uses():
    """anyio's pytest plugin (an entry point of anyio, which the portal's web framework needs) runs no test here: no
    test is marked anyio or asks for its anyio_backend fixture. make test-fast blocks it (-p no:anyio), which spares
    its import, ~0.13 CPU-s, in the process that starts the workers, before they start, and in each worker."""
    recipe = re.search(r"^test-fast:.*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    command = next(line for line in recipe.splitlines() if "-m pytest" in line)
    assert "-p no:anyio" in command, command
    uses = re.compile(r"pytest\.mark\.anyio|\banyio_backend\b")
    sources = sorted((ROOT / "tests").rglob("*.py")) + [ROOT / "conftest.py"]
    using = [path.relative_to(ROOT).as_posix() for path in sources
             if path != pathlib.Path(__file__).resolve() and uses.search(path.read_text())]
    assert using == [], using


def test_make_test_fast_goes_without_nbval_and_still_reads_pytest_ini():
    """make test-fast runs no notebook (its only folder is tests/) and blocks nbval; pytest.ini's --nbval-lax is then
    an option the root conftest adds, doing nothing. A run that loads nbval gets nbval's own."""
    conftest = root_conftest()
    recipe = re.search(r"^test-fast:.*?\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M).group(1)
    command = next(line for line in recipe.splitlines() if "-m pytest" in line)
    assert f"-p no:{conftest.NBVAL}" in command and command.split()[-1] == "tests", command
    ini = configparser.ConfigParser()
    ini.read(ROOT / "pytest.ini")
    assert "--nbval-lax" in ini["pytest"]["addopts"].split()
    for blocked, expected in (({"nbval"}, ["--nbval-lax"]), (set(), [])):
        added: list[str] = []
        parser = types.SimpleNamespace(addoption=lambda *names, into=added, **settings: into.extend(names))
        conftest.pytest_addoption(parser, types.SimpleNamespace(is_blocked=blocked.__contains__))
        assert added == expected, (blocked, added)


def test_a_run_leaving_out_the_slow_tests_keeps_its_temporary_folders_in_memory(tmp_path, monkeypatch):
    """make test-fast's TMPDIR is the in-memory folder; a run with the slow tests (the sandbox's attack notebooks
    look for the course under /tmp), one that names its own folder, or a folder that refuses programs keeps the disk."""
    import os
    import subprocess
    import tempfile
    conftest = root_conftest()
    test_fast = fast_run_expression()

    before = tempfile.gettempdir()
    # The conftest writes TMPDIR into a copy of the environment, which the worker's own replaces again afterwards:
    # monkeypatch.delenv of a TMPDIR not set records nothing, so undoing the calls below put back the TMPDIR the first
    # one had set (this test's folder) for every later test of the worker, and Chromium's socket under it was too long.
    monkeypatch.setattr(os, "environ", os.environ.copy())

    def in_memory(expression: str, basetemp=None, memory=str(tmp_path)) -> bool:
        monkeypatch.delenv("TMPDIR", raising=False)
        monkeypatch.setattr(tempfile, "tempdir", before)
        monkeypatch.setattr(conftest, "MEMORY_FREE_BYTES", 0)
        moved = conftest.temporary_folder_in_memory(run_config(expression, basetemp), memory)
        assert (os.environ.get("TMPDIR"), tempfile.gettempdir()) == ((memory, memory) if moved else (None, before))
        return moved
    assert in_memory(test_fast)
    assert not in_memory("") and not in_memory(test_fast, basetemp=str(tmp_path / "own"))
    assert not in_memory(test_fast, memory=str(tmp_path / "absent"))
    monkeypatch.setenv("TMPDIR", "/var/tmp")
    assert not conftest.temporary_folder_in_memory(run_config(test_fast), str(tmp_path))
    assert os.environ["TMPDIR"] == "/var/tmp"
    noexec = tmp_path / "noexec"
    noexec.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,size=1m", "tmpfs", str(noexec)]).returncode == 0:
        try:
            assert not in_memory(test_fast, memory=str(noexec))
        finally:
            subprocess.run(["umount", str(noexec)], check=True)


def test_the_first_test_that_asks_for_tempfiles_folder_leaves_nothing_changed(request, monkeypatch):
    """tempfile works its folder out once, at the first call that needs it: that test is not named for it (a run
    without workers failed the first test to use tmp_path: 'tempfile.tempdir: None -> /dev/shm')."""
    import tempfile
    guard = next(plugin for plugin in request.config.pluginmanager.get_plugins()
                 if getattr(plugin, "__file__", None) == str(ROOT / "tests" / "conftest.py"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    before, children = guard.process_state(), guard.child_processes()
    tempfile.gettempdir()                        # as tmp_path, a tempfile, a temporary folder ask
    assert guard.left_behind(before, children) is None


def test_a_test_that_leaves_its_process_changed_is_named(request, monkeypatch):
    """tests/conftest.py names what a test left for the next tests of its worker: an environment variable, a child
    process (here both); nothing when the process is as it was."""
    import subprocess
    import time
    guard = next(plugin for plugin in request.config.pluginmanager.get_plugins()
                 if getattr(plugin, "__file__", None) == str(ROOT / "tests" / "conftest.py"))
    before, children = guard.process_state(), guard.child_processes()
    assert guard.left_behind(before, children) is None
    monkeypatch.setenv("POSENC_LEFT_BEHIND", "1")
    child = subprocess.Popen(["sleep", "60"])
    deadline = time.monotonic() + 10        # the kernel writes its command line a moment after Popen returns
    while not guard.command_line(child.pid).strip() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        found = guard.left_behind(before, children)
    finally:
        child.kill()
        child.wait()
    assert "'POSENC_LEFT_BEHIND': (None, '1')" in found
    assert f"child process {child.pid} still running: sleep 60" in found
    monkeypatch.delenv("POSENC_LEFT_BEHIND")
    assert guard.left_behind(before, children) is None


def test_a_child_the_test_ended_is_no_leak_while_it_is_still_being_reaped(request):
    """A child killed at the test's end but not yet reaped (a zombie), or one still exiting when the teardown looks,
    is not named: the guard fails a test, so a child in its last moments must not fail it (a killed child counted
    as 'still running' fails on the old code)."""
    import os
    import signal
    import subprocess
    import time
    guard = next(plugin for plugin in request.config.pluginmanager.get_plugins()
                 if getattr(plugin, "__file__", None) == str(ROOT / "tests" / "conftest.py"))
    before, children = guard.process_state(), guard.child_processes()
    zombie = subprocess.Popen(["sleep", "60"])
    exiting = subprocess.Popen(["sleep", "0.5"])
    try:
        os.kill(zombie.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while guard.running(zombie.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert zombie.pid in guard.child_processes()          # still this process's child, not reaped
        assert guard.left_behind(before, children) is None
    finally:
        zombie.wait()
        exiting.wait()


def test_a_test_that_leaves_its_process_changed_fails_and_the_next_tests_find_it_as_it_was(request, tmp_path):
    """The guard fails the test that left an environment variable, the working folder or tempfile's folder changed,
    naming them, and puts them back for the tests after it (it only warned, and the change stayed: fails on the old
    code, which has no as_found)."""
    import os
    import tempfile
    guard = next(plugin for plugin in request.config.pluginmanager.get_plugins()
                 if getattr(plugin, "__file__", None) == str(ROOT / "tests" / "conftest.py"))
    before, children = guard.process_state(), guard.child_processes()
    guard.as_found(before, children)                    # nothing changed: nothing said
    os.environ["POSENC_LEFT_BEHIND"] = "1"
    os.chdir(tmp_path)
    tempfile.tempdir = str(tmp_path)
    with pytest.raises(pytest.fail.Exception) as failed:
        guard.as_found(before, children)
    assert "'POSENC_LEFT_BEHIND': (None, '1')" in str(failed.value) and str(tmp_path) in str(failed.value)
    assert "POSENC_LEFT_BEHIND" not in os.environ and os.getcwd() == before["working folder"]
    assert tempfile.tempdir == before["tempfile.tempdir"] and guard.left_behind(before, children) is None
