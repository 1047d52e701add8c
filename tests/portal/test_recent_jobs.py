"""The wait a student is shown averages the class's most recent jobs: read by an index on when each job finished (each
grading process reads it at every claim, the web process at every change of the queue), never by sorting every attempt
the portal ever graded; a database made before the index gains it when opened."""
from query_plans import sqlite_plan
from sqlalchemy import create_engine, text

from posenc_autograder.portal import queue
from posenc_autograder.portal.models import SCHEMA_VERSION, open_database


def _plan_of_the_recent_jobs(sessions) -> str:
    """SQLite's plan for the statement queue.mean_job_seconds runs."""
    return sqlite_plan(sessions, queue.mean_job_seconds)


def test_the_recent_jobs_are_read_by_an_index_on_when_they_finished(tmp_path):
    plan = _plan_of_the_recent_jobs(open_database(f"sqlite:///{tmp_path / 'portal.db'}"))
    assert "INDEX" in plan and "TEMP B-TREE" not in plan and "SCAN" not in plan, plan   # old code: SCAN, TEMP B-TREE


def test_a_database_made_before_the_index_gains_it_when_opened(tmp_path):
    url = f"sqlite:///{tmp_path / 'portal.db'}"
    open_database(url).kw["bind"].dispose()
    with create_engine(url).begin() as connection:               # as a portal of the schema before made it
        connection.execute(text("DROP INDEX ix_portal_attempt_finished_at"))
        connection.execute(text("UPDATE portal_schema SET version = 8"))
    sessions = open_database(url)
    assert "TEMP B-TREE" not in _plan_of_the_recent_jobs(sessions)
    with sessions() as db:
        assert db.execute(text("SELECT version FROM portal_schema")).scalar_one() == SCHEMA_VERSION
    open_database(url)                                            # again: nothing left to do, nothing fails
