"""What a student's request costs the portal, counted (never timed): in a rush of 2,000 the web process answers
~14,000 requests beside the grading, so a page must not reflect the database's tables nor read a late policy it
does not apply, a waiting student's status must not read rules that only a graded attempt's score depends on, an
upload's check must not build the notebook grading builds, and a feedback page must not deep-copy the result."""
import copy
import datetime as dt
import json
import re
import typing
from dataclasses import replace

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT
from hostile_notebooks import HOSTILE_FILES
from sqlalchemy import Table, create_engine, event, select, text, update
from sqlalchemy.pool import QueuePool
from test_uploads_and_queue import NOT_GRADABLE, set_policy

from conftest import client_for, new_portal, notebook_bytes, upload
from posenc_autograder.course import Course
from posenc_autograder.intake import attempts as record_of_attempts
from posenc_autograder.intake import submissions
from posenc_autograder.portal import auth, models, pages, queue, service
from posenc_autograder.portal.models import Attempt, Status, utcnow
from posenc_autograder.portal.routes import create_app
from posenc_autograder.records import database, gradebook
from posenc_autograder.reports import late_policy
from posenc_autograder.results import GradedTest, Note, NotebookResult, NoteKind, Problem


@pytest.fixture
def reflected():
    """The names of the tables whose columns were reflected while the test ran."""
    names = []

    def seen(inspector, table, column_info):
        names.append(table.name)
    event.listen(Table, "column_reflect", seen)
    yield names
    event.remove(Table, "column_reflect", seen)


@pytest.fixture
def statements(portal):
    """Every SQL statement the portal's own engine runs while the test looks (cleared by the test)."""
    ran = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        ran.append(statement)
    engine = portal.sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", seen)
    yield ran
    event.remove(engine, "before_cursor_execute", seen)


def test_the_late_policy_of_a_page_and_a_store_reads_the_portals_dates_without_reflecting_a_table(
        app, portal, course, reflected):
    now = utcnow()
    set_policy(portal, deadline=now - dt.timedelta(hours=1), grace_minutes=0, late_days=3)   # past: uploads late
    clients = {student: client_for(app, portal, student) for student in ("alice", "bob")}
    assert portal.set_extension("bob", ASSIGNMENT, now + dt.timedelta(days=2))              # not bob's (below)
    for student, client in clients.items():
        assert upload(client, notebook_bytes(student)).status_code == 303
    assert portal.worker.run_until_idle() == 2                      # each stored: its late policy applied
    views = {student: portal.assignment_view(student, ASSIGNMENT) for student in ("alice", "bob")}
    assert reflected == []
    assert views["alice"]["grade"].late is True and views["bob"]["grade"].late is False
    class_files = late_policy.Deadlines(course)                     # as grades.csv reads the same dates
    for student, view in views.items():
        assert view["grade"] == late_policy.grade_of(class_files, student, ASSIGNMENT,
                                                     (view["grade"].before_late, view["grade"].max_score))
        assert view["extended"] is (student == "bob")



def test_a_page_with_nothing_graded_reads_no_late_policy(app, portal, statements):
    client_for(app, portal, "alice")
    statements.clear()
    view = portal.assignment_view("alice", ASSIGNMENT)
    assert view["grade"] is None and view["counting"] is None
    dates = [s for s in statements if s.startswith("SELECT portal_policy.assignment, portal_policy.deadline")]
    assert dates == []                       # the late policy's read of the portal's dates: no grade, not needed
    assert sum("FROM portal_extension" in s for s in statements) == 1        # the student's rules' own
    statements.clear()
    portal.assignment_view("alice", ASSIGNMENT)
    assert not [s for s in statements if s.startswith("PRAGMA")]     # the gradebook's tables looked for once


def test_a_waiting_students_status_runs_no_query_once_the_queue_is_read(app, portal, statements):
    set_policy(portal, feedback_before="full")
    alice = client_for(app, portal, "alice")
    upload(alice, notebook_bytes("a"))
    with portal.sessions() as db:
        queued = db.get(Attempt, 1)
    portal.status(queued)                                           # the queue's order read once, into memory
    statements.clear()
    assert portal.status(queued)["status"] == Status.QUEUED
    assert portal.status(queued)["ahead"] == 0
    assert statements == []                                          # neither the policy nor the extension read
    job = portal.worker._claim()
    with portal.sessions() as db:
        running = db.get(Attempt, job)
    portal.status(running)
    statements.clear()
    assert portal.status(running)["status"] == Status.RUNNING and statements == []
    portal.worker.grade(job)
    with portal.sessions() as db:
        graded = db.get(Attempt, job)
    shown = portal.status(graded)                                   # a score: shown only as the policy says
    assert shown["score"] == graded.score and shown["max_score"] == graded.max_score
    assert any("portal_policy" in statement for statement in statements)
    set_policy(portal, feedback_before="none", deadline=utcnow() + dt.timedelta(days=1))
    assert portal.status(graded)["score"] is None


def test_a_refused_upload_and_an_assignment_page_read_no_graded_attempts_result(app, portal, statements):
    """A student's graded attempts each hold their result (kilobytes); the pages and upload decisions that count
    the attempts never show one, so none is read (fails on the old code: every attempt's result read again for
    every refused upload and every page, a flooder's twenty about 200 kB a request); the feedback still reads its
    own."""
    set_policy(portal, max_attempts=2, max_queued=0, feedback_before="full")
    alice = client_for(app, portal, "alice")
    for marker in ("1", "2"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    assert portal.worker.run_until_idle() == 2
    statements.clear()
    refused = upload(alice, notebook_bytes("3"))
    assert refused.status_code == 403 and "all 2 attempts" in refused.text
    page = alice.get(f"/assignments/{ASSIGNMENT}")
    assert page.status_code == 200 and "/attempts/2" in page.text
    read = [s for s in statements if "portal_attempt" in s]
    assert read and not [s for s in read if "result_json" in s]
    assert alice.get("/attempts/2/feedback").status_code == 200


def test_an_upload_is_checked_by_intakes_rules_without_building_the_notebook(portal, monkeypatch):
    built = []
    real = nbformat.from_dict
    monkeypatch.setattr(submissions.nbformat, "from_dict", lambda *a, **k: built.append(1) or real(*a, **k))
    portal.new_link("alice")
    assert portal.accept_upload("alice", ASSIGNMENT, "x.ipynb", notebook_bytes("a"))[0] == "queued"
    assert built == []                       # the normalised notebook is built where it is graded, not here


@pytest.mark.parametrize("name", NOT_GRADABLE + ["a notebook", "too many cells", "cells of odd types"])
def test_the_upload_check_refuses_exactly_what_intake_cannot_read(name, tmp_path):
    path = tmp_path / name
    release = json.loads(notebook_bytes())
    if name in HOSTILE_FILES:
        HOSTILE_FILES[name](path, release, tmp_path)
    else:
        cells = release["cells"] * 3 if name == "too many cells" else \
            release["cells"] + [{"cell_type": "odd"}, 7, {"cell_type": "code", "source": ["a", 1]}] \
            if name == "cells of odd types" else release["cells"]
        path.write_text(json.dumps({**release, "cells": cells}))
    caps = (submissions.MAX_NOTEBOOK_BYTES, 100)          # the released notebook has 43 cells

    def outcome(read) -> str:
        try:
            read(path, *caps)
        except submissions.UnreadableNotebook as exc:
            return str(exc)
        return "readable"
    assert outcome(submissions.check_notebook) == outcome(submissions.read_notebook)
    if name not in HOSTILE_FILES:
        assert (outcome(submissions.check_notebook) == "readable") is (name != "too many cells")


@pytest.mark.parametrize("level, inputs", [("tests", True), ("diagnoses", False), ("full", True)])
def test_the_feedback_shown_is_a_new_result_made_without_deep_copies(level, inputs, monkeypatch):
    problem = Problem("wrong at [0, 1]", inputs=[[1.0, 2.0]])
    result = NotebookResult("ann", "a", "nb", True, [GradedTest("hidden_x", "x", True, 0.0, 1.0, [problem]),
                                                     GradedTest("hidden_y", "y", True, 1.0, 1.0, [])],
                            [Note(NoteKind.FIX_FIRST, "fix x first"), Note(NoteKind.OTHER, "ran")])
    before = json.dumps(result.to_json())
    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: pytest.fail("deep-copied"))
    shown = pages.visible_result(result, level, inputs)
    assert json.dumps(result.to_json()) == before                       # the result given is left as it was
    assert [t.problems for t in shown.tests][1] == [] and shown.score == result.score
    expected = [pages.WITHHELD] if level == "tests" else [problem if inputs else replace(problem, inputs=None)]
    assert shown.tests[0].problems == expected
    assert [n.kind for n in shown.notes] == ([NoteKind.OTHER] if level == "tests" else [NoteKind.FIX_FIRST,
                                                                                        NoteKind.OTHER])


def sessions_counted(portal, monkeypatch) -> list:
    """A list that grows by one at each database session the portal opens from now on."""
    opened = []
    sessions = portal.sessions

    def counted():
        opened.append(1)
        return sessions()
    monkeypatch.setattr(portal, "sessions", counted)
    return opened


def test_a_status_request_reads_its_attempt_and_status_on_one_database_session(app, portal, monkeypatch):
    """Who asks, then the attempt with its status: two sessions (two turns of the thread pool) a status request,
    not one more for the status read apart from its attempt."""
    alice = client_for(app, portal, "alice")
    job = upload(alice, notebook_bytes("alice")).headers["location"].split("?")[0].rsplit("/", 1)[1]
    opened = sessions_counted(portal, monkeypatch)
    answer = json.loads(alice.get(f"/attempts/{job}/status.json").text)
    assert answer["status"] == Status.QUEUED and len(opened) == 2
    opened.clear()
    portal.worker.run_until_idle()
    opened.clear()
    answer = json.loads(alice.get(f"/attempts/{job}/status.json?since={Status.QUEUED}").text)    # changed: at once
    assert answer["status"] == Status.GRADED and len(opened) == 2


def test_an_attempts_page_reads_who_asks_the_attempt_and_its_status_on_one_database_session(app, portal, monkeypatch):
    """Fails on the old code: three sessions (three turns of the thread pool) for the page, two besides the
    feedback's own read for its feedback; another's attempt is still not found, anyone not signed in told so."""
    alice = client_for(app, portal, "alice")
    job = upload(alice, notebook_bytes("alice")).headers["location"].split("?")[0].rsplit("/", 1)[1]
    portal.worker.run_until_idle()
    opened = sessions_counted(portal, monkeypatch)
    page = alice.get(f"/attempts/{job}")
    assert page.status_code == 200 and 'data-status="graded"' in page.text and len(opened) == 1
    opened.clear()
    assert alice.get(f"/attempts/{job}/feedback").status_code == 200 and len(opened) == 2
    assert client_for(app, portal, "bob").get(f"/attempts/{job}").status_code == 404
    assert client_for(app).get(f"/attempts/{job}").status_code == 403


def test_a_graded_status_reads_the_late_policy_once(app, portal, statements, monkeypatch):
    """A graded attempt's status states its points by one late policy: the student's record of attempts read once,
    their extension with the portal's dates, and the points those of the assignment page (fails on the old code: the
    record read twice, for the attempt that counts and for its submission time, and the extension read apart from
    the portal's dates)."""
    now = utcnow()
    set_policy(portal, deadline=now - dt.timedelta(hours=1), grace_minutes=0, late_days=3, feedback_before="full")
    alice = client_for(app, portal, "alice")
    job = upload(alice, notebook_bytes("alice")).headers["location"].split("?")[0].rsplit("/", 1)[1]
    assert portal.worker.run_until_idle() == 1
    assert portal.set_extension("alice", ASSIGNMENT, now - dt.timedelta(minutes=30))      # still late, extended
    reads, real = [], record_of_attempts.of
    monkeypatch.setattr(record_of_attempts, "of", lambda *key: reads.append(key) or real(*key))
    statements.clear()
    answer = json.loads(alice.get(f"/attempts/{job}/status.json").text)
    assert len(reads) == 1
    assert sum("FROM portal_extension" in statement for statement in statements) == 1
    view = portal.assignment_view("alice", ASSIGNMENT)
    assert view["grade"].late and view["extended"]
    assert (answer["status"], answer["score"]) == (Status.GRADED, view["points"][int(job)])


def test_an_assignment_page_reads_the_record_of_attempts_once(app, portal, monkeypatch):
    """The page's late policy and the attempt it tags as counting read the record of attempts from one look (fails on
    the old code: read again for whether the grade's attempt was late)."""
    set_policy(portal, deadline=utcnow() - dt.timedelta(hours=1), grace_minutes=0, late_days=3,
               feedback_before="full")
    alice = client_for(app, portal, "alice")
    assert upload(alice, notebook_bytes("alice")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    reads, real = [], record_of_attempts.of
    monkeypatch.setattr(record_of_attempts, "of", lambda *key: reads.append(key) or real(*key))
    view = portal.assignment_view("alice", ASSIGNMENT)
    assert len(reads) == 1
    assert view["grade"].late and view["counting"] is not None


def test_the_home_page_reads_the_students_rules_attempts_and_grades_once_for_every_assignment(app, portal, statements):
    """The home page shows every assignment: as many statements as one assignment's page, not one set per assignment
    (fails on the old code: four times as many), and each assignment shown as its own page shows it."""
    assert len(portal.assignments) > 1
    set_policy(portal, feedback_before="full", max_attempts=3)
    other = next(a for a in portal.assignments if a != ASSIGNMENT)
    alice = client_for(app, portal, "alice")
    assert portal.set_extension("alice", other, utcnow() + dt.timedelta(days=2))
    for marker in ("a", "b"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    portal.worker.run_until_idle()
    assert upload(alice, notebook_bytes("c")).status_code == 303               # one waiting

    def shown(view: dict) -> dict:
        return {**{k: v for k, v in view.items() if k not in ("policy", "attempts", "counting")},
                "attempts": [a.id for a in view["attempts"]], "counting": getattr(view["counting"], "id", None),
                "policy": {c.key: getattr(view["policy"], c.key) for c in view["policy"].__table__.columns}}
    statements.clear()
    own = {a: shown(portal.assignment_view("alice", a)) for a in portal.assignments}
    one_page = len(statements) / len(portal.assignments)
    statements.clear()
    home = [shown(view) for view in portal.overview("alice")]
    assert len(statements) == one_page
    assert home == [own[a] for a in portal.assignments]
    assert own[ASSIGNMENT]["left"] == 0 and own[ASSIGNMENT]["grade"] is not None and own[other]["extended"]


def test_every_requests_session_check_is_one_statement(app, portal, statements):
    """Who asks, with their link not revoked: one statement on every request (fails on the old code: two)."""
    client_for(app, portal, "alice")
    cookie = portal.sign_in(portal.new_link("bob"), "127.0.0.1")[1]
    statements.clear()
    assert portal.session(cookie).student_id == "bob"
    assert len(statements) == 1
    portal.revoke("bob")
    assert portal.session(cookie) is None


def test_a_students_pages_build_no_statement_of_their_own(app, portal, monkeypatch):
    """The session check, the home and assignment pages, an attempt and its status while it waits run statements
    built once, not built again for each request (fails on the old code: select() called on each)."""
    alice = client_for(app, portal, "alice")
    upload(alice, notebook_bytes("a"))
    cookie = alice.cookies.get(auth.SESSION_COOKIE)
    portal.status(portal.attempt("alice", 1))                   # the queue's order read once, into memory
    built = []
    for module in (auth, service, queue, gradebook):
        monkeypatch.setattr(module, "select", lambda *a, **k: built.append(a) or pytest.fail("a statement built"))
    assert portal.session(cookie).student_id == "alice"
    assert [v["name"] for v in portal.overview("alice")] == portal.assignments
    assert portal.assignment_view("alice", ASSIGNMENT)["attempts"][0].id == 1
    assert portal.own_status("alice", 1)[1]["status"] == Status.QUEUED
    assert portal.attempt("bob", 1) is None
    assert built == []


def test_a_pooled_connection_is_pinged_only_after_it_has_been_idle_and_replaced_when_dead(tmp_path, monkeypatch):
    """PostgreSQL's pool pings a connection before use only when it has been idle PING_IDLE_SECONDS (the server may
    have closed it), not at every checkout, a round trip on each of a request's sessions (fails on the old code:
    no such ping, pool_pre_ping at every checkout)."""
    assert not models.engine_for("postgresql+psycopg2://portal@127.0.0.1:1/none").pool._pre_ping
    engine = create_engine(f"sqlite:///{tmp_path}/pool.db", poolclass=QueuePool, pool_size=1, max_overflow=0)
    now, pings, real = [0.0], [], engine.dialect.do_ping
    monkeypatch.setattr(engine.dialect, "do_ping", lambda connection: pings.append(now[0]) or real(connection))
    models.ping_when_idle(engine, idle_seconds=10.0, clock=lambda: now[0])

    def used() -> object:
        with engine.connect() as connection:
            assert connection.execute(text("SELECT 2")).scalar() == 2
            now[0] += 1.0
            return connection.connection.dbapi_connection
    first = used()
    assert [used() for _ in range(3)] == [first] * 3 and pings == []          # busy: never pinged
    now[0] += 10.0
    assert used() is first and pings == [14.0]                                # idle: pinged, still good
    now[0] += 10.0

    def dead(connection):
        raise engine.dialect.loaded_dbapi.OperationalError("server closed the connection")
    monkeypatch.setattr(engine.dialect, "do_ping", dead)
    assert used() is not first                                                # replaced before anyone used it


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_the_pool_hands_out_the_connection_returned_last(tmp_path, request, database):
    """After a burst that opened several connections, the next session takes the one returned last, so the few a
    process uses most keep their prepared (PostgreSQL) or cached (SQLite) statements. Fails on the old code: a FIFO
    pool handed out the one returned first, every connection in turn, each preparing every statement again."""
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else f"sqlite:///{tmp_path / 'p.db'}"
    engine = models.engine_for(url)
    try:
        held = [engine.connect() for _ in range(3)]                       # three sessions at once
        raw = [connection.connection.dbapi_connection for connection in held]
        for connection in held:
            connection.close()                                            # returned in turn: the third last
        for _ in range(2):
            with engine.connect() as connection:
                assert connection.connection.dbapi_connection is raw[-1]
    finally:
        engine.dispose()


def test_a_pages_static_files_are_kept_by_the_browser_for_a_while_and_its_pages_are_not(app, portal):
    """The static files every page links (style, script, icon) may be kept by a browser for a while: every response
    was no-store, so a browser fetched all three again with every page. Every page stays no-store."""
    alice = client_for(app, portal, "alice")
    page = alice.get("/")
    assert page.headers["cache-control"] == "no-store"
    links = re.findall(r'(?:href|src)="(/static/[^"]+)"', page.text)
    assert len(links) == 3, links
    for link in links:
        kept = alice.get(link)
        assert kept.status_code == 200 and kept.headers["cache-control"] == pages.STATIC_KEPT
        assert kept.content == (pages.STATIC / link.removeprefix("/static/")).read_bytes()


def test_a_postgresql_session_begins_its_transaction_at_its_first_write_and_keeps_it_whole(postgres_url):
    """On PostgreSQL a session's plain reads run on their own until its first write (or locking read), which
    begins the one transaction of everything after it: psycopg2 sent BEGIN before every session's first read and
    ROLLBACK at its end, two round trips more for each session that only reads (fails on the old code: a read
    left a transaction open)."""
    from psycopg2.extensions import TRANSACTION_STATUS_IDLE, TRANSACTION_STATUS_INTRANS
    from sqlalchemy import select
    from sqlalchemy.exc import IntegrityError
    sessions = models.open_database(postgres_url)
    with sessions() as db:
        db.add(models.Student(id="alice"))
        db.commit()

    def status(db) -> int:
        return db.connection().connection.dbapi_connection.get_transaction_status()
    with sessions() as db:
        assert db.get(models.Student, "alice") is not None
        assert status(db) == TRANSACTION_STATUS_IDLE                      # a read alone: no transaction
        db.add(models.Student(id="bob"))
        db.flush()
        assert status(db) == TRANSACTION_STATUS_INTRANS
        db.add(models.Student(id="alice"))
        with pytest.raises(IntegrityError):
            db.flush()
    with sessions() as db:
        assert set(db.scalars(select(models.Student.id))) == {"alice"}    # bob went with the failed write
        assert status(db) == TRANSACTION_STATUS_IDLE
        db.execute(select(models.Student).with_for_update()).all()
        assert status(db) == TRANSACTION_STATUS_INTRANS                   # a lock is held by a transaction
    sessions.kw["bind"].dispose()


def test_a_postgresql_statement_run_for_many_rows_begins_the_transaction(postgres_url):
    """A write given many rows (psycopg2's executemany) begins the session's transaction as a write given one does,
    and goes with it when it is rolled back."""
    from psycopg2.extensions import TRANSACTION_STATUS_INTRANS
    from sqlalchemy import bindparam, update
    sessions = models.open_database(postgres_url)
    with sessions() as db:
        db.add_all([models.Student(id="alice", name="Alice"), models.Student(id="bob", name="Bob")])
        db.commit()
    renamed = (update(models.Student.__table__).where(models.Student.id == bindparam("student"))
               .values(name=bindparam("new_name")))
    with sessions() as db:
        db.connection().execute(renamed, [{"student": "alice", "new_name": "A"}, {"student": "bob", "new_name": "B"}])
        assert db.connection().connection.dbapi_connection.get_transaction_status() == TRANSACTION_STATUS_INTRANS
        db.rollback()
    with sessions() as db:
        assert dict(db.execute(select(models.Student.id, models.Student.name)).all()) == {"alice": "Alice",
                                                                                         "bob": "Bob"}
    sessions.kw["bind"].dispose()


def test_a_postgresql_engine_runs_its_statements_without_sqlalchemys_event_dispatch():
    """The transaction's start at the first write listens to the dialect's executions: as the engine's
    before_cursor_execute it turned on SQLAlchemy's event dispatch around every statement, ~100 Python calls each
    (358 -> 264 a session with one read; SQLite's 248). Fails on the old code: an engine listener."""
    engine = models.engine_for("postgresql+psycopg2://portal@127.0.0.1:1/none")
    assert not engine._has_events and not engine.dispatch.before_cursor_execute
    assert engine.dialect.dispatch.do_execute and engine.dialect.dispatch.do_executemany


def test_a_postgresql_connections_plain_reads_run_as_its_prepared_statements(postgres_url):
    """On PostgreSQL a plain read runs as a prepared statement of its connection, parsed once and planned once its
    generic plan is as good: psycopg2 sent each as text, parsed and planned again at every execution, most of the
    server's work on a student's page (fails on the old code: nothing prepared). A write, and a read first met inside
    a transaction, run as they are; a read the server cannot prepare runs as it is, the connection unharmed."""
    from psycopg2.extensions import TRANSACTION_STATUS_INTRANS
    sessions = models.open_database(postgres_url)
    with sessions() as db:
        db.add(models.Student(id="alice", name="Alice"))
        db.commit()

    def prepared(db) -> dict[str, int]:
        rows = db.connection().connection.dbapi_connection.cursor()
        rows.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
        return {statement.split(" AS ", 1)[1]: runs for statement, runs in rows.fetchall()}
    with sessions() as db:
        for _ in range(8):
            assert db.execute(select(models.Student.name).where(models.Student.id == "alice")).scalar() == "Alice"
        [(read, runs)] = [(statement, runs) for statement, runs in prepared(db).items()
                          if "portal_student" in statement]
        assert runs == 8 and "portal_student.id = $1" in read
        assert db.execute(text("SELECT :x IS NULL"), {"x": None}).scalar() is True     # $1's type unknown: as it is
        db.add(models.Student(id="bob", name="Bob"))
        db.flush()
        assert db.execute(text("SELECT name FROM portal_student WHERE id = :id"), {"id": "bob"}).scalar() == "Bob"
        assert db.execute(text("SELECT :x IS NULL"), {"x": 1}).scalar() is False
        assert db.connection().connection.dbapi_connection.get_transaction_status() == TRANSACTION_STATUS_INTRANS
        db.commit()
        found = prepared(db)
        assert not [statement for statement in found if "INSERT" in statement or "WHERE id = $1" in statement]
        assert db.execute(text("SELECT name FROM portal_student WHERE id = :id"), {"id": "bob"}).scalar() == "Bob"
        assert len(prepared(db)) == len(found) + 1                         # outside a transaction: prepared now
        db.connection().connection.dbapi_connection.cursor().execute("DEALLOCATE ALL")   # as a pooler between may
        assert db.execute(text("SELECT name FROM portal_student WHERE id = :id"), {"id": "bob"}).scalar() == "Bob"
        assert prepared(db) == {}                                          # none used again
    sessions.kw["bind"].dispose()


def test_on_postgresql_a_stores_gradebook_reads_run_as_the_portals_prepared_statements(course, postgres_url):
    """The worker's store on PostgreSQL reads and writes the gradebook through the portal's engine: its reads before
    the first write, and the comments read after it, run outside the transaction as prepared statements (fails on the
    old code: nbgrader's engine sent each as text inside the store's transaction, none through the portal's)."""
    from psycopg2.extensions import TRANSACTION_STATUS_IDLE
    database.move(course, postgres_url)
    moved = new_portal(Course(course.root))
    ran: list[tuple[str, bool, typing.Any]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        ran.append((statement, cursor.connection.get_transaction_status() == TRANSACTION_STATUS_IDLE,
                    cursor.connection))
    engine = moved.sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", seen)
    try:
        for student in ("alice", "bob"):
            assert upload(client_for(create_app(moved, start_worker=False), moved, student),
                          notebook_bytes(student)).status_code == 303
            assert moved.worker.run_until_idle() == 1
        for read in (gradebook.SUBMISSION_ID, gradebook.LAYOUT, gradebook.COMMENTS):
            runs = [(idle, connection.prepared.get(statement)) for statement, idle, connection in ran
                    if statement == str(read.compile(engine))]
            assert len(runs) == 2 and all(idle and execute for idle, execute in runs), (read, runs)
        assert any(statement.startswith("INSERT INTO grade") for statement, _, _ in ran)
        with moved.sessions() as db:
            assert set(gradebook.session_final_scores(db)) == {("alice", ASSIGNMENT), ("bob", ASSIGNMENT)}
    finally:
        event.remove(engine, "before_cursor_execute", seen)
        moved.worker.close()
        engine.dispose()


@pytest.mark.postgres
def test_on_postgresql_a_jobs_end_and_its_stores_promotion_are_each_a_transaction_of_their_own(course, postgres_url):
    """A graded job's end (its status, points and result) and the store's promotion of the attempt that counts are
    each their session's one write, committed right after: on PostgreSQL each runs with no BEGIN and COMMIT around
    it, two round trips fewer each (fails on the old code: each began a transaction, committed after it). The rows
    are those of before: graded, the one that counts promoted."""
    from psycopg2.extensions import TRANSACTION_STATUS_IDLE
    database.move(course, postgres_url)
    moved = new_portal(Course(course.root))
    ran: list[tuple[str, bool]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith("UPDATE portal_attempt"):
            ran.append((statement, cursor.connection.get_transaction_status() == TRANSACTION_STATUS_IDLE))
    engine = moved.sessions.kw["bind"]
    event.listen(engine, "after_cursor_execute", seen)
    try:
        alice = client_for(create_app(moved, start_worker=False), moved, "alice")
        for marker in ("a", "b"):
            assert upload(alice, notebook_bytes(marker)).status_code == 303
        assert moved.worker.run_until_idle() == 2
        ended = [alone for statement, alone in ran if "finished_at=" in statement]
        promoted = [alone for statement, alone in ran if "SET promoted" in statement]
        assert len(ended) == 2 and len(promoted) >= 1 and all(ended + promoted), ran
        with moved.sessions() as db:
            rows = db.execute(select(Attempt.id, Attempt.status, Attempt.promoted).order_by(Attempt.id)).all()
        counting = moved.worker.store_counting("alice", ASSIGNMENT)               # stored already: as it is
        assert [(status, promoted) for job, status, promoted in rows] == [(Status.GRADED, job == counting.id)
                                                                          for job, _, _ in rows]
    finally:
        event.remove(engine, "after_cursor_execute", seen)
        moved.worker.close()
        engine.dispose()


@pytest.mark.postgres
def test_on_postgresql_an_uploads_attempt_and_a_sign_ins_session_are_each_a_transaction_of_their_own(course,
                                                                                                    postgres_url):
    """An upload's new attempt and a sign-in's new session are each their session's one write, committed right
    after: on PostgreSQL each runs with no BEGIN and COMMIT around it, two round trips fewer each (fails on the old
    code: each began a transaction, committed after it). Both rows are there, as before."""
    from psycopg2.extensions import TRANSACTION_STATUS_IDLE
    database.move(course, postgres_url)
    moved = new_portal(Course(course.root))
    ran: list[tuple[str, bool]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if statement.startswith(("INSERT", "UPDATE", "DELETE")):
            alone = cursor.connection.get_transaction_status() == TRANSACTION_STATUS_IDLE
            ran.append((statement.split(" (")[0], alone))
    engine = moved.sessions.kw["bind"]
    token = moved.new_link("alice", "Alice")
    event.listen(engine, "after_cursor_execute", seen)
    try:
        outcome, cookie = moved.sign_in(token, "127.0.0.1")
        assert outcome == "ok"
        assert moved.upload_refusal("alice", ASSIGNMENT) is None
        outcome, job = moved.accept_upload("alice", ASSIGNMENT, "x.ipynb", notebook_bytes("a"))
        assert outcome == "queued"
        assert ran == [("INSERT INTO portal_session", True), ("INSERT INTO portal_attempt", True)], ran
        assert moved.session(cookie).student_id == "alice"
        assert moved.attempt("alice", job).status == Status.QUEUED
    finally:
        event.remove(engine, "after_cursor_execute", seen)
        moved.worker.close()
        engine.dispose()


@pytest.mark.postgres
def test_on_postgresql_a_write_that_is_a_transaction_of_its_own_runs_as_a_prepared_statement(postgres_url):
    """A grading slot's claim of its next job (an UPDATE finding the job, RETURNING its row) runs outside any
    transaction, so it is prepared as a plain read is: parsed and planned once a connection, where it was sent as
    text at every claim (fails on the old code: only plain reads were prepared). Each claim takes its own job; a write
    inside a transaction still runs as it is."""
    sessions = models.open_database(postgres_url)
    now = utcnow()
    with sessions() as db:
        db.add_all(models.Student(id=f"s{n}", name="") for n in range(3))
        db.flush()
        db.add_all(Attempt(student_id=f"s{n}", assignment="a", notebook="n", number=1, sha256="0" * 64, size=1,
                           uploaded_at=now, status=Status.QUEUED, runs=0) for n in range(3))
        db.commit()
    with sessions() as db:                  # a job graded lately: the claim's one statement finds the next
        db.execute(update(Attempt).where(Attempt.student_id == "s2").values(
            status=Status.GRADED, started_at=now - dt.timedelta(seconds=10), finished_at=now, grading_seconds=10.0))
        db.commit()
    claimed = []
    for _ in range(2):
        with sessions() as db:
            claimed.append(queue.claim_attempt(db, dt.timedelta(minutes=30), slots=2, claimer="slot-1"))
            rows = db.connection().connection.dbapi_connection.cursor()
            rows.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
            prepared = dict(rows.fetchall())
    assert [(job.student_id, job.status, job.runs) for job in claimed] == [("s0", Status.RUNNING, 1),
                                                                           ("s1", Status.RUNNING, 1)]
    [runs] = [runs for statement, runs in prepared.items() if " AS UPDATE portal_attempt SET status" in statement]
    assert runs == 2
    with sessions() as db:
        db.add(models.Student(id="s3", name=""))
        db.flush()                                               # a transaction now: the next write runs as it is
        db.execute(update(Attempt).where(Attempt.student_id == "s3").values(runs=5))
        db.commit()
        rows = db.connection().connection.dbapi_connection.cursor()
        rows.execute("SELECT statement FROM pg_prepared_statements")
        assert not [statement for (statement,) in rows.fetchall() if "runs=$1" in statement.replace(" ", "")]
    with sessions() as db:              # a transaction begun by hand on a connection in autocommit: nothing prepared
        cursor = db.connection().connection.dbapi_connection.cursor()
        cursor.execute("BEGIN")
        cursor.execute("SELECT %(x)s IS NULL", {"x": None})          # its PREPARE would fail, and the transaction
        assert cursor.fetchone() == (True,)
        cursor.execute("ROLLBACK")
    sessions.kw["bind"].dispose()


def test_a_statement_is_sent_to_be_prepared_with_its_parameters_numbered():
    from posenc_autograder.portal import prepared
    assert prepared.server_form("SELECT a FROM t WHERE b = %(b)s AND c LIKE 'x%%' AND d = %(b)s OR e = %(e_1)s") == (
        "SELECT a FROM t WHERE b = $1 AND c LIKE 'x%' AND d = $1 OR e = $2", ["b", "e_1"])
    assert prepared.server_form("SELECT a FROM t WHERE b = %s") is None


@pytest.mark.parametrize(("statement", "alone"), [
    ("SELECT portal_attempt.id FROM portal_attempt WHERE status = %(s)s", True),
    ("\n  select 1", True),
    ("SELECT id FROM portal_attempt FOR UPDATE", False),
    ("SELECT id FROM portal_attempt\nFOR  NO KEY UPDATE SKIP LOCKED", False),
    ("SELECT id FROM portal_attempt FOR SHARE", False),
    ("UPDATE portal_attempt SET runs = 1", False),
    ("INSERT INTO portal_student (id) VALUES ('a')", False),
    ("WITH gone AS (DELETE FROM portal_session RETURNING id) SELECT count(*) FROM gone", False),
    ("SELECTED", False),
])
def test_only_a_plain_select_runs_outside_the_transaction(statement, alone):
    assert bool(models.ONLY_READS.match(statement)) is alone


def test_whether_a_statement_only_reads_is_worked_out_once_a_statement(monkeypatch):
    """The pattern's look-ahead took 0.05-0.28 ms a statement (the final scores' 1,583 characters the most), and
    the web process asked it at each of a request's reads on PostgreSQL (fails on the old code: matched every
    time)."""
    from posenc_autograder.portal import plain_reads
    matched = []

    class Counted:
        def match(self, statement: str):
            matched.append(statement)
            return models.ONLY_READS.match(statement)
    monkeypatch.setattr(plain_reads, "ONLY_READS", Counted())
    statement = f"SELECT {id(matched)} FROM portal_attempt WHERE id = %(id)s"       # no earlier test's
    assert [plain_reads.only_reads(statement) for _ in range(5)] == [True] * 5
    assert matched == [statement]


def test_the_courses_rules_are_made_once_for_every_page_until_course_toml_changes(app, portal, course, monkeypatch):
    """An assignment without saved rules has the course's ([portal] in course.toml): made once and read by every
    page, status and upload after (each made them again, ~0.15 ms each, several times a request), and made again
    once course.toml changes."""
    import os

    from posenc_autograder import settings
    from posenc_autograder.portal import policy
    made, real = [], policy.defaults

    def defaults(assignment, portal_defaults):
        made.append(assignment)
        return real(assignment, portal_defaults)
    monkeypatch.setattr(policy, "defaults", defaults)
    client_for(app, portal, "alice")
    for _ in range(3):
        portal.assignment_view("alice", ASSIGNMENT)
        with portal.sessions() as db:
            assert portal.worker.policy_for(db, ASSIGNMENT).max_queued == 2
    assert made.count(ASSIGNMENT) == 1                                 # old code: 7 (the home page too)
    toml = course.path(settings.SETTINGS_FILE)
    toml.write_text("[portal]\nmax_queued = 5\n")
    os.utime(toml, ns=(1, 1))                                         # a time of its own, whatever the clock's tick
    with portal.sessions() as db:
        assert portal.worker.policy_for(db, ASSIGNMENT).max_queued == 5
    assert portal.assignment_view("alice", ASSIGNMENT)["policy"].max_queued == 5


def test_a_graded_status_read_before_its_store_reads_no_grade(app, portal, statements, monkeypatch):
    """Fails on the old code: a graded attempt's status read the student's final scores from the gradebook even
    when the attempt was not stored as the one that counts (a graded status is read before its store), where only
    a counting attempt's points come from them."""
    set_policy(portal, feedback_before="full")
    upload(client_for(app, portal, "alice"), notebook_bytes("a"))
    monkeypatch.setattr(portal.worker, "store_counting_safely", lambda student, assignment: None)
    assert portal.worker.run_until_idle() == 1
    with portal.sessions() as db:
        graded = db.get(Attempt, 1)
    assert graded.status == Status.GRADED and not graded.promoted
    statements.clear()
    shown = portal.status(graded)
    assert shown["score"] == graded.score and shown["max_score"] == graded.max_score      # its own points
    assert not [s for s in statements if "FROM assignment JOIN submitted_assignment" in s]
    monkeypatch.undo()
    portal.worker.store_counting("alice", ASSIGNMENT)
    with portal.sessions() as db:
        stored = db.get(Attempt, 1)
    statements.clear()
    assert stored.promoted and portal.status(stored)["score"] == stored.score
    assert [s for s in statements if "FROM assignment JOIN submitted_assignment" in s]   # its grade, read


def test_a_status_stream_reads_the_session_once_for_its_first_event(app, portal, statements):
    """Fails on the old code: the stream's first event read the session the request had just checked again (each
    later event checks it, so a revoked link or a sign-out ends the stream)."""
    alice = client_for(app, portal, "alice")
    upload(alice, notebook_bytes("a"))
    portal.worker.run_until_idle()
    statements.clear()
    answer = alice.get("/attempts/1/status.events")
    assert answer.status_code == 200 and '"status":"graded"' in answer.text
    assert sum("FROM portal_session" in s for s in statements) == 1


def test_an_upload_numbers_its_attempt_from_the_attempts_it_read(app, portal, statements):
    """Fails on the old code: the new attempt's number was read again (the largest of the student's), after the
    upload's check had read every attempt of theirs at the assignment."""
    alice = client_for(app, portal, "alice")
    statements.clear()
    for marker in ("a", "b"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    assert not [s for s in statements if "max(portal_attempt.number)" in s]
    with portal.sessions() as db:
        assert [a.number for a in db.execute(select(Attempt).order_by(Attempt.id)).scalars()] == [1, 2]


def test_an_uploads_each_decision_reads_the_rules_in_one_statement_and_the_attempts_in_another(app, portal,
                                                                                               statements):
    """An upload is decided twice (before its body is read, then with its file), each time on the rows as they are:
    the assignment's saved rules, the student's saved extension and how many of their uploads wait, in one statement;
    their attempts at it in another (fails on the old code: four statements each time). Each rule decides as before:
    an extension past the deadline, the uploads waiting, the deadline for a student without one."""
    now = utcnow()
    set_policy(portal, deadline=now - dt.timedelta(hours=1), grace_minutes=0, late_days=0, max_queued=1,
               min_seconds_between=0)
    client_for(app, portal, "alice")
    client_for(app, portal, "bob")
    assert portal.set_extension("alice", ASSIGNMENT, now + dt.timedelta(days=2))

    def reads() -> int:
        return sum(statement.lstrip().startswith("SELECT") for statement in statements)
    statements.clear()
    assert portal.upload_refusal("alice", ASSIGNMENT) is None and reads() == 2
    statements.clear()
    assert portal.accept_upload("alice", ASSIGNMENT, "x.ipynb", notebook_bytes("a"))[0] == "queued" and reads() == 2
    statements.clear()
    assert "1 upload waiting" in portal.upload_refusal("alice", ASSIGNMENT) and reads() == 2
    assert portal.accept_upload("alice", ASSIGNMENT, "x.ipynb", notebook_bytes("b"))[0] == "refused"
    assert "has passed" in portal.upload_refusal("bob", ASSIGNMENT)
    with portal.sessions() as db:
        policy, extension = portal.dates_for(db, "alice", ASSIGNMENT)
        assert (policy.max_queued, extension.deadline) == (1, portal.extension_for(db, "alice", ASSIGNMENT).deadline)
        assert portal.dates_for(db, "bob", ASSIGNMENT)[1] is None


def test_a_job_is_graded_from_the_row_its_claim_read(app, portal, statements):
    """Fails on the old code: grading a job read its row again after the claim had read it, and its short run's
    question (does another student's job wait?) read it a third time."""
    set_policy(portal, feedback_before="full")
    for student in ("alice", "bob"):
        upload(client_for(app, portal, student), notebook_bytes(student))
    statements.clear()
    assert portal.worker.run_until_idle() == 2
    by_id = [s for s in statements if s.startswith("SELECT portal_attempt.id") and "WHERE portal_attempt.id = " in s]
    assert len(by_id) == 2 * 1            # each job: its evidence's look at its promotion (its claim returns its row)


def test_the_saved_rules_and_extension_are_read_by_statements_built_once(app, portal, monkeypatch):
    """A page, an upload's check and a graded status read the assignment's saved rules and the student's extension
    by statements built once, not Session.get (which builds its SELECT at every call: 0.32 against 0.17 ms); the
    same rows as before (fails on the old code: Session.get of each)."""
    from sqlalchemy.orm import Session as DatabaseSession

    from posenc_autograder.portal.models import Extension, Policy
    alice = client_for(app, portal, "alice")
    set_policy(portal, max_attempts=7, feedback_before="full")
    assert portal.set_extension("alice", ASSIGNMENT, dt.datetime(2099, 1, 2, 3, 4))
    upload(alice, notebook_bytes("a"))
    assert portal.worker.run_until_idle() == 1
    got, real = [], DatabaseSession.get

    def counted(self, entity, *args, **kwargs):
        got.append(entity)
        return real(self, entity, *args, **kwargs)
    monkeypatch.setattr(DatabaseSession, "get", counted)
    view = portal.assignment_view("alice", ASSIGNMENT)
    assert portal.upload_refusal("alice", ASSIGNMENT) is None
    with portal.sessions() as db:
        policy, extension = portal.dates_for(db, "alice", ASSIGNMENT)
    status = portal.own_status("alice", 1)[1]
    assert [entity for entity in got if entity in (Policy, Extension)] == []
    assert view["policy"].max_attempts == policy.max_attempts == 7 and view["extended"]
    assert extension.deadline == dt.datetime(2099, 1, 2, 3, 4) and status["score"] is not None
    with portal.sessions() as db:
        assert portal.extension_for(db, "bob", ASSIGNMENT) is None                    # none saved: none
        assert portal.worker.policy_for(db, "no-such-assignment").max_attempts is not None   # the course's


def test_the_course_settings_are_read_with_one_stat_of_their_file(course, monkeypatch):
    """Every page and status asks for the course's settings several times: one stat of course.toml a call (fails on
    the old code: two, is_file then stat), read again when it changes, the defaults when it is not a file."""
    import os

    from posenc_autograder import settings
    toml = course.path(settings.SETTINGS_FILE)
    toml.write_text("[portal]\nmax_queued = 4\n")
    stats, real = [], os.stat

    def counted(path, *args, **kwargs):
        stats.append(str(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "stat", counted)
    assert settings.load(course).portal.max_queued == 4
    assert stats.count(str(toml)) == 1
    toml.write_text("[portal]\nmax_queued = 6\n")
    os.utime(toml, ns=(1, 1))                                         # a time of its own, whatever the clock's tick
    assert settings.load(course).portal.max_queued == 6
    toml.unlink()
    toml.mkdir()                                                      # not a file: the defaults
    assert settings.load(course) == settings.Settings()
