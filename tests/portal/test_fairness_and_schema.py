"""A fair queue (rounds between students, a cap on a student's waiting uploads, a default rate, the notebook's
time stated in the policy and given to the sandbox), ties to the on-time attempt, and the portal's tables
migrated when a column is added to an existing database."""
import datetime as dt
import json
import re

from fixture_submissions import ASSIGNMENT
from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine

from conftest import client_for, csrf_of, notebook_bytes, upload
from posenc_autograder.portal import policy as rules
from posenc_autograder.portal import queue
from posenc_autograder.portal.models import SCHEMA_VERSION, Attempt, Policy, open_database


def test_a_classmate_waits_behind_one_job_of_a_student_who_uploaded_eight(app, portal):
    flooder, classmate = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    portal.set_policy(ASSIGNMENT, {"max_queued": 0})
    for n in range(8):
        assert upload(flooder, notebook_bytes(f"flood {n}")).status_code == 303
    answer = upload(classmate, notebook_bytes("bob's only"))
    bobs = int(answer.headers["location"].rsplit("/", 1)[1])
    assert json.loads(classmate.get(f"/attempts/{bobs}/status.json").text)["ahead"] == 1
    with portal.sessions() as db:
        first = queue.claim(db)                  # alice's first: running now, so bob's is next
        assert queue.fair_order(db)[0] == bobs
        assert queue.claim(db) == bobs and first != bobs


def test_a_students_waiting_uploads_are_capped_by_default(app, portal):
    alice = client_for(app, portal, "alice")
    for n in range(rules.defaults(ASSIGNMENT).max_queued):
        assert upload(alice, notebook_bytes(f"waiting {n}")).status_code == 303
    refused = upload(alice, notebook_bytes("one too many"))
    assert refused.status_code == 403 and "waiting to be graded" in refused.text
    portal.worker.run_until_idle()
    assert upload(alice, notebook_bytes("one too many")).status_code == 303


def test_the_default_policy_has_a_rate_and_states_the_notebooks_time(app, portal):
    alice = client_for(app, portal, "alice")
    page = alice.get(f"/assignments/{ASSIGNMENT}").text
    defaults = rules.defaults(ASSIGNMENT)
    assert defaults.max_per_day > 0 and f"at most {defaults.max_per_day} in 24 hours" in page
    assert f"may run {defaults.notebook_seconds} s in the grader" in page


def test_the_notebooks_time_in_the_policy_is_the_sandboxs_limit(app, portal):
    alice = client_for(app, portal, "alice")
    portal.set_policy(ASSIGNMENT, {"notebook_seconds": 45})
    assert upload(alice, notebook_bytes("timed")).status_code == 303
    seen = []
    portal.worker.execute = lambda task: seen.append(task.limits["notebook_seconds"]) or _no_answers(task)
    portal.worker.run_until_idle()
    assert seen == [45]


def _no_answers(task):
    from posenc_autograder.grading.execute import Execution
    return Execution(task.key, {}, [], {}, 0.01)


def test_the_instructor_sets_the_time_and_the_cap_in_the_form(app, portal):
    from test_access import instructor_client
    teacher = instructor_client(app, portal)
    form = {"csrf": csrf_of(teacher, "/instructor"), "counts": "best", "feedback_before": "full",
            "notebook_seconds": "60", "max_queued": "1"}
    assert teacher.post(f"/instructor/policy/{ASSIGNMENT}", data=form, follow_redirects=False).status_code == 303
    with portal.sessions() as db:
        saved = db.get(Policy, ASSIGNMENT)
    assert (saved.notebook_seconds, saved.max_queued) == (60, 1)


OLD_POLICY_TABLE = """CREATE TABLE portal_policy (assignment VARCHAR(64) PRIMARY KEY, opens_at DATETIME,
    deadline DATETIME, grace_minutes INTEGER, late_days INTEGER, max_attempts INTEGER, max_per_day INTEGER,
    min_seconds_between INTEGER, counts VARCHAR(8), feedback_before VARCHAR(8), inputs_before_deadline BOOLEAN)"""


def test_a_database_of_the_first_schema_gains_the_new_columns_with_their_defaults(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with create_engine(url).begin() as connection:
        connection.execute(text(OLD_POLICY_TABLE))
        connection.execute(text("INSERT INTO portal_policy VALUES ('pe', NULL, NULL, 0, 0, 2, 0, 0, 'last', "
                                "'none', 0)"))
    sessions = open_database(url)
    with sessions() as db:
        kept = db.get(Policy, "pe")
        assert (kept.max_attempts, kept.counts, kept.feedback_before) == (2, "last", "none")
        assert (kept.notebook_seconds, kept.max_queued) == (rules.defaults("pe").notebook_seconds,
                                                            rules.defaults("pe").max_queued)
        assert db.execute(text("SELECT version FROM portal_schema")).scalar_one() == SCHEMA_VERSION
    open_database(url)                                       # again: nothing left to do, nothing fails


OLD_ATTEMPT_TABLE = """CREATE TABLE portal_attempt (id INTEGER PRIMARY KEY, student_id VARCHAR(64)
    REFERENCES portal_student (id) ON DELETE CASCADE, assignment VARCHAR(64), notebook VARCHAR(64), number INTEGER,
    sha256 VARCHAR(64), size INTEGER, uploaded_at DATETIME, late BOOLEAN, status VARCHAR(8), started_at DATETIME,
    finished_at DATETIME, runs INTEGER, score FLOAT, max_score FLOAT, result_json TEXT, promoted BOOLEAN,
    UNIQUE (student_id, assignment, sha256), UNIQUE (student_id, assignment, number))"""


def test_a_database_whose_attempts_held_a_file_once_takes_the_same_file_again_and_keeps_its_rows(tmp_path):
    """Schema 10: a file uploaded again after another is a new row; an older table (the file unique) is made again
    with its rows, its other columns added with their defaults and its indexes made."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with create_engine(url).begin() as connection:
        connection.execute(text("CREATE TABLE portal_student (id VARCHAR(64) PRIMARY KEY, name VARCHAR(200))"))
        connection.execute(text(OLD_ATTEMPT_TABLE))
        connection.execute(text("INSERT INTO portal_student VALUES ('alice', 'Alice')"))
        connection.execute(text("INSERT INTO portal_attempt (id, student_id, assignment, notebook, number, sha256, "
                                "size, uploaded_at, late, status, runs, promoted) VALUES (7, 'alice', 'pe', 'pe', 1, "
                                "'x', 1, '2026-11-20 09:30:00', 0, 'graded', 1, 1)"))
    sessions = open_database(url)
    with sessions() as db:
        kept = db.get(Attempt, 7)
        assert (kept.sha256, kept.door, kept.grading_seconds, kept.promoted) == ("x", "portal", 0.0, True)
        db.add(Attempt(student_id="alice", assignment="pe", notebook="pe", number=3, sha256="x", size=1,
                       uploaded_at=kept.uploaded_at, status="queued"))
        db.commit()
        assert db.execute(text("SELECT count(*) FROM portal_attempt WHERE sha256 = 'x'")).scalar_one() == 2
    indexes = {index["name"] for index in inspect(create_engine(url)).get_indexes("portal_attempt")}
    assert {"ix_portal_attempt_file", "ix_portal_attempt_status", "ix_portal_attempt_finished_at"} <= indexes
    open_database(url)                                       # again: nothing left to do, nothing fails


def test_a_database_at_the_current_schema_is_opened_with_two_queries_and_a_missing_table_is_made_again(tmp_path,
                                                                                                       monkeypatch):
    """A portal and each of its grading processes open the database at every start: one already made is read for
    its table names and its version only (the old code read each table's columns and compiled its DDL again)."""
    url = f"sqlite:///{tmp_path / 'portal.db'}"
    open_database(url).kw["bind"].dispose()
    statements = []

    def note(_connection, _cursor, statement, *_):
        statements.append(statement)
    # A listener on the class marks every Engine as having events, and removing it does not clear the mark: put back
    # as it was, or a later test of this process finds its new engines dispatching events
    monkeypatch.setattr(Engine, "_has_events", Engine._has_events)
    event.listen(Engine, "before_cursor_execute", note)
    try:
        open_database(url).kw["bind"].dispose()
    finally:
        event.remove(Engine, "before_cursor_execute", note)
    assert len(statements) == 2 and not any("CREATE" in s or "PRAGMA" in s for s in statements), statements
    with create_engine(url).begin() as connection:
        connection.execute(text("DROP TABLE portal_policy"))
    with open_database(url)() as db:
        assert db.get(Policy, "pe") is None                     # the table is there again


STUDENT_URLS = ["/", f"/assignments/{ASSIGNMENT}", "/attempts/{id}", "/attempts/{id}/feedback"]


def score_traces(client, attempt_id: int) -> list[str]:
    """Every place a page or the status JSON shows a score, points, case counts or which attempt counts."""
    found = []
    for url in STUDENT_URLS:
        text = client.get(url.format(id=attempt_id)).text
        found += [f"{url}: {mark}" for mark in (r"\d / \d", 'class="tag">counts', "Score:", r"\d/\d+ cases passed")
                  if re.search(mark, text)]
    status = json.loads(client.get(f"/attempts/{attempt_id}/status.json").text)
    found += [f"status.json: {key}" for key in ("score", "max_score") if status[key] is not None]
    return found


def test_hidden_scores_leave_no_trace_on_any_page_or_json(app, portal):
    alice = client_for(app, portal, "alice")
    assert upload(alice, notebook_bytes("graded")).status_code == 303
    portal.worker.run_until_idle()
    deadline = {"deadline": dt.datetime(2100, 1, 1)}
    portal.set_policy(ASSIGNMENT, {**deadline, "feedback_before": "full"})
    assert len(score_traces(alice, 1)) >= 4            # shown: the check sees them
    portal.set_policy(ASSIGNMENT, {**deadline, "feedback_before": "none"})
    assert score_traces(alice, 1) == []
    portal.set_policy(ASSIGNMENT, {**deadline, "feedback_before": "tests", "points_before_deadline": False})
    assert score_traces(alice, 1) == []
    assert "failed" in alice.get("/attempts/1/feedback").text               # pass or fail per test still shows
