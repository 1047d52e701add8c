"""The order in which `make test` and `make test-fast` hand groups of tests to their workers, and the record of
what each group took that decides it.

pytest-xdist's loadgroup scheduler hands out groups in order of their number of tests. Time is not spread that way:
a few groups hold most of it (the book's build, then its browser crawls; the mutants; the catalogue's nbgrader
validate), and one of them handed out last keeps one worker busy minutes after the other is done. So a group goes
out by the seconds it took in the last run that ran it (the run records in pytest's cache; in a new checkout, the
machine's, kept in the user's cache), longest first; a group never timed by a guess from what it is (a slow,
browser, hub, book or PostgreSQL group: a minute; else a tenth of a second a test). The book's build (BUILD_GROUP)
goes first, and the groups that read the built book (AFTER_BUILD...) wait until it is done, so that the other worker
grades notebooks meanwhile rather than wait on the build's lock (tests/conftest.py builds the book once per run,
whichever worker asks first).
"""
from __future__ import annotations

import json
import pathlib
from typing import Callable

BUILD_GROUP = "book"
AFTER_BUILD = "book:"            # prefix of the groups that read the built book (site, Chromium, the PDF)
HEAVY_GROUPS = ("book",)
HEAVY_GUESS = 60.0               # seconds guessed for a heavy group never timed
LIGHT_GUESS = 0.1                # seconds a test guessed for any other group never timed
SLOWEST = 20                     # tests the run's record lists


def group_of(nodeid: str) -> str:
    """The group xdist's loadgroup keeps on one worker: the '@<group>' suffix of the node id, else its file."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.rsplit("@", 1)[1]
    return nodeid.split("::", 1)[0]


def without_group(nodeid: str) -> str:
    return nodeid[:nodeid.rfind("@")] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid


class Durations:
    """Each test's seconds in this run (setup, call and teardown), as the reports reach the main process; and when
    each group ran on which worker (xdist's node of the report), for the run's timeline."""

    def __init__(self) -> None:
        self.tests: dict[str, dict[str, float]] = {}
        self.spans: dict[tuple[str, str], list[float]] = {}         # (worker, group) -> [first start, last stop]

    def pytest_runtest_logreport(self, report) -> None:
        self.tests.setdefault(report.nodeid, {})[report.when] = report.duration
        node = getattr(report, "node", None)
        worker = node.gateway.id if node is not None else "main"
        if hasattr(report, "start") and hasattr(report, "stop"):
            span = self.spans.setdefault((worker, group_of(report.nodeid)), [report.start, report.stop])
            span[:] = [min(span[0], report.start), max(span[1], report.stop)]

    def timeline(self, started: float) -> dict[str, list]:
        """worker -> [[group, its first test's start, its last test's end], ...] in seconds from `started` (the
        session's start, epoch seconds), in the order they ran: which worker waited, and when."""
        lanes: dict[str, list] = {}
        for (worker, group), (start, stop) in sorted(self.spans.items(), key=lambda item: item[1][0]):
            lanes.setdefault(worker, []).append([group, round(start - started, 1), round(stop - started, 1)])
        return dict(sorted(lanes.items()))

    def groups(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for nodeid, phases in self.tests.items():
            totals[group_of(nodeid)] = totals.get(group_of(nodeid), 0.0) + sum(phases.values())
        return {group: round(seconds, 2) for group, seconds in sorted(totals.items())}

    def slowest(self, count: int = SLOWEST) -> list[dict]:
        ranked = sorted(self.tests.items(), key=lambda item: -sum(item[1].values()))[:count]
        return [{"test": without_group(nodeid), "seconds": round(sum(phases.values()), 1),
                 "setup": round(phases.get("setup", 0.0), 1)} for nodeid, phases in ranked]


def last_seconds(records: pathlib.Path) -> dict[str, float]:
    """group -> its seconds in the newest run record that timed it."""
    dated = []
    for path in records.glob("*.json"):
        try:
            dated.append((path.stat().st_mtime, json.loads(path.read_text()).get("groups", {})))
        except (OSError, ValueError):
            continue                              # a record cut short by a stopped run: no figure from it
    seconds: dict[str, float] = {}
    for _, groups in sorted(dated, key=lambda pair: pair[0]):
        seconds.update({str(group): float(value) for group, value in groups.items()})
    return seconds


def known_seconds(records: pathlib.Path, machine: pathlib.Path | None = None) -> dict[str, float]:
    """group -> its seconds by this checkout's run records, else by the machine's (the last runs of any checkout,
    kept in the user's cache): a new clone's first run is ordered as its runs after it are, not by guesses."""
    return (last_seconds(machine) if machine is not None else {}) | last_seconds(records)


def make_scheduler(config, log, records: pathlib.Path, is_heavy: Callable[[str], bool],
                   machine: pathlib.Path | None = None):
    """xdist's loadgroup scheduler, handing out the longest group that may start (its import deferred: the main
    process of a run without xdist never needs it)."""
    from xdist.scheduler import LoadGroupScheduling

    seconds = known_seconds(records, machine)

    class LongestFirst(LoadGroupScheduling):
        def _expected(self, group: str, tests: dict) -> float:
            if group in seconds:
                return seconds[group]
            heavy = group.startswith(HEAVY_GROUPS) or any(is_heavy(nodeid) for nodeid in tests)
            return HEAVY_GUESS if heavy else LIGHT_GUESS * len(tests)

        def _built(self) -> bool:
            """The build group has run to its end (it is no longer waiting, nor on a worker with tests left)."""
            if BUILD_GROUP in self.workqueue:
                return False
            return all(done for work in self.assigned_work.values() for done in work.get(BUILD_GROUP, {}).values())

        def _rank(self, group: str) -> tuple:
            waits = group.startswith(AFTER_BUILD) and not self._built()
            return (waits, group != BUILD_GROUP, -self._expected(group, self.workqueue[group]))

        def _reschedule(self, node) -> None:
            """A worker gets its next group when it starts the last test it holds (xdist: when two are left, so a
            worker holding a 3-minute crawl could be sent another in reserve while the other worker waits idle). A
            worker runs a test once it holds the next one, so it is never left with one test and nothing more."""
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
            elif self._pending_of(self.assigned_work[node]) <= 1:
                self._assign_work_unit(node)

        def _assign_work_unit(self, node) -> None:
            group = min(self.workqueue, key=self._rank)
            work_unit = self.workqueue.pop(group)
            self.assigned_work.setdefault(node, {})[group] = work_unit
            collection = self.registered_collections[node]
            node.send_runtest_some([collection.index(nodeid) for nodeid, done in work_unit.items() if not done])

    return LongestFirst(config, log)
