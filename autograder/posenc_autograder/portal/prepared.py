"""PostgreSQL (psycopg2): the portal's plain reads run as the server's prepared statements, so the server parses
each once a connection and, once its plans have shown a generic one is as good (PostgreSQL's own rule, after five
executions), plans it no more. psycopg2 sends every statement as text, parsed and planned again at each execution:
planning was some 60% of the statements' server time in an honest upload's requests (the final scores' query
~1.2 ms of planning to 0.5 ms of execution).

A statement is prepared only while its connection holds no transaction (a plain read, or a write that is a
transaction of its own: models.ALONE, as a grading slot's claim of its next job), so a statement the server cannot
prepare (a parameter whose type it cannot tell) fails alone and runs unprepared from then on; a prepared statement
may then run inside a transaction. A connection prepares at most MOST statements (the server keeps each until the
connection closes).
"""
from __future__ import annotations

import re

import psycopg2
import psycopg2.errors
import psycopg2.extensions

MOST = 200                                   # statements prepared a connection
PARAMETER = re.compile(r"%\((\w+)\)s|%%|%s")


def server_form(statement: str) -> tuple[str, list[str]] | None:
    """The statement with its named parameters as $1, $2, ... (each name its number, in order of first use) and
    those names; None when it has positional ones."""
    names: list[str] = []
    positional = False

    def numbered(found: re.Match) -> str:
        nonlocal positional
        if found.group(0) == "%%":
            return "%"
        if found.group(1) is None:
            positional = True
            return found.group(0)
        if found.group(1) not in names:
            names.append(found.group(1))
        return f"${names.index(found.group(1)) + 1}"
    text = PARAMETER.sub(numbered, statement)
    return None if positional else (text, names)


class PreparingCursor(psycopg2.extensions.cursor):
    def execute(self, query, vars=None):        # noqa: A002 - psycopg2's own signature
        if isinstance(vars, dict) and isinstance(query, str):
            prepared = self.connection.prepared_form(query)
            if prepared:
                try:
                    return super().execute(prepared, vars)
                except psycopg2.errors.InvalidSqlStatementName:
                    # The server forgot them (DEALLOCATE, or a pooler between that hands out its connections): this
                    # connection prepares no more. Outside a transaction the read runs now as it is; inside, the
                    # transaction fails (as at any error) and the next runs unprepared.
                    self.connection.prepared.clear()
                    self.connection.preparing = False
                    if not self.connection.autocommit:
                        raise
        return super().execute(query, vars)


class PreparingConnection(psycopg2.extensions.connection):
    """A psycopg2 connection whose cursors run its prepared statements as EXECUTE."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.prepared: dict[str, str | None] = {}     # statement -> its EXECUTE, None: not preparable
        self.preparing = True
        self.cursor_factory = PreparingCursor

    def prepared_form(self, statement: str) -> str | None:
        if statement in self.prepared:
            return self.prepared[statement]
        if not (self.preparing and self.autocommit and len(self.prepared) < MOST
                and self.get_transaction_status() == psycopg2.extensions.TRANSACTION_STATUS_IDLE):
            return None                 # asked again later: outside a transaction it may be prepared then
        self.prepared[statement] = made = self._prepare(statement, f"posenc_{len(self.prepared)}")
        return made

    def _prepare(self, statement: str, name: str) -> str | None:
        form = server_form(statement)
        if form is None:
            return None
        text, names = form
        try:
            with psycopg2.extensions.cursor(self) as cursor:
                cursor.execute(f"PREPARE {name} AS {text}")
        except psycopg2.Error:
            return None
        arguments = ", ".join(f"%({parameter})s" for parameter in names)
        return f"EXECUTE {name}({arguments})" if names else f"EXECUTE {name}"
