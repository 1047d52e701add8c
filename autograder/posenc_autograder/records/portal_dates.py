"""Deadlines the portal keeps in the gradebook's database: each assignment's (its policy) and each student's
extension. Read as plain tables, both through one engine, so the class files need nothing of the portal; none when
it never ran. records/ comes before portal/, so the names of what is read are declared here and the portal's models
(portal/models.py: Policy, Extension) take their table and column names from them."""
from __future__ import annotations

import dataclasses
import datetime as dt
import typing

from posenc_autograder.course import Course

UTC = dt.timezone.utc
POLICY_TABLE, EXTENSION_TABLE = "portal_policy", "portal_extension"
STUDENT, ASSIGNMENT, DEADLINE = "student_id", "assignment", "deadline"      # their columns read here
POLICY = (POLICY_TABLE, (ASSIGNMENT, DEADLINE))
EXTENSION = (EXTENSION_TABLE, (STUDENT, ASSIGNMENT, DEADLINE))


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
