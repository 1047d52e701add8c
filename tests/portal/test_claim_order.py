"""A claim takes the first job of the queue's fair order that may start (queue.fair_order, the order the status
pages show, and queue.may_start), without reading every waiting job when it need not: the same job in every state a
queue can be in, and in a rush of first uploads one query that stops at its first row."""
import datetime as dt
import random

import pytest
from sqlalchemy import delete, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from posenc_autograder.portal import queue
from posenc_autograder.portal.models import Attempt, Status, Student, open_database, utcnow

WINDOW = dt.timedelta(minutes=60)


@pytest.fixture
def sessions():
    return open_database("sqlite://")            # in memory: one connection, nothing written to disk


def first_that_may_start(db, slots: int) -> int | None:
    """The claim's job by its definition: the fair order, then the first job of it that may start."""
    order = queue.fair_order(db, WINDOW)
    return next((job for job in order if queue.may_start(db, job, order, slots)), None)


def random_queue(db, rng: random.Random) -> None:
    """Students with graded attempts in and out of the window (some charged nothing), running jobs (some in full),
    queued jobs (some stopped short, so in full next), and recent jobs whose typical time may be 0 or unknown."""
    now = utcnow()
    students = [f"s{n}" for n in range(rng.randint(1, 7))]
    db.add_all(Student(id=name, name=name) for name in students)
    typical = rng.choice([0.0, 0.5, 5.0, None])
    number = 0
    for _ in range(rng.randint(0, 14)):
        number += 1
        status = rng.choice([Status.QUEUED] * 4 + [Status.RUNNING, Status.GRADED, Status.GRADED, Status.ERROR])
        uploaded = now - rng.choice([dt.timedelta(minutes=5), dt.timedelta(minutes=30), dt.timedelta(hours=3)])
        started = now - dt.timedelta(seconds=rng.choice([0.0, 1.0, 20.0])) if status != Status.QUEUED else None
        finished = None
        if status in (Status.GRADED, Status.ERROR):
            started = now - dt.timedelta(minutes=1)
            finished = started + dt.timedelta(seconds=typical) if typical is not None else None
        charged = rng.choice([0.0, 0.0, 0.4, 3.0, None]) if status != Status.RUNNING else 0.0
        db.add(Attempt(student_id=rng.choice(students), assignment=rng.choice(["a", "b"]), notebook="n",
                       number=number, sha256=f"{number:064x}", size=1, uploaded_at=uploaded, status=status,
                       started_at=started, finished_at=finished, runs=1, grading_seconds=charged,
                       full_run=rng.random() < 0.2, claimed_by="slot" if status == Status.RUNNING else None))
    db.commit()


def test_a_claim_takes_the_first_job_of_the_fair_order_that_may_start(sessions):
    for seed in range(30):
        rng = random.Random(seed)
        slots = rng.choice([1, 2, 3])
        with sessions() as db:
            db.execute(delete(Attempt))
            db.execute(delete(Student))
            random_queue(db, rng)
            while True:                              # claimed one by one until none may start: the same each time
                expected = first_that_may_start(db, slots)
                assert queue.next_job(db, WINDOW, slots) == expected, f"seed {seed}"
                if expected is None:
                    break
                db.execute(update(Attempt).where(Attempt.id == expected)
                           .values(status=Status.RUNNING, started_at=utcnow(), runs=Attempt.runs + 1))
                db.commit()


def test_in_a_rush_of_first_uploads_a_claim_reads_no_order(sessions, monkeypatch):
    """Fails on the old claim: it computed the whole order (every waiting job, its student's time) each time."""
    now = utcnow()

    def attempt(student, number, status, charged=0.0, full_run=False):
        started = now - dt.timedelta(seconds=5) if status != Status.QUEUED else None
        return Attempt(student_id=student, assignment="a", notebook="n", number=number, sha256=f"{number:064x}",
                       size=1, uploaded_at=now, status=status, started_at=started,
                       finished_at=now if status == Status.GRADED else None, runs=1, grading_seconds=charged,
                       full_run=full_run)
    with sessions() as db:
        db.add_all(Student(id=f"s{n}", name="") for n in range(303))
        db.add_all([attempt("s0", 1, Status.GRADED, 4.0), attempt("s0", 2, Status.QUEUED),     # used time
                    attempt("s1", 3, Status.QUEUED, full_run=True),                            # in full: later
                    attempt("s2", 4, Status.RUNNING), attempt("s2", 5, Status.QUEUED)])         # running
        db.add_all(attempt(f"s{n}", 10 + n, Status.QUEUED) for n in range(3, 303))
        db.commit()
        expected = first_that_may_start(db, 2)
        assert expected == db.execute(select(Attempt.id).where(Attempt.student_id == "s3")).scalar_one()

        def no_order(*args, **kwargs):
            raise AssertionError("the whole order computed for a claim")
        monkeypatch.setattr(queue, "fair_order", no_order)
        assert queue.claim(db, WINDOW, slots=2) == expected


def test_when_jobs_take_no_time_a_students_second_job_ranks_with_first_jobs(sessions):
    """With a typical job time of 0 a second job is charged nothing for the first: of alice's first (in full, so not
    while bob waits) and second and bob's first, all ranked 0, her second goes first by upload order."""
    now = utcnow()
    with sessions() as db:
        db.add_all([Student(id="alice", name=""), Student(id="bob", name="")])
        db.add(Attempt(student_id="bob", assignment="b", notebook="n", number=1, sha256="0" * 64, size=1,
                       uploaded_at=now, status=Status.GRADED, started_at=now, finished_at=now, runs=1))
        jobs = [Attempt(student_id=student, assignment="a", notebook="n", number=number, sha256=f"{number:064x}",
                        size=1, uploaded_at=now, status=Status.QUEUED, runs=0, full_run=full_run)
                for student, number, full_run in (("alice", 1, True), ("alice", 2, False), ("bob", 3, False))]
        db.add_all(jobs)
        db.commit()
        assert queue.mean_job_seconds(db) == 0.0
        assert queue.next_job(db, WINDOW, 2) == first_that_may_start(db, 2) == jobs[1].id


def vm_steps(db, ask) -> int:
    """SQLite's virtual machine steps (in hundreds) that `ask` takes: the work its queries do in the database."""
    steps = [0]

    def count():
        steps[0] += 1
        return 0
    raw = db.connection().connection.driver_connection
    raw.set_progress_handler(count, 100)
    try:
        ask()
    finally:
        raw.set_progress_handler(None, 100)
    return steps[0]


def test_whether_another_student_waits_is_answered_without_reading_the_whole_queue(sessions):
    """Fails on the old code: it counted every other student's waiting job (a short run is asked about each job)."""
    now = utcnow()
    with sessions() as db:
        def queued(count: int) -> int:
            db.execute(update(Attempt).values(status=Status.GRADED))          # the queue before: graded
            db.add_all(Student(id=f"q{count}-{n}", name="") for n in range(count))
            jobs = [Attempt(student_id=f"q{count}-{n}", assignment="a", notebook="n", number=1, sha256="0" * 64,
                            size=1, uploaded_at=now, status=Status.QUEUED, runs=0) for n in range(count)]
            db.add_all(jobs)
            db.commit()
            return jobs[0].id
        job = queued(10)
        few = vm_steps(db, lambda: queue.others_waiting(db, job))
        job = queued(2000)
        many = vm_steps(db, lambda: queue.others_waiting(db, job))
        assert queue.others_waiting(db, queued(1)) is False
        assert many <= few + 2



def plan_work(node: dict) -> int:
    """The rows a PostgreSQL plan node and those under it produced or threw away, over all their loops."""
    own = sum(node.get(key, 0) for key in ("Actual Rows", "Rows Removed by Filter", "Rows Removed by Join Filter"))
    return own * node.get("Actual Loops", 1) + sum(plan_work(child) for child in node.get("Plans", []))


def test_on_postgresql_a_claim_walks_the_jobs_before_its_own_whatever_the_statistics_say(postgres_url):
    """PostgreSQL's statistics of a course's attempts were taken before a rush, when none was queued: the claim's
    query still walks the queue in upload order and stops at the first job ranked 0 (here after 20 of students
    who used time lately), so its work does not grow with the queue. Fails on the old query: planned for a queue
    of one, it joined each queued job to every waiting one (8 times the queue, about 8 times the work)."""
    sessions = open_database(postgres_url)
    now = utcnow()

    def attempt(student: str, number: int, status: Status, uploaded: dt.datetime) -> Attempt:
        graded = status == Status.GRADED
        return Attempt(student_id=student, assignment="a", notebook="n", number=number, sha256=f"{number:064x}",
                       size=1, uploaded_at=uploaded, status=status, started_at=uploaded if graded else None,
                       finished_at=uploaded + dt.timedelta(seconds=1) if graded else None, runs=int(graded),
                       grading_seconds=float(graded))
    with sessions() as db:
        db.add_all(Student(id=f"s{n}", name="") for n in range(800))
        db.flush()
        db.add_all(attempt(f"s{n}", past, Status.GRADED, now - dt.timedelta(days=30)) for n in range(800)
                   for past in (1, 2))                           # an earlier assignment's, long graded
        db.commit()
        db.execute(text("ANALYZE portal_attempt"))
        db.commit()

    def claim_work(queued: int) -> int:
        """The claim's work with `queued` new jobs waiting, the first 20 of students who used time lately."""
        with sessions() as db:
            db.execute(delete(Attempt).where(Attempt.number > 2))
            db.add_all(attempt(f"s{n}", 3, Status.GRADED, now) for n in range(20))
            db.add_all(attempt(f"s{n}", 4, Status.QUEUED, now) for n in range(queued))
            db.commit()
            expected = first_that_may_start(db, 2)
            assert expected == db.execute(select(Attempt.id).where(Attempt.student_id == "s20",
                                                                   Attempt.number == 4)).scalar_one()
            assert queue.next_job(db, WINDOW, 2) == expected
            query = queue.FIRST_UNUSED.params(since=utcnow() - WINDOW)
            sql = str(query.compile(db.get_bind(), compile_kwargs={"literal_binds": True}))
            plan = db.execute(text("EXPLAIN (ANALYZE, FORMAT JSON) " + sql.replace("%%", "%"))).scalar_one()
            return plan_work(plan[0]["Plan"])
    few, many = claim_work(50), claim_work(400)
    assert many < few * 2, (few, many)


def test_on_postgresql_the_prepared_claim_walks_the_queued_jobs_not_the_graded_ones(postgres_url):
    """The claim runs as a prepared statement (portal/prepared.py): once PostgreSQL plans it for any parameters, its
    plan still reads the queued jobs' index, which holds only rows whose status is 'queued' (fails with the status a
    parameter: the generic plan walked the primary key past every graded job, 1,600 here, at every claim)."""
    sessions = open_database(postgres_url)
    now = utcnow()
    with sessions() as db:
        db.add_all(Student(id=f"s{n}", name="") for n in range(850))
        db.flush()
        db.add_all(Attempt(student_id=f"s{n}", assignment="a", notebook="n", number=past, sha256=f"{past:064x}",
                           size=1, uploaded_at=now - dt.timedelta(days=30), status=Status.GRADED, runs=1,
                           finished_at=now - dt.timedelta(days=30), grading_seconds=1.0)
                   for n in range(800) for past in (1, 2))
        db.commit()
        db.execute(text("ANALYZE portal_attempt"))
        db.commit()
        db.add_all(Attempt(student_id=f"s{n}", assignment="a", notebook="n", number=1, sha256="0" * 64, size=1,
                           uploaded_at=now, status=Status.QUEUED) for n in range(800, 850))
        db.commit()
    with sessions() as db:
        parameters = {"since": now - WINDOW}
        for _ in range(10):                        # PostgreSQL weighs its generic plan after five custom ones
            assert db.execute(queue.FIRST_UNUSED, parameters).scalar() is not None
        connection = db.connection().connection.dbapi_connection
        compiled = queue.FIRST_UNUSED.compile(db.get_bind())
        execute = connection.prepared[str(compiled)]
        cursor = connection.cursor()
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + execute, {**compiled.params, **parameters})
        plan = cursor.fetchone()[0][0]["Plan"]
        assert plan_work(plan) < 100, plan_work(plan)
    sessions.kw["bind"].dispose()


def test_the_claims_first_job_is_the_smallest_id_by_sqls_own_rule():
    """Fails on the old query: its LIMIT 1 took the first row a subquery ordered by id handed it, an order SQL does
    not promise to keep outside that subquery (both databases kept it, as planned then)."""
    for dialect in (sqlite.dialect(), postgresql.dialect()):
        sql = str(queue.FIRST_UNUSED.compile(dialect=dialect)).upper()
        assert "MIN(PORTAL_ATTEMPT.ID)" in sql and "LIMIT" not in sql and "OFFSET" not in sql


def test_on_sqlite_a_claim_walks_the_jobs_before_its_own(sessions):
    """SQLite finds the smallest id that passes by walking the queued jobs in id order and stopping at the first:
    its work does not grow with the queue (here after 20 jobs of students who used time lately)."""
    now = utcnow()
    with sessions() as db:
        db.add_all(Student(id=f"s{n}", name="") for n in range(800))
        db.flush()
        db.add_all(Attempt(student_id=f"s{n}", assignment="a", notebook="n", number=1, sha256="0" * 64, size=1,
                           uploaded_at=now, status=Status.GRADED, started_at=now, finished_at=now, runs=1,
                           grading_seconds=1.0) for n in range(20))
        db.commit()

        def claim_steps(queued: int) -> int:
            db.execute(delete(Attempt).where(Attempt.number == 2))
            db.add_all(Attempt(student_id=f"s{n}", assignment="a", notebook="n", number=2, sha256="1" * 64, size=1,
                               uploaded_at=now, status=Status.QUEUED, runs=0) for n in range(queued))
            db.commit()
            first = db.execute(select(Attempt.id).where(Attempt.student_id == "s20", Attempt.number == 2)).scalar()
            assert queue.next_job(db, WINDOW, 2) == first == first_that_may_start(db, 2)
            return vm_steps(db, lambda: db.execute(queue.FIRST_UNUSED, {"since": now - WINDOW}).scalar())
        few, many = claim_steps(50), claim_steps(800)
        assert many <= few + 2, (few, many)


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_in_a_rush_a_claim_finds_takes_and_reads_its_job_in_one_statement(tmp_path, request, database):
    """A claim in a rush of first uploads: the typical job's time, then one UPDATE that finds the job, takes it and
    returns its row, on PostgreSQL a transaction of its own (no BEGIN, no COMMIT). Fails on the old code: the job was
    found, taken and read again in three statements, and the UPDATE began a transaction committed after it."""
    from sqlalchemy import event
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else f"sqlite:///{tmp_path / 'q.db'}"
    sessions = open_database(url)
    now = utcnow()
    with sessions() as db:
        db.add_all(Student(id=f"s{n}", name="") for n in range(4))
        db.flush()
        db.add_all(Attempt(student_id=f"s{n}", assignment="a", notebook="n", number=1, sha256="0" * 64, size=1,
                           uploaded_at=now, status=Status.QUEUED, runs=0) for n in range(4))
        db.commit()
        jobs = list(db.execute(select(Attempt.id).order_by(Attempt.id)).scalars())
    ran: list[tuple[str, bool]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        in_transaction = database == "postgresql" and cursor.connection.get_transaction_status() != 0
        ran.append((statement.split()[0], in_transaction))
    engine = sessions.kw["bind"]
    event.listen(engine, "after_cursor_execute", seen)
    try:
        for job in jobs[:2]:
            ran.clear()
            with sessions() as db:
                claimed = queue.claim_attempt(db, WINDOW, slots=2, claimer="slot-1")
            assert (claimed.id, claimed.status, claimed.runs, claimed.claimed_by) == (job, Status.RUNNING, 1, "slot-1")
            assert now <= claimed.started_at <= utcnow()
            assert ran == [("SELECT", False), ("UPDATE", False)], ran
    finally:
        event.remove(engine, "after_cursor_execute", seen)
    with sessions() as db:
        assert [a.status for a in db.execute(select(Attempt).order_by(Attempt.id)).scalars()] == \
            [Status.RUNNING] * 2 + [Status.QUEUED] * 2
    engine.dispose()
