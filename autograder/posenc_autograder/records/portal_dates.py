"""Deadlines the portal keeps in the gradebook's database: each assignment's (its policy) and each student's
extension. Read as plain tables, both through one engine, so the class files need nothing of the portal; none when
it never ran. records/ comes before portal/, so the names of what is read are declared here and the portal's models
(portal/models.py: Policy, Extension) take their table and column names from them."""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
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


def read(course: Course, connection: typing.Any = None, student: str | None = None) -> PortalDates:
    """Both tables, read once (a late policy reads them once per run). `connection`: an open connection or session
    on the gradebook's database that holds the portal's tables (the portal's own: no engine made, nothing
    inspected); `student`: only their extensions (a late policy for one student's page or store)."""
    from sqlalchemy import create_engine, inspect  # only when a late policy needs it
    if connection is not None:
        return _dates(connection, {POLICY_TABLE, EXTENSION_TABLE}, student)
    engine = create_engine(course.gradebook_url)
    try:
        present = set(inspect(engine).get_table_names())
        with engine.connect() as opened:
            return _dates(opened, present, student)
    finally:
        engine.dispose()


def _dates(connection: typing.Any, present: set[str], student: str | None) -> PortalDates:
    """The tables' rows through `connection`, as plain columns (their names are all that is needed: nothing is
    reflected, which cost ~10 ms a read)."""
    policies, extensions, students_extensions, both = _statements()
    if student is not None and {POLICY_TABLE, EXTENSION_TABLE} <= present:
        together = list(connection.execute(both, {"student": student}))          # one round trip, not two
        rows: dict[str, list[typing.Any]] = {POLICY_TABLE: [(a, d) for s, a, d in together if s is None],
                EXTENSION_TABLE: [(s, a, d) for s, a, d in together if s is not None]}
    else:
        rows = {POLICY_TABLE: list(connection.execute(policies)) if POLICY_TABLE in present else [],
                EXTENSION_TABLE: [] if EXTENSION_TABLE not in present else list(connection.execute(extensions))
                if student is None else list(connection.execute(students_extensions, {"student": student}))}
    return PortalDates({a: aware(d) for a, d in rows[POLICY[0]] if d is not None},
                       {(s, a): aware(d) for s, a, d in rows[EXTENSION[0]] if d is not None})


@functools.cache
def _statements() -> tuple[typing.Any, typing.Any, typing.Any, typing.Any]:
    """(every policy's deadline, every extension, one student's extensions, both of these last in one statement: the
    policies' rows with no student): built once, as building one cost more than running it on SQLite (a graded
    attempt's status reads them at each request; on PostgreSQL each statement is a round trip to the server)."""
    from sqlalchemy import DateTime, String, bindparam, cast, column, null, select, table, union_all
    policy, extension = (table(name, *(column(c, DateTime if c == DEADLINE else String) for c in columns))
                         for name, columns in (POLICY, EXTENSION))
    every_policy = select(*(policy.c[c] for c in POLICY[1]))
    every_extension = select(*(extension.c[c] for c in EXTENSION[1]))
    students = every_extension.where(extension.c[STUDENT] == bindparam("student"))
    both = union_all(select(cast(null(), String).label(STUDENT), *every_policy.selected_columns), students)
    return every_policy, every_extension, students, both


@typing.overload
def aware(value: dt.datetime) -> dt.datetime: ...
@typing.overload
def aware(value: None) -> None: ...
def aware(value: dt.datetime | None) -> dt.datetime | None:
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value   # stored naive UTC
