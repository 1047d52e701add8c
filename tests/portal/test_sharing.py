"""No student can take what the class shares in a rush: the sandboxes go first to whoever has used the least
grading time, a notebook that runs long while others wait is stopped short and run in full when no one waits,
and the checks of uploads are spent once per wait on a student whose files are refused (nothing of a refused
upload is read), one upload per student at a time; every rule is a [sharing] setting, stated on the page."""
import datetime as dt
import json
import threading

import httpx
from fixture_submissions import ASSIGNMENT
from sqlalchemy import select, update
from test_access import attempts_in
from test_course_settings import write_settings
from test_edges import served

from conftest import CountingExecute, client_for, new_portal, notebook_bytes, upload
from posenc_autograder.grading.execute import Execution
from posenc_autograder.portal import queue, uploads
from posenc_autograder.portal.models import Attempt, Status
from posenc_autograder.portal.routes import create_app
from posenc_autograder.portal.web import students
from posenc_autograder.probes import codec
from posenc_autograder.settings import Sharing

FREEZER = b'{"cells": ["' + b'\\"' * 200_000           # an object's unterminated string: passes the first look


def attempt_of(answer) -> int:
    return int(answer.headers["location"].split("?")[0].rsplit("/", 1)[1])


def test_a_student_who_burnt_sandbox_time_waits_behind_everyone_who_burnt_less(app, portal):
    alice, bob, carol = (client_for(app, portal, name) for name in ("alice", "bob", "carol"))
    portal.set_policy(ASSIGNMENT, {"max_queued": 0})
    assert upload(alice, notebook_bytes("alice 1")).status_code == 303
    portal.worker.run_until_idle()
    with portal.sessions() as db:                      # her first notebook took a minute of sandbox time
        db.execute(update(Attempt).where(Attempt.student_id == "alice").values(grading_seconds=60.0))
        db.commit()
    alices = [attempt_of(upload(alice, notebook_bytes(f"alice {n}"))) for n in (2, 3)]   # uploaded first
    bobs, carols = (attempt_of(upload(c, notebook_bytes(n))) for c, n in ((bob, "bob"), (carol, "carol")))
    with portal.sessions() as db:
        assert queue.fair_order(db) == [bobs, carols, *alices]    # rounds by job count put alice's 2nd first
    assert json.loads(bob.get(f"/attempts/{bobs}/status.json").text)["ahead"] == 0
    assert json.loads(alice.get(f"/attempts/{alices[0]}/status.json").text)["ahead"] == 2


def test_each_run_is_charged_to_its_student(course):
    def slow(task):
        threading.Event().wait(0.3)
        return Execution(task.key, {}, [], {}, 0.3)
    portal = new_portal(course, slow)
    alice = client_for(create_app(portal, start_worker=False), portal, "alice")
    assert upload(alice, notebook_bytes("charged")).status_code == 303
    portal.worker.run_until_idle()
    with portal.sessions() as db:
        graded = db.execute(select(Attempt)).scalar_one()
        assert graded.status == Status.GRADED and graded.grading_seconds >= 0.3
        assert queue.used_seconds(db, graded.uploaded_at, dt.timedelta(minutes=1), 5.0)["alice"] >= 0.3
        assert queue.used_seconds(db, graded.uploaded_at + dt.timedelta(minutes=2), dt.timedelta(minutes=1),
                                  5.0)["alice"] == 0            # out of the window: forgotten


class LoopingExecute:
    """Stands in for the sandbox: a notebook with a '# loop' cell uses all the time it is given (the sandbox's
    notebook time limit), any other finishes; records (student, seconds given) per run."""

    def __init__(self):
        self.runs: list[tuple[str, int]] = []

    def __call__(self, task):
        seconds = task.limits["notebook_seconds"]
        self.runs.append((task.key[0], seconds))
        looping = "# loop" in task.notebook_json
        return Execution(task.key, {}, [{"event": "notebook_time_limit", "cell": 0}] if looping else [], {}, seconds)


def test_a_long_run_while_others_wait_stops_short_and_runs_in_full_when_none_waits(course):
    execute = LoopingExecute()
    portal = new_portal(course, execute, jobs=2)
    app = create_app(portal, start_worker=False)
    looper, bob = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    loops = attempt_of(upload(looper, notebook_bytes("loop")))
    assert upload(bob, notebook_bytes("bob")).status_code == 303
    short, full = Sharing().rush_notebook_seconds, portal.worker.limits_for(ASSIGNMENT).notebook_seconds
    assert short < full
    assert portal.worker._claim() == loops                     # uploaded first, nothing used: hers runs first
    portal.worker.grade(loops)
    status = json.loads(looper.get(f"/attempts/{loops}/status.json").text)
    assert status["status"] == "queued" and status["full_run"]
    assert "runs again with its full time" in looper.get(f"/attempts/{loops}").text
    portal.worker.run_until_idle()
    assert execute.runs == [("alice", short), ("bob", short), ("alice", full)]     # bob's first, then hers in full
    with portal.sessions() as db:
        graded = {a.student_id: a for a in db.execute(select(Attempt)).scalars()}
    assert graded["alice"].status == graded["bob"].status == Status.GRADED
    assert graded["alice"].runs == 2 and graded["alice"].number == 1      # one attempt, run twice


def test_a_full_run_never_takes_the_last_free_sandbox_nor_goes_before_another_students_job(portal):
    app = create_app(portal, start_worker=False)

    def queued(name, full_run):
        answer = upload(client_for(app, portal, name), notebook_bytes(name))
        with portal.sessions() as db:
            db.execute(update(Attempt).where(Attempt.id == attempt_of(answer)).values(full_run=full_run))
            db.commit()
        return attempt_of(answer)
    alices = queued("alice", True)
    with portal.sessions() as db:
        assert queue.claim(db, slots=2) == alices         # nobody else waits: it may run in full
    bobs = queued("bob", True)
    with portal.sessions() as db:
        assert queue.claim(db, slots=2) is None           # a second full run would take the last free sandbox
        assert queue.claim(db, slots=3) == bobs           # of three, one stays free
        db.execute(update(Attempt).values(status=Status.GRADED))
        db.commit()
    queued("dave", True)
    carols = queued("carol", False)                       # uploaded after dave's
    with portal.sessions() as db:
        assert queue.claim(db, slots=2) == carols         # a full run waits while another student's job waits


def scans(monkeypatch) -> list[int]:
    seen = []
    real = codec._scan                                    # the one JSON scan: the codec's, which uploads reads
    monkeypatch.setattr(codec, "_scan", lambda raw, shape: seen.append(raw.size) or real(raw, shape))
    return seen


def test_after_a_refused_file_the_next_upload_waits_and_its_bytes_are_not_read(app, portal, monkeypatch):
    now = [1000.0]
    portal.gate.clock = lambda: now[0]
    scanned = scans(monkeypatch)
    alice, bob = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    assert upload(alice, FREEZER).status_code == 400
    read = len(scanned)
    waited = upload(alice, notebook_bytes("good"))
    assert waited.status_code == 429 and waited.headers["retry-after"] == str(Sharing().refused_wait_seconds)
    assert "not checked" in waited.text and len(scanned) == read and attempts_in(portal) == 0
    assert upload(bob, notebook_bytes("bob")).status_code == 303               # a classmate is not held
    now[0] += Sharing().refused_wait_seconds + 1
    assert upload(alice, FREEZER).status_code == 400                           # refused again: twice the wait
    assert portal.gate.wait_seconds("alice") == 2 * Sharing().refused_wait_seconds
    now[0] += 2 * Sharing().refused_wait_seconds + 1
    assert upload(alice, notebook_bytes("good")).status_code == 303            # accepted: the count starts again
    assert portal.gate.wait_seconds("alice") == 0


def test_the_wait_doubles_up_to_its_longest():
    from posenc_autograder.portal.gate import UploadGate
    gate = UploadGate(Sharing(refused_wait_seconds=10, refused_wait_max_seconds=35), clock=lambda: 0.0)
    assert [gate.wait_after(n) for n in (1, 2, 3, 4, 50)] == [10, 20, 35, 35, 35]


def test_an_upload_the_policy_refuses_is_answered_without_reading_it(app, portal, monkeypatch):
    alice = client_for(app, portal, "alice")
    portal.set_policy(ASSIGNMENT, {"max_queued": 1})
    assert upload(alice, notebook_bytes("waiting")).status_code == 303

    def read(*args):
        raise AssertionError("the body was read")
    monkeypatch.setattr(students, "read_and_check", read)
    refused = upload(alice, notebook_bytes("one too many"))
    assert refused.status_code == 403 and "waiting to be graded" in refused.text


def test_one_upload_of_a_student_is_read_at_a_time(app, portal, monkeypatch):
    release, started = threading.Event(), threading.Semaphore(0)
    real = portal.accept_upload

    def held(student, *args):
        if student == "ann":
            started.release()
            release.wait(30)
        return real(student, *args)
    monkeypatch.setattr(portal, "accept_upload", held)
    tokens = {name: portal.new_link(name) for name in ("ann", "ben")}
    answers: dict = {}
    with served(app) as port:
        def send(name, marker):
            client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)
            client.get(f"/s/{tokens[name]}")
            csrf = client.get(f"/assignments/{ASSIGNMENT}").text.split('name="csrf" value="', 1)[1].split('"')[0]
            answers[marker] = client.post(f"/assignments/{ASSIGNMENT}/upload", data={"csrf": csrf}, files={
                "notebook": ("n.ipynb", notebook_bytes(marker))}).status_code
        first = threading.Thread(target=send, args=("ann", "ann 1"))
        first.start()
        assert started.acquire(timeout=30)                    # ann's first upload is being checked
        send("ann", "ann 2")                                  # her second meanwhile: not read
        send("ben", "ben")                                    # a classmate's: read and accepted
        release.set()
        first.join(30)
    assert answers == {"ann 2": 429, "ben": 303, "ann 1": 303}


def test_a_file_over_a_cap_costs_a_megabytes_scan_and_one_that_is_no_object_none(monkeypatch):
    scanned = scans(monkeypatch)
    many_values = b'{"cells": [' + b"1," * 9_900_000                 # 19.8 MB, under the size cap
    assert "JSON values" in uploads.problem(many_values)
    assert sum(scanned) <= 2 * uploads.SCAN_CHUNK < len(many_values) // 5
    scanned.clear()
    assert "not a notebook" in uploads.problem(b'"' + b'\\"' * 1_000_000)
    assert scanned == []


def test_the_sharing_settings_reach_the_portal_and_the_students_page(course):
    write_settings(course, "[sharing]\nusage_window_minutes = 30\nrush_notebook_seconds = 9\n"
                           "refused_wait_seconds = 7\nrefused_wait_max_seconds = 70\n")
    portal = new_portal(course, CountingExecute())
    assert portal.worker.usage_window == dt.timedelta(minutes=30) and portal.gate.wait_after(4) == 56
    page = client_for(create_app(portal, start_worker=False), portal, "alice").get(f"/assignments/{ASSIGNMENT}").text
    for stated in ("least grading time in the last 30 minutes", "for at most 9 s", "7 s later", "at most 70 s"):
        assert stated in page
