"""The portal's tables, in the gradebook's own database (SQLite by default, PostgreSQL with DB_URL).

Every table is prefixed `portal_`, so nbgrader's tables and its alembic migrations never meet ours.
Times are naive UTC, as nbgrader stores them.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import time
import typing

from sqlalchemy import (
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    create_engine,
    delete,
    event,
    insert,
    inspect,
    make_url,
    select,
    text,
)
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker
from sqlalchemy.schema import CreateTable

from posenc_autograder.portal.plain_reads import ONLY_READS, only_reads  # noqa: F401 - ONLY_READS: read as models.ONLY_READS
from posenc_autograder.records import portal_dates
from posenc_autograder.settings import PortalDefaults, rule_of

ID = String(64)                      # student ids are safe ids (intake.lms.is_safe_id), far shorter than this


class Base(DeclarativeBase):
    pass


class Student(Base):
    __tablename__ = "portal_student"
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, index=True)   # None: revoked
    token_issued: Mapped[dt.datetime | None] = mapped_column(DateTime)


class Session(Base):
    """A signed-in browser; the cookie holds the secret, this row its hash."""
    __tablename__ = "portal_session"
    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    student_id: Mapped[str | None] = mapped_column(ForeignKey("portal_student.id", ondelete="CASCADE"))
    instructor: Mapped[bool] = mapped_column(Boolean, default=False)
    csrf: Mapped[str] = mapped_column(String(64))
    expires: Mapped[dt.datetime] = mapped_column(DateTime)
    door: Mapped[str] = mapped_column(String(8), default="link")     # how it was opened: link, lti or hub


class SignInFailure(Base):
    __tablename__ = "portal_signin_failure"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    account: Mapped[str] = mapped_column(String(24), default="", index=True)   # what was tried (auth.account_key)


# The rules of an assignment without a saved policy: the columns' defaults. The rules are settings.PortalDefaults'
# fields (declared there once, with their bounds and words; a course's own defaults come through policy.defaults,
# from [portal] in course.toml); opening and deadline are the assignment's own.
POLICY_DEFAULTS = {"opens_at": None, "deadline": None, **dataclasses.asdict(PortalDefaults())}
RULES = tuple(field for field in dataclasses.fields(PortalDefaults) if rule_of(field) is not None)
COLUMN_TYPES = {"int": Integer, "bool": Boolean, "str": String(8)}     # a choice is stored as its text


def column_type(field: dataclasses.Field):
    return COLUMN_TYPES.get(field.type if isinstance(field.type, str) else field.type.__name__, String(8))


if typing.TYPE_CHECKING:
    # The rule columns set on Policy below, as the type checker reads them: PortalDefaults' fields, their types
    # declared there once (nothing assigns a rule by attribute, so the dataclass's frozenness never meets a row).
    _RuleColumns = PortalDefaults
else:
    _RuleColumns = object


class Policy(Base, _RuleColumns):
    """The instructor's rules for one assignment; no row means POLICY_DEFAULTS. A column per rule of
    settings.PortalDefaults is added below, so a new rule is declared in one place."""
    __tablename__ = portal_dates.POLICY_TABLE              # the names the class files read (records/portal_dates.py)
    assignment: Mapped[str] = mapped_column(portal_dates.ASSIGNMENT, ID, primary_key=True)
    opens_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    deadline: Mapped[dt.datetime | None] = mapped_column(portal_dates.DEADLINE, DateTime)
    counts: Mapped[str] = mapped_column(String(8), default="best")   # unused: [course] counted_attempt decides


for _field in RULES:                   # declarative mapping takes columns set on the class after its body
    setattr(Policy, _field.name, mapped_column(_field.name, column_type(_field), default=_field.default))


class Extension(Base):
    __tablename__ = portal_dates.EXTENSION_TABLE           # the names the class files read (records/portal_dates.py)
    student_id: Mapped[str] = mapped_column(portal_dates.STUDENT, ForeignKey("portal_student.id", ondelete="CASCADE"),
                                            primary_key=True)
    assignment: Mapped[str] = mapped_column(portal_dates.ASSIGNMENT, ID, primary_key=True)
    deadline: Mapped[dt.datetime] = mapped_column(portal_dates.DEADLINE, DateTime)


class Status(enum.StrEnum):
    """Where an attempt is: waiting, being graded, graded, or the grader failed on it (stored as the text)."""
    QUEUED = "queued"
    RUNNING = "running"
    GRADED = "graded"
    ERROR = "error"


STATUSES = tuple(Status)
WAITING = (Status.QUEUED, Status.RUNNING)
FINISHED = (Status.GRADED, Status.ERROR)


class Attempt(Base):
    """One accepted upload: its file, its place in the queue and, once graded, its result.

    The queue is this table (status queued → running → graded | error), so a restart loses nothing. A file may be
    in more than one row: uploaded again after another file, it is an attempt of its own (intake/attempts.py's rule:
    Service.accept_upload asks it)."""
    __tablename__ = "portal_attempt"
    __table_args__ = (UniqueConstraint("student_id", "assignment", "number"),
                      Index("ix_portal_attempt_file", "student_id", "assignment", "sha256"),
                      # the sandbox time a student used lately (queue.used_seconds, the fair order's sums), read from
                      # the index alone: a graded row's later columns lie past its result, pages of it away
                      Index("ix_portal_attempt_usage", "student_id", "uploaded_at", "grading_seconds"),
                      # the queued jobs in upload order, whatever the table holds besides (queue.FIRST_UNUSED)
                      Index("ix_portal_attempt_queued", "id", postgresql_where=text("status = 'queued'"),
                            sqlite_where=text("status = 'queued'")))
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    student_id: Mapped[str] = mapped_column(ForeignKey("portal_student.id", ondelete="CASCADE"), index=True)
    assignment: Mapped[str] = mapped_column(ID)
    notebook: Mapped[str] = mapped_column(ID)
    number: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    uploaded_at: Mapped[dt.datetime] = mapped_column(DateTime)
    late: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(8), default=Status.QUEUED.value, index=True)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime, index=True)   # the recent jobs' times (queue)
    runs: Mapped[int] = mapped_column(Integer, default=0)          # times a worker started it (restarts show here)
    score: Mapped[float | None] = mapped_column(Float)
    max_score: Mapped[float | None] = mapped_column(Float)
    result_json: Mapped[str | None] = mapped_column(Text)
    promoted: Mapped[bool] = mapped_column(Boolean, default=False)  # stored in the gradebook as the one that counts
    grading_seconds: Mapped[float] = mapped_column(Float, default=0.0)  # sandbox time its runs took (fair share)
    full_run: Mapped[bool] = mapped_column(Boolean, default=False)  # its short first run was stopped: next in full
    door: Mapped[str] = mapped_column(String(8), default="portal")  # the record's door: portal (a link), lti, hub
    claimed_by: Mapped[str | None] = mapped_column(String(40))      # the grading slot that took it (queue.claim)

    def graded_json(self) -> str:
        """The result of a graded attempt, as stored (results.NotebookResult's JSON)."""
        if self.result_json is None:
            raise ValueError(f"attempt {self.id} has no result: it is {self.status}")
        return self.result_json


class SchemaVersion(Base):
    """The version of the portal's tables in this database (one row)."""
    __tablename__ = "portal_schema"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(Integer)


# 2: policy.notebook_seconds and max_queued; 3: signin_failure.account; 4: policy.points_before_deadline;
# 5: attempt.grading_seconds and full_run; 6: session.door, attempt.door, the LTI tool's tables (portal/lti/models.py);
# 7: lti_line_item.line_items; 8: attempt.claimed_by; 9: an index on attempt.finished_at; 10: attempt's (student,
# assignment, sha256) no longer unique (UNIQUE_DROPPED), an index instead; 11: an index on attempt's (student,
# uploaded_at, grading_seconds); 12: an index on the queued attempts' ids
SCHEMA_VERSION = 12
UNIQUE_DROPPED = {"portal_attempt": ("student_id", "assignment", "sha256")}     # table: the columns once unique


# Connections kept open: one per thread that may hold one at once (Starlette's thread pool, 40 by default, and the
# grading threads), so a rush neither waits for a connection nor opens and closes one per request. The one returned
# last is taken first (LIFO): the few a process uses most stay in use, each with its statements prepared
# (PostgreSQL, portal/prepared.py) or cached (SQLite), where a FIFO pool handed out every connection in turn, each
# preparing every statement again.
POOL_SIZE, POOL_OVERFLOW, POOL_LIFO = 48, 16, True


def engine_for(url: str):
    """An engine on the gradebook's database. SQLite: WAL (readers never wait for the grader's writes) and a
    generous busy timeout, since the gradebook's own connections write to the same file."""
    if url.startswith("sqlite"):
        in_memory = make_url(url).database in (None, "", ":memory:")          # one connection, shared: no pool
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False},
                               **({} if in_memory else {"pool_size": POOL_SIZE, "max_overflow": POOL_OVERFLOW,
                                                        "pool_use_lifo": POOL_LIFO}))

        @event.listens_for(engine, "connect")
        def _pragmas(connection, _record):
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=60000")
            cursor.close()
        return engine
    psycopg2 = make_url(url).get_driver_name() == "psycopg2"
    engine = create_engine(url, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW, pool_use_lifo=POOL_LIFO,
                           connect_args={"connection_factory": _preparing()} if psycopg2 else {})
    ping_when_idle(engine)
    if psycopg2:
        begin_at_first_write(engine)
    return engine


def _preparing():
    from posenc_autograder.portal.prepared import PreparingConnection
    return PreparingConnection


# The execution option of a write that is a transaction of its own when no transaction is open (the session commits
# right after it): on PostgreSQL it runs without BEGIN and COMMIT, two round trips fewer (begin_at_first_write).
ALONE = "posenc_alone"


def write_alone(db) -> None:
    """The session's next write is its one write, committed right after it (an upload's attempt, a sign-in's
    session, added to the session and flushed by the ORM): ALONE for the session's connection, so that on
    PostgreSQL it runs without BEGIN and COMMIT."""
    db.connection().execution_options(**{ALONE: True})


def begin_at_first_write(engine) -> None:
    """PostgreSQL: a session's transaction begins at its first statement that writes (or locks rows), and the
    plain reads before it run on their own. psycopg2 otherwise sends BEGIN before a session's first read and
    ROLLBACK at its end, two more round trips (and the server's work for each) for every session that only reads,
    most of a rush's. The same results at PostgreSQL's READ COMMITTED, where each statement of a transaction reads
    its own snapshot and a plain read holds no lock: everything from the first write on is one transaction, as
    before, committed or rolled back whole. The switch listens to the dialect's executions (SQLAlchemy's statements,
    not a raw cursor's): as the engine's before_cursor_execute it turned on SQLAlchemy's event dispatch around every
    statement, ~100 Python calls each. A write marked ALONE outside a transaction runs as one of its own."""
    @event.listens_for(engine, "checkout")
    def _reads_alone(dbapi_connection, record, proxy) -> None:
        if not dbapi_connection.get_transaction_status():            # TRANSACTION_STATUS_IDLE: none open
            dbapi_connection.autocommit = True

    def _begin_at_write(cursor, statement, *arguments) -> None:
        if cursor.connection.autocommit and not only_reads(statement) and \
                not arguments[-1].execution_options.get(ALONE):
            cursor.connection.autocommit = False          # psycopg2 sends BEGIN before this statement
    for execution in ("do_execute", "do_executemany", "do_execute_no_params"):
        event.listen(engine, execution, _begin_at_write)


# A pooled connection idle this long is pinged before use (the server may have closed it: a restart, an idle
# timeout); one used moments ago is not: a ping at every checkout was a round trip on each of a request's sessions.
PING_IDLE_SECONDS = 10.0


def ping_when_idle(engine, idle_seconds: float = PING_IDLE_SECONDS, clock=time.monotonic) -> None:
    """The pool's pre-ping, for connections back in the pool at least `idle_seconds`: a dead one is replaced by a
    new connection before anyone uses it (SQLAlchemy's DisconnectionError at checkout)."""
    @event.listens_for(engine, "checkin")
    def _returned(dbapi_connection, record) -> None:
        record.info["returned_at"] = clock()

    @event.listens_for(engine, "checkout")
    def _taken(dbapi_connection, record, proxy) -> None:
        returned = record.info.pop("returned_at", None)
        if returned is None or clock() - returned < idle_seconds:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:
            raise DisconnectionError() from exc


def open_database(url: str) -> sessionmaker:
    """Create the portal's tables if missing (the gradebook's must exist first: nbgrader stamps its alembic
    version only on an empty database) and return a session factory."""
    engine = engine_for(url)
    if not up_to_date(engine):
        Base.metadata.create_all(engine)
        migrate(engine)
    return sessionmaker(bind=engine, expire_on_commit=False)


def up_to_date(engine) -> bool:
    """Every table of the models is there and the schema is at SCHEMA_VERSION: nothing to create or add. Two
    queries (the table names, the version), where create_all and migrate read each table's columns and compile its
    DDL again at every start of a portal and of each of its grading processes."""
    with engine.connect() as connection:
        if not set(Base.metadata.tables) <= set(inspect(connection).get_table_names()):
            return False
        found = connection.execute(select(SchemaVersion.version)).scalar_one_or_none()
    return found is not None and found >= SCHEMA_VERSION


def migrate(engine) -> int:
    """Bring the portal's tables of an older database up to SCHEMA_VERSION: every column the models have and
    the table lacks is added, with its default for the rows already there, and every index it lacks is made (so a
    new column or index needs no hand-written step); returns the version found."""
    with engine.begin() as connection:
        found = connection.execute(select(SchemaVersion.version)).scalar_one_or_none()
        if found is not None and found >= SCHEMA_VERSION:
            return found
        inspector = inspect(connection)
        for table in Base.metadata.sorted_tables:
            present = {column["name"] for column in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name not in present:
                    connection.execute(text(add_column(table.name, column, connection.dialect)))
        for name, columns in UNIQUE_DROPPED.items():          # every column there: the rows copy whole
            drop_unique(connection, Base.metadata.tables[name], columns)
        inspector = inspect(connection)
        for table in Base.metadata.sorted_tables:
            indexed = {index["name"] for index in inspector.get_indexes(table.name)}
            for index in table.indexes:
                if index.name not in indexed:
                    index.create(connection)
        connection.execute(delete(SchemaVersion))
        connection.execute(insert(SchemaVersion).values(id=1, version=SCHEMA_VERSION))
        return found or 1


def drop_unique(connection, table, columns: tuple[str, ...]) -> None:
    """The table's unique constraint on `columns`, gone if there. SQLite cannot drop one (it is part of the table):
    the table is made again from the model under a scratch name, its rows copied, the old one dropped and the new
    one renamed (migrate then makes its indexes)."""
    inspector = inspect(connection)
    if table.name not in inspector.get_table_names():
        return
    found = [u for u in inspector.get_unique_constraints(table.name) if tuple(u["column_names"]) == columns]
    if not found:
        return
    if connection.dialect.name != "sqlite":
        for unique in found:
            connection.execute(text(f'ALTER TABLE {table.name} DROP CONSTRAINT "{unique["name"]}"'))
        return
    copies = MetaData()
    for key in table.foreign_keys:                            # the tables it refers to, for its DDL's references
        key.column.table.to_metadata(copies)
    scratch = table.to_metadata(copies, name=f"{table.name}_new")
    connection.execute(CreateTable(scratch))                  # the table alone: its index names are the old one's
    kept = ", ".join(column.name for column in table.columns)
    connection.execute(text(f"INSERT INTO {scratch.name} ({kept}) SELECT {kept} FROM {table.name}"))
    connection.execute(text(f"DROP TABLE {table.name}"))
    connection.execute(text(f"ALTER TABLE {scratch.name} RENAME TO {table.name}"))


def add_column(table: str, column, dialect) -> str:
    """ALTER TABLE ... ADD COLUMN with the model's default as the SQL default (names are the models' own)."""
    kind = column.type.compile(dialect=dialect)
    default = column.default.arg if column.default is not None and not callable(column.default.arg) else None
    literal = str(default).upper() if isinstance(default, bool) else repr(default)     # TRUE/FALSE: both databases
    clause = "" if default is None else f" DEFAULT {literal}"
    return f"ALTER TABLE {table} ADD COLUMN {column.name} {kind}{clause}"


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
