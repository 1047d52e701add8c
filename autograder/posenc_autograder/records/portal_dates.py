"""Deadlines the portal keeps in the gradebook's database: each assignment's (its policy) and each student's
extension. Read as plain tables, so the class files need nothing of the portal; none when it never ran."""
from __future__ import annotations

import datetime as dt

from posenc_autograder.course import Course

UTC = dt.timezone.utc


def _rows(course: Course, table: str, columns: tuple[str, ...]) -> list[tuple]:
    from sqlalchemy import MetaData, Table, create_engine, inspect, select   # only when a late policy needs it
    engine = create_engine(course.gradebook_url)
    try:
        if not inspect(engine).has_table(table):
            return []
        found = Table(table, MetaData(), autoload_with=engine)
        with engine.connect() as connection:
            return list(connection.execute(select(*(found.c[c] for c in columns))))
    finally:
        engine.dispose()


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value   # stored naive UTC


def deadlines(course: Course) -> dict[str, dt.datetime]:
    """assignment -> the deadline set in the portal."""
    return {a: _aware(d) for a, d in _rows(course, "portal_policy", ("assignment", "deadline")) if d is not None}


def extensions(course: Course) -> dict[tuple[str, str], dt.datetime]:
    """(student, assignment) -> the extended deadline granted in the portal."""
    return {(s, a): _aware(d) for s, a, d in _rows(course, "portal_extension", ("student_id", "assignment", "deadline"))
            if d is not None}
