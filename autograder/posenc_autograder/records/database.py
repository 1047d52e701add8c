"""The course's database: whether a database a command is pointed at is the one its grades are in, and moving
the course to another one (`make move-db TO=<url>`) with every table and row.

Where the database is: `--db-url` (DB_URL=...), else the URL `make move-db` recorded in autograder/database_url,
else the SQLite gradebook in autograder/ (course.Course.gradebook_url). The files beside it (results, feedback,
submissions, the record of attempts) stay where they are, so a database that holds none of the graded students'
submissions is another course's or a new one: a command pointed there would lose manual grades, comments and
sign-in links, so it stops and says how to move the course instead.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
from typing import TYPE_CHECKING, Any

from posenc_autograder import words
from posenc_autograder.course import DATABASE_FILE, Course, open_gradebook
from posenc_autograder.records import results_store, stamps

if TYPE_CHECKING:       # SQLAlchemy is imported where a move needs it
    from sqlalchemy import Connection, Engine, MetaData

CHECKED = "database"                 # the stamp of the last database found to hold the course's grades


def shown(url: str) -> str:
    """A URL as it may be printed: its password hidden."""
    from sqlalchemy.engine import make_url
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as given, it holds nothing to hide
        return url


def graded_submissions(course: Course) -> set[tuple[str, str]]:
    """(student, assignment) of every stored result whose submission is still in submitted/ (by the files' names:
    no record is read)."""
    found = {(file.parent.parent.name, file.parent.name)
             for file in course.autograded.glob(f"*/*/*{results_store.SUFFIX}")}
    return {(student, assignment) for student, assignment in found
            if (course.submitted / student / assignment).is_dir()}


def submissions_in(url: str) -> set[tuple[str, str]]:
    """(student, assignment) of every submission nbgrader's tables in the database hold (none: no tables)."""
    from sqlalchemy import create_engine, inspect, text
    engine = create_engine(url)
    try:
        with engine.connect() as db:
            if not {"submitted_assignment", "assignment"} <= set(inspect(db).get_table_names()):
                return set()
            return {tuple(row) for row in db.execute(text(
                "SELECT s.student_id, a.name FROM submitted_assignment s JOIN assignment a ON s.assignment_id = a.id"))}
    finally:
        engine.dispose()


def reachable_submissions(url: str) -> set[tuple[str, str]]:
    """submissions_in, or ForeignDatabase saying why the database cannot be read."""
    from sqlalchemy.exc import SQLAlchemyError
    try:
        return submissions_in(url)
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise ForeignDatabase(f"error: cannot read the database {shown(url)}: {reason}") from None


class ForeignDatabase(SystemExit):
    """The database holds none of the course's graded submissions; the message says how to go on."""


def check(course: Course) -> None:
    """Stop (ForeignDatabase) when the course's graded submissions are not in its database. Free when this database
    was found right before (a stamp of its URL): the check reads the database only when the URL changes."""
    if stamps.recall(course, CHECKED, _checked_stamp(course)):
        return
    graded = graded_submissions(course)
    if graded and not graded & reachable_submissions(course.gradebook_url):
        raise ForeignDatabase(foreign_message(course, len(graded)))
    if graded:
        remember_holding(course)


def remember_holding(course: Course) -> None:
    """The course's database holds its grades (a command just stored them there): check() need not read it."""
    stamps.remember(course, CHECKED, _checked_stamp(course))


def _checked_stamp(course: Course) -> str:
    return stamps.digest(course.gradebook_url)


def foreign_message(course: Course, graded: int) -> str:
    here = shown(course.gradebook_url)
    recorded = course.path(DATABASE_FILE).is_file()
    usual = "the one in autograder/database_url" if recorded else f"the SQLite gradebook {course.default_gradebook_url}"
    return (f"error: the database {here} holds none of the {words.count(graded, 'submission')} graded in this course "
            f"(autograder/autograded/): it is another database than the one their grades, manual grades and comments "
            f"are in. Nothing was changed. To move the course there with all of it (grades, manual grades, comments, "
            f"attempts, sign-in links): make move-db TO={here}   To use the course's own database: leave DB_URL out "
            f"(it is {usual}).")


# --- moving -----------------------------------------------------------------------------------------------

class MoveRefused(SystemExit):
    """The move cannot be made as asked; nothing was written. The message says why and the fix."""


@dataclasses.dataclass(frozen=True)
class Moved:
    source: str
    target: str
    rows: dict[str, int]            # table -> rows copied


def move(course: Course, target: str) -> Moved:
    """Copy every table of the course's database, found by reflection (nbgrader's, the portal's, and any a later
    part of the grader adds), with every row, into `target`, then make `target` the course's database. The source is
    left as it was. The target must hold no rows yet."""
    from sqlalchemy import MetaData, create_engine, func, select

    source = course.gradebook_url
    if _same(source, target):
        raise MoveRefused(f"error: the course's database is already {shown(target)}: nothing to move")
    source_engine, target_engine = create_engine(source), create_engine(target)
    try:
        found = MetaData()
        found.reflect(source_engine)
        if not found.tables:
            raise MoveRefused(f"error: the course's database {shown(source)} holds no tables: nothing to move")
        _refuse_unless_empty(target_engine, target)
        _create_schema(course, found, target, target_engine)
        made = MetaData()
        made.reflect(target_engine)
        missing = {name: sorted(c.name for c in table.columns if c.name not in made.tables[name].columns)
                   for name, table in found.tables.items()}
        missing = {name: columns for name, columns in missing.items() if columns}
        if missing:
            raise MoveRefused(f"error: the tables made in {shown(target)} lack columns of the course's: {missing}")
        rows = {}
        with source_engine.connect() as reading, target_engine.begin() as writing:
            for table in reversed(made.sorted_tables):     # what creating the schema wrote (nbgrader's course row)
                writing.execute(table.delete())
            for table in found.sorted_tables:
                into = made.tables[table.name]
                rows[table.name] = 0
                batch = []
                for row in reading.execute(select(table)).mappings():
                    batch.append(dict(row))
                    if len(batch) == 1000:
                        writing.execute(into.insert(), batch)
                        rows[table.name] += len(batch)
                        batch = []
                if batch:
                    writing.execute(into.insert(), batch)
                    rows[table.name] += len(batch)
            _advance_sequences(writing, made)
            for table in found.sorted_tables:
                copied = writing.execute(select(func.count()).select_from(made.tables[table.name])).scalar()
                if copied != rows[table.name]:
                    raise MoveRefused(f"error: {table.name}: {rows[table.name]} rows read, {copied} written; "
                                      f"nothing was kept")
    finally:
        source_engine.dispose()
        target_engine.dispose()
    record(course, target)
    return Moved(source, target, rows)


def _same(a: str, b: str) -> bool:
    from sqlalchemy.engine import make_url
    return make_url(a) == make_url(b)


SCHEMA_ROWS = ("alembic_version", "course")   # what nbgrader writes making its tables (a stopped move's are replaced)


def _refuse_unless_empty(engine: Engine, url: str) -> None:
    """A target holding rows would mix two courses (or an earlier one's grades with these)."""
    from sqlalchemy import MetaData, func, select
    there = MetaData()
    there.reflect(engine)
    with engine.connect() as db:
        holding = [name for name, table in sorted(there.tables.items()) if name not in SCHEMA_ROWS
                   and db.execute(select(func.count()).select_from(table)).scalar()]
    if holding:
        where = shown(url)
        fix = (f"move autograder/{pathlib.Path(url.split('///', 1)[-1]).name} aside (mv it to a new name)"
               if url.startswith("sqlite") else "give an empty database (createdb) or empty this one")
        raise MoveRefused(f"error: {where} already holds rows in {', '.join(holding[:8])}"
                          f"{' ...' if len(holding) > 8 else ''}: moving there would mix them with this course's. "
                          f"Nothing was changed; {fix}, then run make move-db again.")


def _create_schema(course: Course, found: MetaData, url: str, engine: Engine) -> None:
    """nbgrader makes its own tables (its types and alembic's version, as on a new course); every other table is
    made from its reflection, each column's type in its generic form so that it fits the other database."""
    from sqlalchemy import MetaData, inspect

    with open_gradebook(dataclasses.replace(course, db_url=url)):
        pass
    present = set(inspect(engine).get_table_names())
    rest = MetaData()
    for table in found.sorted_tables:
        if table.name in present:
            continue
        made = table.to_metadata(rest)
        for column in made.columns:
            column.type = _generic(column.type)
            column.server_default = None      # a sequence's nextval or a dialect's expression: values are copied
    rest.create_all(engine)


def _generic(kind: Any) -> Any:
    try:
        return kind.as_generic()
    except NotImplementedError:
        return kind


def _advance_sequences(db: Connection, metadata: MetaData) -> None:
    """PostgreSQL: an integer key's sequence past the ids copied, so the next row does not collide."""
    from sqlalchemy import text
    if db.dialect.name != "postgresql":
        return
    for table in metadata.sorted_tables:
        keys = list(table.primary_key.columns)
        if len(keys) != 1 or not _integer(keys[0].type):
            continue
        sequence = db.execute(text("SELECT pg_get_serial_sequence(:t, :c)"),
                              {"t": table.name, "c": keys[0].name}).scalar()
        if sequence:
            db.execute(text(f'SELECT setval(:s, coalesce((SELECT max("{keys[0].name}") FROM "{table.name}"), 0) + 1, '
                            f'false)'), {"s": sequence})


def _integer(kind: Any) -> bool:
    try:
        return kind.python_type is int
    except NotImplementedError:
        return False


def record(course: Course, url: str) -> None:
    """The course's database from now on: written to autograder/database_url (readable by its owner only: a URL may
    hold a password), or the file removed when it is the SQLite gradebook in autograder/."""
    file = course.path(DATABASE_FILE)
    if url == course.default_gradebook_url:
        file.unlink(missing_ok=True)
        return
    fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(url + "\n")
    file.chmod(0o600)
