"""A new gradebook is made in-process: nbgrader's tables and alembic's stamp of nbgrader's newest revision, the same
database nbgrader's own Gradebook makes, without the `alembic heads` subprocess it starts for every new database."""
import os
import pathlib
import sqlite3
import subprocess
import sys

import pytest
from fixture_submissions import make_course

from posenc_autograder.course import COURSE_ID, Course, open_gradebook


def _schema(path) -> tuple:
    with sqlite3.connect(path) as db:
        return (db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name").fetchall(),
                db.execute("SELECT version_num FROM alembic_version").fetchall(),
                db.execute("SELECT id FROM course").fetchall())


def test_a_new_gradebook_is_nbgraders_own_made_without_a_subprocess(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    stock = tmp_path / "stock.db"
    with monkeypatch.context() as patch:             # nbgrader's way: `alembic heads`, found on PATH
        patch.setenv("PATH", f"{pathlib.Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        Gradebook(f"sqlite:///{stock}", course_id=COURSE_ID).close()
    ours = tmp_path / "ours.db"
    course = Course(make_course(tmp_path / "course", registered=False), db_url=f"sqlite:///{ours}")

    def refuse(*args, **kwargs):
        raise AssertionError(f"a subprocess was started: {args}")

    with monkeypatch.context() as patch:
        patch.setattr(subprocess, "Popen", refuse)
        with open_gradebook(course) as gb:
            assert gb.course_id == COURSE_ID and gb.assignments == []
    assert _schema(ours) == _schema(stock)


def test_a_database_holding_nbgraders_tables_is_left_as_it_is(tmp_path):
    """nbgrader's Gradebook stamps only an empty database; one with its tables (an older course) is not restamped."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE course (id VARCHAR(128) NOT NULL PRIMARY KEY)")
    course = Course(make_course(tmp_path / "course", registered=False), db_url=f"sqlite:///{path}")
    with open_gradebook(course):
        pass
    with sqlite3.connect(path) as db, pytest.raises(sqlite3.OperationalError, match="no such table"):
        db.execute("SELECT * FROM alembic_version")
