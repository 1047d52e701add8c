"""Status requests read the queue's order from memory: a class polling in a rush costs one computation of the
fair order per change of the queue, not one per request."""
import itertools
import json

from fixture_submissions import ASSIGNMENT
from query_plans import sqlite_plan

from conftest import client_for, notebook_bytes, upload
from posenc_autograder.portal import queue


def counting(monkeypatch):
    calls = []
    real = queue.fair_order

    def fair_order(db, *args):
        calls.append(1)
        return real(db, *args)
    monkeypatch.setattr(queue, "fair_order", fair_order)
    return calls


def test_polling_reads_the_order_from_memory_until_the_queue_changes(app, portal, monkeypatch):
    portal.set_policy(ASSIGNMENT, {"max_queued": 0})
    alice, bob = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    first = int(upload(alice, notebook_bytes("a1")).headers["location"].rsplit("/", 1)[1])
    second = int(upload(alice, notebook_bytes("a2")).headers["location"].rsplit("/", 1)[1])
    calls = counting(monkeypatch)
    portal.queue_view.spacing = 0.0               # every change computed at once (the spacing: the test below)
    for _ in range(5):
        assert json.loads(alice.get(f"/attempts/{second}/status.json").text)["ahead"] == 1
    assert len(calls) == 1
    bobs = int(upload(bob, notebook_bytes("b")).headers["location"].rsplit("/", 1)[1])   # a change: due again
    assert json.loads(bob.get(f"/attempts/{bobs}/status.json").text)["ahead"] == 1      # his first goes before a2
    assert json.loads(alice.get(f"/attempts/{second}/status.json").text)["ahead"] == 2
    assert json.loads(alice.get(f"/attempts/{first}/status.json").text)["ahead"] == 0
    assert len(calls) == 2


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_change_is_computed_no_sooner_than_its_spacing_and_a_stale_view_again(monkeypatch):
    clock, computed = FakeClock(), []

    def slow_order(db, window):
        computed.append(clock.now)
        clock.now += 0.2                                   # the computation takes 0.2 s
        return [7, 3]
    monkeypatch.setattr(queue, "fair_order", slow_order)
    monkeypatch.setattr(queue, "mean_job_seconds", lambda db: 4.0)
    view = queue.QueueView(max_age=5.0, spacing=10.0, clock=clock)
    assert view.snapshot(None) == ({7: 0, 3: 1}, 4.0)
    view.changed()
    clock.now += 1.0                                       # 1 s < 10 x 0.2 s: not yet
    view.snapshot(None)
    assert len(computed) == 1
    clock.now += 1.0                                       # 2 s: due
    view.snapshot(None)
    assert len(computed) == 2
    clock.now += 4.0                                       # no change, but older than max_age
    view.snapshot(None)
    view.snapshot(None)
    assert len(computed) == 2
    clock.now += 1.0
    view.snapshot(None)
    assert len(computed) == 3


def test_the_orders_queries_bind_no_value_per_waiting_student(portal):
    """The students whose jobs wait are chosen by the database: a rush of 2,000 bound 2,000 names one by one to each
    computation of the order (a claim makes one for every job), which cost more than the sums it asked for."""
    from sqlalchemy import event

    from posenc_autograder.portal.models import Attempt, Student, utcnow
    with portal.sessions() as db:
        db.add_all([Student(id=f"s{i:03d}") for i in range(40)])
        db.flush()
        db.add_all([Attempt(student_id=f"s{i:03d}", assignment=ASSIGNMENT, notebook="n", number=1, sha256=f"{i:064d}",
                            size=1, uploaded_at=utcnow(), status="queued") for i in range(40)])
        db.commit()
        bound = []
        engine = db.get_bind()

        def count(conn, cursor, statement, parameters, context, executemany):
            bound.append(len(parameters))
        event.listen(engine, "before_cursor_execute", count)
        try:
            assert len(queue.fair_order(db)) == 40
        finally:
            event.remove(engine, "before_cursor_execute", count)
    assert bound and max(bound) < 10


def _plan_of_the_time_used(sessions) -> str:
    """SQLite's plan for the statement of queue.used_seconds that sums each waiting student's sandbox time."""
    return sqlite_plan(sessions, lambda db: queue.used_seconds(db, queue.utcnow(), queue.USAGE_WINDOW, 5.0,
                                                               queued_only=True),
                       "sum(portal_attempt.grading_seconds)")


def test_the_time_each_waiting_student_used_is_summed_from_an_index_alone(tmp_path):
    """The fair order sums each waiting student's recent sandbox time at every change of the queue: from an index
    holding the student, the upload time and the seconds, never from the attempts' rows, where a graded row's seconds
    lie past its stored result (pages of overflow each: 17 ms an order of 900 waiting jobs at 2,000 students, 8 ms
    from the index). A database made before the index gains it when opened."""
    from sqlalchemy import create_engine, text

    from posenc_autograder.portal.models import SCHEMA_VERSION, open_database
    url = f"sqlite:///{tmp_path / 'portal.db'}"
    plan = _plan_of_the_time_used(open_database(url))
    assert "COVERING INDEX ix_portal_attempt_usage" in plan, plan     # old code: the rows, by ix_portal_attempt_file
    with create_engine(url).begin() as connection:                   # as a portal of the schema before made it
        connection.execute(text("DROP INDEX ix_portal_attempt_usage"))
        connection.execute(text("UPDATE portal_schema SET version = 10"))
    sessions = open_database(url)
    assert "COVERING INDEX ix_portal_attempt_usage" in _plan_of_the_time_used(sessions)
    with sessions() as db:
        assert db.execute(text("SELECT version FROM portal_schema")).scalar_one() == SCHEMA_VERSION


def test_a_queue_changing_ten_times_a_second_is_ordered_at_most_twice_a_second(monkeypatch):
    """A rush changes the queue at every upload and claim (ten times a second and more at 2,000 students), and the
    order's cost grows with the queue: however cheap each computation, the view is computed again no sooner than
    half a second after the last (spacing 10 times at least 50 ms), as a page's jobs ahead need no fresher figure."""
    clock, computed = FakeClock(), []

    def quick_order(db, window):
        computed.append(clock.now)
        clock.now += 0.002                                 # 2 ms: the spacing alone would allow every change
        return [7, 3]
    monkeypatch.setattr(queue, "fair_order", quick_order)
    monkeypatch.setattr(queue, "mean_job_seconds", lambda db: 4.0)
    view = queue.QueueView(max_age=5.0, spacing=10.0, clock=clock)
    for _ in range(100):                                   # 10 s: a change, then a status read, every 0.1 s
        view.changed()
        view.snapshot(None)
        clock.now += 0.1
    assert 15 <= len(computed) <= 21, len(computed)       # old code: 100
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(computed))
