"""The portal's tables, in the gradebook's own database (SQLite by default, PostgreSQL with DB_URL).

Every table is prefixed `portal_`, so nbgrader's tables and its alembic migrations never meet ours.
Times are naive UTC, as nbgrader stores them.
"""
from __future__ import annotations

import datetime as dt

from sqlalchemy import (Boolean, DateTime, Float, ForeignKey, Integer, String, Text, UniqueConstraint, create_engine,
                        event)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

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


class SignInFailure(Base):
    __tablename__ = "portal_signin_failure"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    client: Mapped[str] = mapped_column(String(64), index=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime, index=True)


class Policy(Base):
    """The instructor's rules for one assignment; no row means the defaults below."""
    __tablename__ = "portal_policy"
    assignment: Mapped[str] = mapped_column(ID, primary_key=True)
    opens_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    deadline: Mapped[dt.datetime | None] = mapped_column(DateTime)
    grace_minutes: Mapped[int] = mapped_column(Integer, default=0)       # after the deadline, still on time
    late_days: Mapped[int] = mapped_column(Integer, default=0)           # then accepted, marked late (0: refused)
    max_attempts: Mapped[int] = mapped_column(Integer, default=0)        # 0: no limit
    max_per_day: Mapped[int] = mapped_column(Integer, default=0)         # 0: no limit (a rolling 24 hours)
    min_seconds_between: Mapped[int] = mapped_column(Integer, default=0)
    counts: Mapped[str] = mapped_column(String(8), default="best")       # best | last
    feedback_before: Mapped[str] = mapped_column(String(8), default="full")   # full | tests | none
    inputs_before_deadline: Mapped[bool] = mapped_column(Boolean, default=False)


class Extension(Base):
    __tablename__ = "portal_extension"
    student_id: Mapped[str] = mapped_column(ForeignKey("portal_student.id", ondelete="CASCADE"), primary_key=True)
    assignment: Mapped[str] = mapped_column(ID, primary_key=True)
    deadline: Mapped[dt.datetime] = mapped_column(DateTime)


class Attempt(Base):
    """One accepted upload: its file, its place in the queue and, once graded, its result.

    The queue is this table (status queued → running → graded | error), so a restart loses nothing;
    (student, assignment, sha256) is unique, so the same file uploaded twice is one attempt."""
    __tablename__ = "portal_attempt"
    __table_args__ = (UniqueConstraint("student_id", "assignment", "sha256"),
                      UniqueConstraint("student_id", "assignment", "number"))
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    student_id: Mapped[str] = mapped_column(ForeignKey("portal_student.id", ondelete="CASCADE"), index=True)
    assignment: Mapped[str] = mapped_column(ID)
    notebook: Mapped[str] = mapped_column(ID)
    number: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    size: Mapped[int] = mapped_column(Integer)
    uploaded_at: Mapped[dt.datetime] = mapped_column(DateTime)
    late: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(8), default="queued", index=True)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    runs: Mapped[int] = mapped_column(Integer, default=0)          # times a worker started it (restarts show here)
    score: Mapped[float | None] = mapped_column(Float)
    max_score: Mapped[float | None] = mapped_column(Float)
    result_json: Mapped[str | None] = mapped_column(Text)
    promoted: Mapped[bool] = mapped_column(Boolean, default=False)  # stored in the gradebook as the one that counts


STATUSES = ("queued", "running", "graded", "error")


def engine_for(url: str):
    """An engine on the gradebook's database. SQLite: WAL (readers never wait for the grader's writes) and a
    generous busy timeout, since the gradebook's own connections write to the same file."""
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _pragmas(connection, _record):
            cursor = connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=60000")
            cursor.close()
        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def open_database(url: str) -> sessionmaker:
    """Create the portal's tables if missing (the gradebook's must exist first: nbgrader stamps its alembic
    version only on an empty database) and return a session factory."""
    engine = engine_for(url)
    Base.metadata.create_all(engine)
    return sessionmaker(bind=engine, expire_on_commit=False)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
