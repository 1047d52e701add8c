"""Test markers, assigned by folder and by fixture: `make test-fast` runs everything that is none of them.

tests/end_to_end/ grades notebooks and runs nbgrader (slow), and so do SLOW_TESTS; DEAR_TESTS are dearer than the
quick run's line (dear); a test that uses the built book, Chromium or PostgreSQL is marked by its fixture (tests/book/'s
source checks stay fast). Unit tests live in
tests/<stage>/, mirroring the grader package's folders. `make test` and `make test-fast` (three workers each) run
them on pytest-xdist, --dist loadgroup: the tests that check the book's build are one group, which goes out first
(the book is built once a run, tests/conftest.py); each that reads it in Chromium or prints it is a group of its own
that waits for that build (tests/support/run_order.py hands out groups longest first); every other file runs whole
on one worker (its PostgreSQL tests too), so its module fixtures are made once, and a solution notebook's cells
(nbval, in the same run) share one kernel on one worker, in order.
"""
import contextlib
import functools
import importlib.util
import itertools
import json
import os
import pathlib
import re
import tempfile
import time
import tomllib

import precompile
import pytest
import run_order

ROOT = pathlib.Path(__file__).resolve().parent
BY_FIXTURE = {"book_build": "book", "browser": "browser", "browser_with_scrollbars": "browser",
              "postgres_url": "postgres"}
SLOW_FOLDERS = {"end_to_end"}
# The tests outside end_to_end/ that `make test-fast` leaves to `make test`, each with why and its CPU-seconds: those
# that run a whole stage for real (slow) and those dearer than the quick run's line (dear). One record, TIER_FILE.
TIER_FILE = ROOT / "tests" / "left_to_make_test.toml"
TIER = tomllib.loads(TIER_FILE.read_text())
SLOW_TESTS: dict[str, str] = TIER["slow"]
DEAR_TESTS: dict[str, str] = TIER["dear"]
# Why each of `make test`'s slowest tests stays slow: the run's record lists its 20 slowest with this (a node id or its
# prefix; `make bench-waits` prints them), so a new slow test shows up there without a reason until it is given one or
# made faster. Most are the first test of a group paying its shared setup, once a run.
WHY_SLOW = {
    "tests/sandbox/test_attacks_as_an_ordinary_user.py::test_the_warm_sandbox_ran_them": "its setup runs every "
    "sandbox attack (forged, malformed and cut-short frames, a log flood, an endless loop) as an ordinary user through "
    "the real supervisor, in one interpreter with that user's own warm zygote",
    "tests/architecture/test_types.py::": "mypy over the whole grader package, ~21 CPU-s from nothing (~1.5 with the "
    "cache a fresh clone copies from the machine's last passing run): `make test`'s type-check, run on a worker",
    "tests/book/test_book.py::test_book_builds_without_warnings": "its setup is the book's build (`make book`: every "
    "chapter executed, then Sphinx), once a run for every test that reads the book",
    "tests/book/test_browser.py::test_every_page_loads_cleanly": "its setup opens its share of the pages once at "
    "desktop width in a Chromium that draws scrollbars (math typeset, images, console, inline formulas, axe), then "
    "shows each in a phone's window (what is cut off, the dark theme's contrast), shared with the axe, inline-formula "
    "and phone-width tests; the shares run on two workers at once",
    "tests/book/test_browser.py::test_internal_links_resolve": "its setup prints the book to PDF, shared with "
    "tests/book/test_pdf.py: the single-page build reads and executes nothing again (the html build's environment and "
    "execution cache: 0 changed) but starts Sphinx, assembles every page into one and writes it, its code highlighted "
    "again (~19 CPU-s at load 16); then Chromium lays out and prints the whole book",
    "tests/book/test_pdf.py::": "reads the printed PDF, every page's text and tags (PDFium)",
    "tests/book/test_browser.py::test_the_sampled_contrast_check_reports_what_a_full_run_reports": "axe's "
    "colour-contrast over every code span of a chapter, then of the faulted code block, for each fault the sampling "
    "could miss (the proof that the crawls' sampled check sees what the full one sees)",
    "tests/book/test_chapters_standalone.py::test_chapter_runs_alone_and_twice_the_same": "the chapter run in a fresh "
    "kernel of the reader's environment, its outputs compared with the book build's run of it",
    "tests/book/test_explorables.py::": "the figure driven in Chromium at every setting",
    "tests/end_to_end/test_mutation.py::": "its setup grades a fixed sample of every reference's mutants with the "
    "hidden tests (`make mutate` grades them all)",
    "tests/end_to_end/test_validate_catalogue.py::": "its setup runs `nbgrader validate` on a notebook of each "
    "catalogued mistake and round of alternatives (27), as a student runs it: one process (~3 CPU-s to start) and a "
    "kernel each (~1 CPU-s a notebook)",
    "tests/end_to_end/test_attacks.py::": "its setup grades a class of every attack notebook in the sandbox",
    "tests/end_to_end/test_integrity_report.py::": "its setup grades a class of 40 with 12 planted pairs",
    "tests/end_to_end/test_grading.py::": "its setup is `make grade` of every fixture notebook",
    "tests/end_to_end/test_every_door.py::": "one class through every door (LMS zip, portal, exchange) and every page",
    "tests/end_to_end/test_new_assignment.py::": "a fourth assignment discovered, released and graded from nothing",
    "tests/end_to_end/test_wheel.py::": "its setup builds the grader's wheel and installs it in a fresh environment",
    "tests/devtools/test_stopped_bench.py::test_a_terminated_portal_bench": "a real portal bench started (its scratch "
    "course copied and released, its portal and grading processes up) and stopped by SIGTERM: what it must leave "
    "behind is a real run's process tree",
    "tests/end_to_end/test_nbgrader_tools.py::": "nbgrader's own commands on a graded class",
    "tests/end_to_end/test_scale.py::": "a class graded on PostgreSQL and a dask cluster",
    "tests/end_to_end/test_formgrader.py::": "nbgrader's formgrader started and read in Chromium",
    "tests/end_to_end/test_portal_browser.py::": "the portal driven in Chromium, notebooks graded in the sandbox",
    "tests/authoring/test_exercise_layout.py::test_committed_exercises_equal_a_fresh_generation": "nbgrader's own "
    "generate_assignment command (one process for every assignment): the proof that exercises/ is what nbgrader makes",
    "tests/authoring/test_exercise_layout.py::test_nbgrader_validate_passes": "its setup runs `nbgrader validate` on "
    "every assignment's solved and untouched notebook (one process, each notebook executed in a kernel)",
    "tests/grading/test_kernel_semantics.py::": "its setup grades the realistic notebooks in the sandbox",
    "tests/grading/test_flood_bounds.py::": "a sandbox job that floods every hidden test",
    "tests/portal/test_hub.py::": "its setup starts a real JupyterHub and its proxy, once a module",
    "tests/checks/test_forging.py::": "a forged notebook and its honest twin, both graded in-process (patched builtins "
    "slow every check)",
    "tests/orchestration/test_fixed_costs.py::": "the grader's command in a fresh subprocess, its imports counted",
    "tests/portal/test_grading_processes.py::": "the portal's grading processes, notebooks graded in the sandbox",
}
BUILD_FIXTURE = "book_build"
# Tests using these wait for the build (run_order.AFTER_BUILD): its pages, its PDF, its execution of the chapters.
READS_BUILD = {"site", "book_pdf", "book_executed"}
# Fixtures made once per worker that several of the book's tests share: their tests are one group (one per parameter
# of the fixture where SHARED_BY_PARAMETER: the desktop crawl's shares); the chapters' runs share the reader's
# environment, the explorable figures' tests and test_browser's readers of a page or three the tab each loads its
# pages in.
AFTER_BUILD_SHARED = {"book_pdf": "pdf", "desktop_pages": "desktop", "book_executed": "chapters",
                      "book_only": "explorables", "tab": "tab"}
SHARED_BY_PARAMETER = {"desktop_pages"}
# The Makefile names each of its test runs (POSENC_RUN=test, test-fast): the run's record, its wall
# time, counts and load, is kept where `make bench-waits` reads it (devtools/bench_waits.py) rather than rerun it.
RUN_NAME = "POSENC_RUN"
RUN_RECORDS = ROOT / ".pytest_cache" / "posenc-runs"
MACHINE_RUN_RECORDS = precompile.USER_CACHE / "posenc-runs"     # the last runs of any checkout on this machine
STARTED = pytest.StashKey[tuple]()
DURATIONS = "posenc-durations"
MEMORY_FOLDER = "/dev/shm"                  # Linux's in-memory filesystem (tmpfs)
MEMORY_FREE_BYTES = 2 * 2**30


# Every test this process collected (before -m deselects any): tests/architecture/test_tests_layout.py checks that each
# entry of TIER_FILE still names one
COLLECTED: set[str] = set()


def pytest_collection_modifyitems(config, items):
    COLLECTED.update(run_order.without_group(item.nodeid) for item in items)
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, marker in BY_FIXTURE.items():
            if fixture in fixtures:
                item.add_marker(getattr(pytest.mark, marker))
        if is_slow(item.nodeid):
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith(tuple(DEAR_TESTS)):
            item.add_marker(pytest.mark.dear)
        group = group_of(item.nodeid, fixtures)
        item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False):         # a pytest-xdist worker under --dist loadgroup
            _in_group(item, group)


def group_of(nodeid: str, fixtures) -> str:
    """The tests that check the book's build, one group; a test that reads it, the group of the fixture it shares
    with others (the printed PDF; the pages crawled at desktop width, a group a share of them), else its own (each
    parameter apart: the phone-width crawl's shares); any other test, its file's (one on PostgreSQL too: a group of
    the PostgreSQL tests made their files' module fixtures again on its worker, a graded class each).
    (No bracket in a group's name: xdist reads the group after the last '@' only when no ']' follows it.)"""
    if BUILD_FIXTURE in fixtures:
        if not READS_BUILD & set(fixtures):
            return run_order.BUILD_GROUP
        function, _, parameters = nodeid.rsplit("::", 1)[-1].partition("[")
        shared = [name + (f" {parameters.rstrip(']')}" if fixture in SHARED_BY_PARAMETER else "")
                  for fixture, name in AFTER_BUILD_SHARED.items() if fixture in fixtures]
        return run_order.AFTER_BUILD + (shared[0] if shared else f"{function} {parameters.rstrip(']')}".rstrip())
    return nodeid.split("::", 1)[0]


def pytest_ignore_collect(collection_path, config):
    """A folder of slow tests only (SLOW_FOLDERS) is not even imported by a run whose -m leaves out every slow test
    (`make test-fast`): importing its modules cost each worker ~1.3 of its ~4.5 CPU-s of collection. Nor is a test
    file marked whole (its module's pytestmark, or SLOW_TESTS naming the file) with a marker the run leaves out."""
    if collection_path.name in SLOW_FOLDERS and collection_path.is_dir() and leaves_out_slow(config):
        return True
    if collection_path.name.startswith("test_") and collection_path.suffix == ".py" and collection_path.is_file():
        marker = whole_file_marker(collection_path)
        if marker is not None and leaves_out(config, marker):
            return True
    return None


MODULE_MARK = re.compile(r"^pytestmark = pytest\.mark\.(\w+)\b(?!\s*[\[(,.])", re.M)    # one marker, no arguments


def whole_file_marker(path: pathlib.Path) -> str | None:
    """The one marker every test of the test file carries by its source alone: its module's pytestmark, or slow for a
    file SLOW_TESTS names whole."""
    resolved = path.resolve()
    if resolved.is_relative_to(ROOT) and is_slow(resolved.relative_to(ROOT).as_posix() + "::"):
        return "slow"
    try:
        found = MODULE_MARK.search(path.read_text())
    except (OSError, UnicodeDecodeError):
        return None
    return found.group(1) if found else None


def leaves_out_slow(config) -> bool:
    return leaves_out(config, "slow")


def leaves_out(config, marker: str) -> bool:
    """The run's -m expression is false for a test with this marker, whatever other markers it has. Only the markers
    the expression names can change its value: every marker registered (pytest's and its plugins' too, 16) made
    2^15 evaluations, 0.12 CPU-s a call, paid twice by the main process before the workers start and once by each."""
    from _pytest.mark.expression import Expression
    if not config.option.markexpr:
        return False
    expression = Expression.compile(config.option.markexpr)
    named = expression.idents() if hasattr(expression, "idents") else \
        {line.split(":", 1)[0].strip() for line in config.getini("markers")}       # a pytest without idents()
    others = sorted(name for name in named if name != marker)
    return not any(expression.evaluate(marked_only({marker, *marked}))
                   for count in range(len(others) + 1) for marked in itertools.combinations(others, count))


def marked_only(markers: set[str]):
    """An expression's matcher for a test marked with these markers (without arguments) and no other."""
    return lambda name, /, **kwargs: not kwargs and name in markers


def is_slow(nodeid: str) -> bool:
    path = nodeid.split("::", 1)[0]
    return bool(SLOW_FOLDERS & set(pathlib.PurePath(path).parts)) or nodeid.startswith(tuple(SLOW_TESTS))


HEAVY_MARK = re.compile(r"pytest\.mark\.(slow|hub|browser|postgres)\b")


@functools.cache
def marks_heavy(path: str) -> bool:
    """The test file marks a test (or itself) slow, hub, browser or PostgreSQL in its source."""
    file = ROOT / path
    return file.is_file() and bool(HEAVY_MARK.search(file.read_text()))


def is_heavy(nodeid: str) -> bool:
    """What the scheduler guesses takes long in a run that has no record yet (the main process sees node ids, not
    markers): a slow test, or one in a file that marks some of its tests slow, hub, browser or PostgreSQL."""
    return is_slow(nodeid) or marks_heavy(nodeid.split("::", 1)[0])


def why_slow(nodeid: str) -> str | None:
    """WHY_SLOW's reason, else the reason the test is left to `make test` (TIER_FILE): a test said to be dear there is
    not 'none given' here."""
    for reasons in (WHY_SLOW, SLOW_TESTS, DEAR_TESTS):
        found = next((why for prefix, why in reasons.items() if nodeid.startswith(prefix)), None)
        if found is not None:
            return found
    return None


@pytest.hookimpl(optionalhook=True)             # xdist's hook: unknown to a run with -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    """Under --dist loadgroup, groups go out longest first, the book's readers after its build (run_order.py)."""
    if config.getvalue("dist") == "loadgroup":
        return run_order.make_scheduler(config, log, RUN_RECORDS, is_heavy, MACHINE_RUN_RECORDS)
    return None


def _in_group(item, group: str) -> None:
    """The '@<group>' suffix of the node id by which xdist's loadgroup scheduler keeps a group on one worker.
    pytest-xdist 3.8 writes it to `_nodeid`, which pytest 9.2 no longer reads (its node ids are structured), so every
    test was scheduled alone: each worker built the book and remade module fixtures (pytest-xdist#1386). Written
    here where pytest reads the id; with a pytest whose id xdist can still suffix, xdist's own hook does it."""
    try:
        from _pytest.nodes import coerce_node_id
    except ImportError:
        return
    if "@" not in item.nodeid.rpartition("]")[2]:
        item._id = coerce_node_id(f"{item.nodeid}@{group}")


def pytest_sessionstart(session):
    session.config.stash[STARTED] = (time.time(), time.perf_counter(), os.getloadavg()[0])
    precompile_for_workers(session.config)


def precompile_for_workers(config) -> int:
    """In the main process of a run on xdist's workers, before they start (xdist starts them at its own, last,
    sessionstart): the bytecode each worker would make at once in a fresh checkout, made once (precompile.py)."""
    workers = getattr(config.option, "numprocesses", None)
    if hasattr(config, "workerinput") or not isinstance(workers, int) or not config.pluginmanager.has_plugin(
            "dsession"):
        return 0
    skip = SLOW_FOLDERS if leaves_out_slow(config) else set()
    named = [config.invocation_params.dir / arg.split("::", 1)[0] for arg in config.args]
    tests = precompile.test_modules(config, [path for path in named if path.is_dir()], skip)
    tests += [path for path in named if path.is_file() and path.suffix == ".py"]
    package = importlib.util.find_spec("posenc_autograder")
    modules = sorted(ROOT.joinpath("tests", "support").glob("*.py"))
    if package is not None and package.origin:
        modules += sorted(pathlib.Path(package.origin).parent.rglob("*.py"))
    return precompile.precompile(config, tests, modules, workers, seed=precompile.SEED)


def pytest_configure(config):
    """The process that runs the session (not an xdist worker) times each test as its reports reach it, and puts the
    run's temporary folders in memory when it may (temporary_folder_in_memory)."""
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(run_order.Durations(), DURATIONS)
        temporary_folder_in_memory(config)


def temporary_folder_in_memory(config, memory: str = MEMORY_FOLDER) -> bool:
    """TMPDIR (hence tmp_path and every tempfile, in the workers and whatever they start) on the machine's in-memory
    filesystem, for a run that leaves out the slow tests and names no folder of its own (TMPDIR, --basetemp): the
    tests' SQLite databases sync to disk at every commit (test_access alone made 612 syncs) and their courses are
    copied and removed, waits no test here is about. A run with the slow tests keeps the disk: the sandbox's attack
    notebooks look for the course's files under /tmp from inside the sandbox. Not a folder that refuses programs
    (noexec) or has less than MEMORY_FREE_BYTES free."""
    if "TMPDIR" in os.environ or config.option.basetemp or not leaves_out_slow(config):
        return False
    try:
        found = os.statvfs(memory)
    except OSError:
        return False
    if found.f_flag & (os.ST_NOEXEC | os.ST_RDONLY) or found.f_bavail * found.f_frsize < MEMORY_FREE_BYTES:
        return False
    os.environ["TMPDIR"] = memory
    tempfile.tempdir = None                   # worked out again from TMPDIR at its next use
    return True


def pytest_sessionfinish(session, exitstatus):
    """The named run's record, written by the process that ran the session (not by an xdist worker): wall time,
    counts, load, its slowest tests and each group's seconds."""
    name, config = os.environ.get(RUN_NAME), session.config
    if not name or hasattr(config, "workerinput") or STARTED not in config.stash:
        return
    started, clock, load = config.stash[STARTED]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    counts = {kind: len(reporter.stats.get(kind, [])) for kind in ("passed", "failed", "error", "skipped")} \
        if reporter else {}
    record = {"run": name, "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
              "seconds": round(time.perf_counter() - clock, 1), "exit_status": int(exitstatus),
              "collected": session.testscollected, **counts, "cpus": os.cpu_count(),
              "load_at_start": round(load, 1), "load_at_end": round(os.getloadavg()[0], 1),
              "workers": getattr(config.option, "numprocesses", None) or 0}
    durations = config.pluginmanager.get_plugin(DURATIONS)
    if durations is not None:     # the slowest tests, for the developer; each group's seconds, for the next run's order
        slowest = [test | {"why": why_slow(test["test"])} for test in durations.slowest()]
        record |= {"slowest": slowest, "groups": durations.groups(), "timeline": durations.timeline(started)}
    text = json.dumps(record, indent=1) + "\n"
    RUN_RECORDS.mkdir(parents=True, exist_ok=True)
    (RUN_RECORDS / f"{name}.json").write_text(text)
    with contextlib.suppress(OSError):      # the machine's copy only orders a new checkout's first run
        MACHINE_RUN_RECORDS.mkdir(parents=True, exist_ok=True)
        (MACHINE_RUN_RECORDS / f"{name}.json").write_text(text)


NBVAL = "nbval"


def pytest_addoption(parser, pluginmanager):
    """make test-fast runs no notebook and goes without nbval (-p no:nbval: its import of Jupyter's kernel client and
    coverage, ~0.2 CPU-s in each of its processes before the first test); pytest.ini's --nbval-lax, nbval's option,
    is then still understood, and does nothing."""
    if pluginmanager.is_blocked(NBVAL):
        parser.addoption("--nbval-lax", action="store_true", help="nbval's option: nothing here, nbval not loaded")
