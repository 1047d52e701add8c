"""A benchmark stopped by a signal (kill, a CI timeout) leaves nothing running and nothing in /tmp: the portal server
it started, that server's grading processes and its scratch course go with it."""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow


def children() -> dict[int, int]:
    """Every process's parent, by pid."""
    parents = {}
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    return parents


def descendants(pid: int) -> set[int]:
    parents = children()
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def command_line(pid: int) -> list[str]:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def portal_course(pids: set[int]) -> pathlib.Path | None:
    """The scratch course of the portal server among these processes, once it runs."""
    for pid in pids:
        line = command_line(pid)
        if "portal" in line and "--course" in line:
            return pathlib.Path(line[line.index("--course") + 1])
    return None


def test_a_terminated_portal_bench_stops_its_server_and_removes_its_scratch_course():
    bench = subprocess.Popen([sys.executable, "-m", "posenc_autograder", "bench-portal", "--students", "3",
                              "--spread", "60", "--database", "sqlite", "--no-write"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, course = time.monotonic() + 180, None
        while course is None and time.monotonic() < deadline and bench.poll() is None:
            time.sleep(0.5)
            course = portal_course(descendants(bench.pid))
        assert course is not None, "the bench never started its portal"
        time.sleep(3)                                   # its grading processes start with the server
        started = descendants(bench.pid)
        bench.send_signal(signal.SIGTERM)
        status = bench.wait(timeout=60)
    finally:
        if bench.poll() is None:
            bench.kill()
    time.sleep(1)
    alive = {pid for pid in started if os.path.exists(f"/proc/{pid}") and command_line(pid) != [""]}
    assert not alive, [" ".join(command_line(pid)) for pid in alive]
    assert not course.parent.exists(), f"{course.parent} outlived the bench"
    assert status == 128 + signal.SIGTERM          # as a shell reports a command stopped by SIGTERM


LINGERING_CHILD = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
subprocess.Popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                  "time.sleep(60)"])
time.sleep(60)
"""


def test_stopping_the_portal_waits_for_what_it_started(tmp_path):
    """A grading process still finishing its job when the portal has gone: stop() returns only once it has ended
    (here it ignores SIGTERM, so it is killed after the wait)."""
    from posenc_autograder.devtools.portal_load import stop
    server = subprocess.Popen([sys.executable, "-c", LINGERING_CHILD])
    deadline = time.monotonic() + 30
    while not descendants(server.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    [child] = descendants(server.pid)
    stop(server, seconds=1)
    assert command_line(child) == [""] or not os.path.exists(f"/proc/{child}"), "stop() left the child running"
