"""Uploads bounded before parsing, the same file twice as one attempt, the instructor's rules on the server, and
a queue that survives a restart with jobs queued and running: none lost, none graded twice."""
import datetime as dt
import json
import time

import pytest
from fixture_submissions import ASSIGNMENT
from hostile_notebooks import HOSTILE_FILES
from sqlalchemy import select
from test_access import attempts_in

from conftest import CountingExecute, client_for, new_portal, notebook_bytes, upload
from posenc_autograder.portal import queue, uploads
from posenc_autograder.portal.app import refuse_root
from posenc_autograder.portal.models import Attempt, utcnow
from posenc_autograder.portal.service import PortalBusy
from posenc_autograder.portal.web import middleware

NOT_GRADABLE = ["deeply_nested_json", "hundred_thousand_cells", "cells_not_a_list", "not_a_notebook_at_all",
                "old_nbformat", "binary_garbage", "nbgrader_metadata_is_a_string"]


@pytest.fixture
def alice(app, portal):
    return client_for(app, portal, "alice")


def hostile_bytes(name, tmp_path) -> bytes:
    release = json.loads(notebook_bytes())
    HOSTILE_FILES[name](tmp_path / name, release, tmp_path)
    return (tmp_path / name).read_bytes()


def test_too_big_is_refused_before_the_body_is_read(alice, portal):
    huge = b"x" * (middleware.UPLOAD_BYTES + 1)
    assert upload(alice, huge).status_code == 413                           # by its Content-Length
    streamed = (huge[i:i + 2**20] for i in range(0, len(huge), 2**20))       # chunked: no length announced
    answer = alice.post(f"/assignments/{ASSIGNMENT}/upload", content=streamed,
                        headers={"content-type": "multipart/form-data; boundary=x"})
    assert answer.status_code == 413
    assert alice.post("/sign-out", content=b"x" * (middleware.FORM_BYTES + 1)).status_code == 413
    assert attempts_in(portal) == 0


@pytest.mark.parametrize("name", NOT_GRADABLE)
def test_hostile_files_are_refused_with_a_reason_and_are_no_attempt(name, alice, portal, tmp_path):
    data = hostile_bytes(name, tmp_path)
    started = time.monotonic()
    answer = upload(alice, data)
    if name == "nbgrader_metadata_is_a_string":          # a readable notebook: intake normalises it, it is graded
        assert answer.status_code == 303
        return
    assert answer.status_code == 400 and "Not accepted" in answer.text
    assert time.monotonic() - started < 10
    assert attempts_in(portal) == 0
    assert not list(uploads.folder(portal.course, "alice", ASSIGNMENT).glob("*.ipynb"))


def test_nesting_is_measured_before_parsing():
    deep = b"[" * 100_000 + b"]" * 100_000
    assert uploads.json_depth(deep) == 100_000
    assert uploads.json_depth(b'{"a": "[[[[[[", "b": [1, {"c": "]]"}]}') == 3      # brackets in strings do not count
    assert "nests JSON deeper" in uploads.problem(b'{"cells": ' + deep + b"}")
    assert "not a notebook" in uploads.problem(deep)                  # a notebook is an object: no scan needed


def test_same_file_twice_is_one_attempt(alice, portal):
    data = notebook_bytes("once")
    first, second = upload(alice, data), upload(alice, data)
    assert first.headers["location"] == "/attempts/1" and second.headers["location"] == "/attempts/1?again=1"
    assert attempts_in(portal) == 1
    assert "This file is the one you last uploaded, attempt 1" in alice.get(second.headers["location"]).text


def test_upload_is_on_disk_and_committed_before_the_answer(alice, portal):
    answer = upload(alice, notebook_bytes("durable"))
    with portal.sessions() as db:                        # another connection sees it at once
        attempt = db.get(Attempt, int(answer.headers["location"].rsplit("/", 1)[1]))
    assert attempt.status == "queued"
    assert uploads.path(portal.course, "alice", ASSIGNMENT, attempt.sha256).read_bytes() == notebook_bytes("durable")


def set_policy(portal, **values):
    portal.set_policy(ASSIGNMENT, values)


def test_attempt_limits_are_enforced_on_the_server(alice, portal):
    set_policy(portal, max_attempts=2, max_queued=0)          # the limits here, not the queue's
    assert upload(alice, notebook_bytes("1")).status_code == 303
    assert upload(alice, notebook_bytes("2")).status_code == 303
    refused = upload(alice, notebook_bytes("3"))
    assert refused.status_code == 403 and "all 2 attempts" in refused.text
    set_policy(portal, max_attempts=0, max_per_day=3)
    assert upload(alice, notebook_bytes("3")).status_code == 303
    assert "24 hours" in upload(alice, notebook_bytes("4")).text
    set_policy(portal, max_per_day=0, min_seconds_between=600)
    assert "600 s apart" in upload(alice, notebook_bytes("5")).text
    assert attempts_in(portal) == 3


def test_deadline_grace_late_marking_and_extension(alice, portal):
    now = utcnow()
    set_policy(portal, deadline=now - dt.timedelta(minutes=30), grace_minutes=10, late_days=0)
    assert "has passed" in upload(alice, notebook_bytes("after")).text
    set_policy(portal, late_days=1)
    late = upload(alice, notebook_bytes("late"))
    with portal.sessions() as db:
        assert db.get(Attempt, 1).late is True
    assert late.status_code == 303
    portal.set_extension("alice", ASSIGNMENT, now + dt.timedelta(days=2))
    upload(alice, notebook_bytes("extended"))
    with portal.sessions() as db:
        assert db.get(Attempt, 2).late is False
    set_policy(portal, opens_at=now + dt.timedelta(days=1))
    assert "open at" in upload(alice, notebook_bytes("early")).text


def test_feedback_before_the_deadline_as_the_policy_says(alice, portal):
    set_policy(portal, deadline=utcnow() + dt.timedelta(days=1), feedback_before="tests")
    upload(alice, notebook_bytes("fb"))
    portal.worker.run_until_idle()
    page = alice.get("/attempts/1/feedback").text
    assert "diagnosis is shown after the deadline" in page and "not run" not in page
    set_policy(portal, feedback_before="none")
    assert "after the deadline" in alice.get("/attempts/1/feedback").text
    assert json.loads(alice.get("/attempts/1/status.json").text)["score"] is None
    set_policy(portal, deadline=utcnow() - dt.timedelta(minutes=1), late_days=1)
    assert "not run" in alice.get("/attempts/1/feedback").text            # past the deadline: everything


def test_restart_with_jobs_queued_and_running_loses_none_and_grades_none_twice(course, app, portal):
    alice = client_for(app, portal, "alice")
    set_policy(portal, max_queued=0)                      # four waiting at once
    for marker in ("a", "b", "c", "d"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    first_run = portal.worker.execute
    portal.worker.grade(queue_claim(portal))              # attempt 1 graded before the crash
    queue_claim(portal)                                    # attempt 2 was running when the process died
    assert len(first_run.runs) == 1
    again = CountingExecute()
    restarted = new_portal(course, again, jobs=2)          # a new process on the same database and files
    restarted.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and queue_counts(restarted).get("graded", 0) < 4:
            time.sleep(0.05)
    finally:
        restarted.stop()
    assert queue_counts(restarted) == {"graded": 4}
    markers = {"# a", "# b", "# c", "# d"}
    graded_by = [next(text for c in json.loads(nb)["cells"] if (text := "".join(c["source"])) in markers)
                 for _, nb in first_run.runs + again.runs]
    assert sorted(graded_by) == ["# a", "# b", "# c", "# d"]                 # each exactly once
    with restarted.sessions() as db:
        counting = db.execute(select(Attempt).where(Attempt.promoted.is_(True))).scalars().all()
    assert len(counting) == 1


def queue_claim(portal) -> int:
    with portal.sessions() as db:
        return queue.claim(db)


def queue_counts(portal) -> dict:
    with portal.sessions() as db:
        return queue.counts(db)


def test_one_portal_per_course(course, portal):
    portal.acquire_lock()
    with pytest.raises(PortalBusy):
        new_portal(course).acquire_lock()
    portal.stop()


def test_the_portal_refuses_root_unless_told(monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert "does not run as root" in refuse_root(False)
    assert "make portal PORTAL_ARGS=--allow-root" in refuse_root(False)          # what make needs, named
    assert refuse_root(True) is None
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    assert refuse_root(False) is None
