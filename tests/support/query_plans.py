"""SQLite's plan for a statement the portal runs, as the tests that prove a query reads an index ask for it."""
from collections.abc import Callable

from sqlalchemy import event


def sqlite_plan(sessions, run: Callable, containing: str = "") -> str:
    """The plan (EXPLAIN QUERY PLAN's details, joined by ' | ') of the one statement containing `containing` that
    run(db) executes in a session of `sessions`."""
    seen = []

    def note(_connection, _cursor, statement, parameters, *_):
        seen.append((statement, parameters))
    engine = sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", note)
    try:
        with sessions() as db:
            run(db)
    finally:
        event.remove(engine, "before_cursor_execute", note)
    (statement, parameters), = [(s, p) for s, p in seen if containing in s]
    with engine.connect() as connection:
        return " | ".join(row[-1] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters))
