"""`make portal` grades in processes of its own (portal/grading_processes.py): the trusted side's CPU work never
shares the web process's interpreter; what they do reaches the web process; one that dies costs only its job's
run; the gradebook's one writer holds across processes. And a busy refusal says when to upload again."""
import fcntl
import os
import subprocess
import sys
import time

import httpx
import psutil
import pytest
import timed_sandbox
from dying_sandbox import DiesRightAfterItsFirstClaim, graded_elsewhere_or_dies, graded_saying_what_is_frozen
from fixture_submissions import ASSIGNMENT
from test_robustness import wait_until_settled

from conftest import client_for, notebook_bytes, upload
from posenc_autograder.devtools.portal_load import retry_after
from posenc_autograder.portal import grading_processes, worker
from posenc_autograder.portal.routes import create_app
from posenc_autograder.portal.service import Portal
from posenc_autograder.portal.web import students

WEB_PROCESS = os.getpid()


@pytest.fixture
def fast_supervision(monkeypatch):
    monkeypatch.setattr(grading_processes, "SUPERVISE_SECONDS", 0.05)


def test_grading_processes_grade_report_and_replace_a_dead_one(course, fast_supervision):
    portal = Portal(course, jobs=1, worker_options={"execute": graded_elsewhere_or_dies}, register=False,
                    processes=True)
    changed, stored = [], []
    portal.worker.status_changed = changed.append
    portal.worker.counting_stored = lambda student, assignment: stored.append((student, assignment))
    alice = client_for(create_app(portal, start_worker=False), portal, "alice")
    portal.set_policy(ASSIGNMENT, {"max_queued": 0})
    for marker in ("dies", "honest"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    portal.start()
    try:
        found = wait_until_settled(portal, 2, seconds=120)
    finally:
        portal.stop()
    assert found[1] == ("error", worker.MAX_RUNS + 1)      # its process died on each run, replaced; given up on claim
    assert found[2] == ("graded", 1)
    assert portal.grading.restarts == worker.MAX_RUNS
    executed = (course.root / "autograder" / "uploads" / "alice" / ASSIGNMENT / "attempt-2.executed.ipynb").read_text()
    graded_in = int(executed.split("# honest, graded in ", 1)[1].split('"', 1)[0].split("\\n", 1)[0])
    assert graded_in != WEB_PROCESS
    assert {1, 2} <= set(changed)                           # each job's new status reached the web process
    assert ("alice", ASSIGNMENT) in stored                  # and the store of the attempt that counts
    assert "Attempt 2" in alice.get("/attempts/2").text


def test_a_grading_process_starts_its_warm_sandbox_before_the_first_upload(course):
    """The first student after a start waits for their own grading only, not for the zygote's start as well."""
    # As a test process that graded earlier keeps its own zygote (CI ran this test after such a test on its worker).
    own = subprocess.Popen([sys.executable, "-I", "-c", "import time; time.sleep(120)"])
    portal = Portal(course, jobs=1, worker_options={}, register=False, processes=True)     # the real sandbox
    portal.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not zygotes():
            time.sleep(0.2)
        started = zygotes()
    finally:
        portal.stop()
        own.kill()
        own.wait()
    assert len(started) == 1                                  # its one zygote, with nothing uploaded yet


def graded_alone(course, portal) -> str:
    """Alice's honest notebook graded by the portal's processes: the executed notebook's text."""
    alice = client_for(create_app(portal, start_worker=False), portal, "alice")
    assert upload(alice, notebook_bytes("honest")).status_code == 303
    portal.start()
    try:
        assert wait_until_settled(portal, 1, seconds=120)[1] == ("graded", 1)
    finally:
        portal.stop()
    return (course.root / "autograder" / "uploads" / "alice" / ASSIGNMENT / "attempt-1.executed.ipynb").read_text()


def test_a_grading_process_keeps_what_it_holds_once_warmed_up_out_of_the_collector(course):
    """Its modules and tables are not walked again by every full collection of its life."""
    portal = Portal(course, jobs=1, worker_options={"execute": graded_saying_what_is_frozen}, register=False,
                    processes=True)
    executed = graded_alone(course, portal)
    frozen = int(executed.split("# honest, frozen ", 1)[1].split('"', 1)[0].split("\\n", 1)[0])
    assert frozen > 10_000                                  # old code: 0


def zygotes() -> list[psutil.Process]:
    """The warm sandbox's zygotes (`python -I -c <its program>`) the portal's grading processes started: not the
    one this test process may keep from an earlier test that graded in it (one zygote per process)."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            if process.cmdline()[1:3] == ["-I", "-c"] and process.ppid() != WEB_PROCESS:
                found.append(process)
        except psutil.Error:                     # ended meanwhile
            pass
    return found


def test_a_process_dead_between_its_claim_and_its_first_word_loses_no_job(course, fast_supervision, tmp_path):
    portal = Portal(course, jobs=1, worker_options={"execute": DiesRightAfterItsFirstClaim(tmp_path / "died")},
                    register=False, processes=True)
    alice = client_for(create_app(portal, start_worker=False), portal, "alice")
    assert upload(alice, notebook_bytes("honest")).status_code == 303
    portal.start()
    try:
        # Two grading processes' starts and a job: 30 s at load 26 on 2 cores, past 40 s at 28 (the other waits: 120)
        found = wait_until_settled(portal, 1, seconds=120)
    finally:
        portal.stop()
    assert (tmp_path / "died").exists()                     # its process ended with the job claimed
    assert found[1] == ("graded", 2)                        # back in the queue with no restart, graded on run 2
    assert portal.grading.restarts == 1


def test_the_gradebooks_one_writer_holds_across_processes(course):
    lock = worker.StoreLock(course)
    with lock, open(lock.path, "ab") as other:          # another open file: as another process holds the lock
        with pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(lock.path, "ab") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)   # free again once let go


def test_a_busy_refusal_says_when_to_upload_again_and_uses_no_attempt(app, portal, monkeypatch):
    monkeypatch.setattr(students, "UPLOAD_CHECKS", 0)     # no checker ever free
    monkeypatch.setattr(students, "UPLOAD_WAIT_SECONDS", 0.05)
    alice = client_for(app, portal, "alice")
    answer = upload(alice, notebook_bytes("busy"))
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == str(students.BUSY_RETRY_SECONDS)
    assert f"upload again in {students.BUSY_RETRY_SECONDS} s" in answer.text
    assert retry_after(httpx.Response(503, headers=dict(answer.headers))) == students.BUSY_RETRY_SECONDS
    assert portal.overview("alice")[0]["attempts"] == []


def test_the_load_test_sends_again_only_what_was_refused_with_a_wait():
    assert retry_after(httpx.Response(429, headers={"retry-after": "30"})) == 30
    assert retry_after(httpx.Response(403)) is None                     # refused for good: not sent again
    assert retry_after(httpx.Response(303, headers={"location": "/attempts/1"})) is None


ORPHANED_PORTAL = """
import pathlib, sys, time
from posenc_autograder.course import Course
from posenc_autograder.portal.service import Portal
portal = Portal(Course(pathlib.Path(sys.argv[1])), jobs=2, register=False, processes=True)
portal.start()
print(" ".join(str(process.pid) for process, _ in portal.grading.processes.values()), flush=True)
time.sleep(600)
"""


def test_grading_processes_end_when_their_web_process_is_killed(course):
    web = subprocess.Popen([sys.executable, "-c", ORPHANED_PORTAL, str(course.root)], stdout=subprocess.PIPE,
                           text=True)
    try:
        graders = [psutil.Process(int(pid)) for pid in web.stdout.readline().split()]
        assert len(graders) == 2 and all(g.is_running() for g in graders)
    finally:
        web.kill()                                        # no shutdown: as the OOM killer would
        web.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(alive(g) for g in graders):
        time.sleep(0.1)
    assert not any(alive(g) for g in graders)


def alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_large_file_waits_for_its_own_turn_never_the_usual_notebooks(app, portal, monkeypatch):
    usual, large = notebook_bytes("usual"), notebook_bytes("large " + "x" * 10_000)
    monkeypatch.setattr(students, "LARGE_UPLOAD_BYTES", len(usual) + 1000)
    monkeypatch.setattr(students, "LARGE_UPLOAD_CHECKS", 0)       # the large files' turn never comes
    monkeypatch.setattr(students, "UPLOAD_WAIT_SECONDS", 0.05)
    alice, bob = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    assert upload(alice, large).status_code == 503                 # told when to upload again, no attempt used
    assert upload(bob, usual).status_code == 303                   # the usual notebook is checked meanwhile



def test_a_grading_process_is_started_without_importing_the_grading_side_again(course):
    """Each grading process (and each one replacing a dead one) is forked from a server that imported the grading side
    once: it runs its first job having used less CPU than that import costs on its own (a spawned interpreter imported
    it all for each process, 20 s at load 13 on 2 cores, before a dead one's replacement graded anything)."""
    imported = subprocess.run([sys.executable, "-c", "import time, posenc_autograder.portal.grading_processes; "
                               "print(time.process_time())"], capture_output=True, text=True, check=True)
    portal = Portal(course, jobs=1, worker_options={"execute": timed_sandbox.graded_with_its_cpu}, register=False,
                    processes=True)
    executed = graded_alone(course, portal)
    used = timed_sandbox.cpu_of(executed)
    assert used < float(imported.stdout) / 2, (used, imported.stdout)   # old code: the import and then some
