"""Deadlines the portal keeps in the gradebook's database: each assignment's (its policy) and each student's
extension. Read as plain tables, both through one engine, so the class files need nothing of the portal (records/
comes before portal/: the table and column names are the portal's models', portal/models.py Policy and Extension);
none when it never ran."""
from __future__ import annotations

import dataclasses
import datetime as dt
import typing

from posenc_autograder.course import Course

UTC = dt.timezone.utc
POLICY = ("portal_policy", ("assignment", "deadline"))
EXTENSION = ("portal_extension", ("student_id", "assignment", "deadline"))


@dataclasses.dataclass(frozen=True)
class PortalDates:
    deadlines: dict[str, dt.datetime]                          # assignment -> the deadline set in the portal
    extensions: dict[tuple[str, str], dt.datetime]             # (student, assignment) -> the extended deadline


def read(course: Course) -> PortalDates:
    """Both tables, read once (a late policy reads them once per run)."""
    from sqlalchemy import MetaData, Table, create_engine, inspect, select  # only when a late policy needs it
    engine = create_engine(course.gradebook_url)
    try:
        present = set(inspect(engine).get_table_names())
        rows = {}
        with engine.connect() as connection:
            for table, columns in (POLICY, EXTENSION):
                found = Table(table, MetaData(), autoload_with=connection) if table in present else None
                rows[table] = list(connection.execute(select(*(found.c[c] for c in columns)))) if found is not None \
                    else []
    finally:
        engine.dispose()
    return PortalDates({a: aware(d) for a, d in rows[POLICY[0]] if d is not None},
                       {(s, a): aware(d) for s, a, d in rows[EXTENSION[0]] if d is not None})


@typing.overload
def aware(value: dt.datetime) -> dt.datetime: ...
@typing.overload
def aware(value: None) -> None: ...
def aware(value: dt.datetime | None) -> dt.datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value   # stored naive UTC
