"""`make move-db TO=<url>`: the course's database moved to another one (SQLite or PostgreSQL), every table and row.

    python -m posenc_autograder move-db --to postgresql+psycopg2://user@host/gradebook [--db-url FROM]

Grades, manual grades and comments (nbgrader's tables), the portal's attempts, policies, extensions and sign-in
links, and every table a later part of the grader adds are copied (found by reflection) and counted; then every
command uses the new database (recorded in autograder/database_url). The old database is left as it was.
"""
from __future__ import annotations

import sys

from posenc_autograder.course import course_for_command
from posenc_autograder.records import database


def arguments(parser) -> None:
    parser.add_argument("--to", help="the database to move to (an SQLAlchemy URL: "
                        "postgresql+psycopg2://user@host/name, or sqlite:////path/to/gradebook.db)")


def run_command(args) -> int:
    if not args.to:
        print("say where to: make move-db TO=<database URL> (postgresql+psycopg2://user@host/name, or "
              "sqlite:////absolute/path.db)", file=sys.stderr)
        return 2
    course = course_for_command(args.course, args.db_url)
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError
    try:
        moved = database.move(course, args.to)
    except database.MoveRefused as exc:
        print(exc, file=sys.stderr)
        return 1
    except (SQLAlchemyError, ArgumentError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        print(f"error: the move stopped ({reason}); the course still uses {database.shown(course.gradebook_url)} and "
              f"nothing of it was changed", file=sys.stderr)
        return 1
    width = max(map(len, moved.rows))
    for table, count in sorted(moved.rows.items()):
        print(f"  {table:<{width}}  {count:>7,} rows")
    print(f"Moved {sum(moved.rows.values()):,} rows in {len(moved.rows)} tables from {database.shown(moved.source)} "
          f"to {database.shown(moved.target)}, each table counted again there. Every make command (and formgrader) "
          f"now uses {database.shown(moved.target)}; without DB_URL. The old database is left as it was: delete it "
          f"once you no longer need it.")
    return 0
