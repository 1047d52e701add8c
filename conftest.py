"""Test markers, assigned by folder and by fixture: `make test-fast` runs everything that is none of them.

tests/end_to_end/ grades notebooks and runs nbgrader (slow), and so do SLOW_TESTS; a test that uses the built book,
Chromium or PostgreSQL is marked by its fixture (tests/book/'s source checks stay fast). Unit tests live in
tests/<stage>/, mirroring the grader package's folders. `make test` runs them all on two workers (pytest-xdist, --dist
loadgroup): the tests that use the built book are one group, so it is built once into one _build; the ones
that use PostgreSQL another; every other file runs whole on one worker, so its module fixtures are made once, and
a solution notebook's cells (nbval, in the same run) share one kernel on one worker, in order.
"""
import json
import os
import pathlib
import time

import pytest

BY_FIXTURE = {"book_build": "book", "browser": "browser", "browser_with_scrollbars": "browser",
              "postgres_url": "postgres"}
SLOW_FOLDERS = {"end_to_end"}
# Tests outside end_to_end/ that run a whole stage for real (a sandbox job, nbgrader, a subprocess of the grader, a
# randomised sweep): 11-56 s each on the loaded 2-core machine, the largest part of `make test-fast`, which keeps the
# quick unit tests of every stage. `make test` runs them. A node id, or its prefix.
SLOW_TESTS = {
    "tests/grading/test_flood_bounds.py::test_the_trusted_side_stays_under_its_bound_when_a_job_floods_every_test":
        "a sandbox job that floods every test",
    "tests/grading/test_trusted_costs.py::test_the_shell_tokenises_only_cells_ipython_would_change": "IPython's shell",
    "tests/orchestration/test_fixed_costs.py::test_the_command_with_nothing_to_grade_imports_neither_nbgrader_nor_"
    "matplotlib": "the grader's command in a subprocess",
    "tests/portal/test_robustness.py::test_the_scan_agrees_with_a_plain_one_across_chunk_borders": "a random sweep",
    "tests/records/test_new_gradebook.py::test_a_new_gradebook_is_nbgraders_own_made_without_a_subprocess":
        "nbgrader's own gradebook made again",
    "tests/records/test_stopped_run.py::": "make grade stopped and run again",
    "tests/records/test_course_database.py::test_another_database_is_refused_with_the_fix": "the grader's commands",
}
SHARED_BY_GROUP = {"book_build": "book", "postgres_url": "postgres"}   # session fixtures one worker must own
# The Makefile names each of its test runs (POSENC_RUN=test, test-fast): the run's record, its wall
# time, counts and load, is kept where `make bench-waits` reads it (devtools/bench_waits.py) rather than rerun it.
RUN_NAME = "POSENC_RUN"
RUN_RECORDS = pathlib.Path(__file__).resolve().parent / ".pytest_cache" / "posenc-runs"
STARTED = pytest.StashKey[tuple]()


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, marker in BY_FIXTURE.items():
            if fixture in fixtures:
                item.add_marker(getattr(pytest.mark, marker))
        if SLOW_FOLDERS & set(item.path.parts) or item.nodeid.startswith(tuple(SLOW_TESTS)):
            item.add_marker(pytest.mark.slow)
        shared = [group for fixture, group in SHARED_BY_GROUP.items() if fixture in fixtures]
        group = shared[0] if shared else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False):         # a pytest-xdist worker under --dist loadgroup
            _in_group(item, group)


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


def pytest_sessionfinish(session, exitstatus):
    """The named run's record, written by the process that ran the session (not by an xdist worker)."""
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
    RUN_RECORDS.mkdir(parents=True, exist_ok=True)
    (RUN_RECORDS / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
