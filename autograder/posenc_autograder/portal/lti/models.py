"""The LTI tool's tables, beside the portal's (same database, prefixed `portal_lti_`).

A login (one OIDC round trip) is kept until its launch uses it, which binds the id_token's nonce to the login that
asked for it and lets no id_token be posted twice; the scores owed to platforms are an outbox, kept until sent."""
from __future__ import annotations

import datetime as dt

from sqlalchemy import DateTime, Float, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from posenc_autograder.portal.models import ID, Base

URL = String(2000)
KEY = String(255)                    # issuers, client ids, deployment ids, LMS user ids as the platform gives them


class LtiLogin(Base):
    """One OIDC login: the state (also a cookie in the browser that started it) and the nonce sent with it."""
    __tablename__ = "portal_lti_login"
    state: Mapped[str] = mapped_column(String(64), primary_key=True)
    nonce: Mapped[str] = mapped_column(String(64), unique=True)
    issuer: Mapped[str] = mapped_column(KEY)
    client_id: Mapped[str] = mapped_column(KEY)
    created: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    used: Mapped[dt.datetime | None] = mapped_column(DateTime)          # the launch that consumed it


class LtiSeenToken(Base):
    """An id_token already posted (its SHA-256), kept until it expires: it is never accepted again."""
    __tablename__ = "portal_lti_seen_token"
    digest: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires: Mapped[dt.datetime] = mapped_column(DateTime, index=True)


class LtiUser(Base):
    """An LMS user (issuer, sub) and the student id the course knows them by."""
    __tablename__ = "portal_lti_user"
    __table_args__ = (UniqueConstraint("issuer", "sub"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    issuer: Mapped[str] = mapped_column(KEY)
    sub: Mapped[str] = mapped_column(KEY)
    student_id: Mapped[str] = mapped_column(ID, index=True)
    name: Mapped[str] = mapped_column(String(200), default="")
    email: Mapped[str] = mapped_column(String(320), default="")
    lms_user_id: Mapped[str] = mapped_column(KEY, default="")          # the LMS's own id (Canvas user id, Moodle's)
    roles: Mapped[str] = mapped_column(Text, default="")                # space-separated, as last seen


class LtiLineItem(Base):
    """Where a student's score for an assignment goes: the line item of the link they launched."""
    __tablename__ = "portal_lti_line_item"
    __table_args__ = (UniqueConstraint("student_id", "assignment", "issuer", "client_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    student_id: Mapped[str] = mapped_column(ID, index=True)
    assignment: Mapped[str] = mapped_column(ID)
    issuer: Mapped[str] = mapped_column(KEY)
    client_id: Mapped[str] = mapped_column(KEY)
    sub: Mapped[str] = mapped_column(KEY)
    line_item: Mapped[str] = mapped_column(URL)                        # "" until found in line_items
    line_items: Mapped[str] = mapped_column(URL, default="")           # the context's container, when given
    scopes: Mapped[str] = mapped_column(Text, default="")


class LtiContext(Base):
    """A course (context) of a platform whose memberships the tool may read (Names and Role Provisioning)."""
    __tablename__ = "portal_lti_context"
    __table_args__ = (UniqueConstraint("issuer", "client_id", "context_id"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    issuer: Mapped[str] = mapped_column(KEY)
    client_id: Mapped[str] = mapped_column(KEY)
    context_id: Mapped[str] = mapped_column(KEY)
    memberships_url: Mapped[str] = mapped_column(URL)
    title: Mapped[str] = mapped_column(String(400), default="")
    synced: Mapped[dt.datetime | None] = mapped_column(DateTime)
    members: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str] = mapped_column(Text, default="")


class LtiScore(Base):
    """A score owed to a platform (the outbox): kept until the platform took it, retried with backoff, its last
    error shown to the instructor; a later score for the same line item and student supersedes it."""
    __tablename__ = "portal_lti_score"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    line_item_id: Mapped[int] = mapped_column(Integer, index=True)     # LtiLineItem.id
    score_given: Mapped[float] = mapped_column(Float)
    score_maximum: Mapped[float] = mapped_column(Float)
    timestamp: Mapped[dt.datetime] = mapped_column(DateTime)          # UTC, when the score was settled
    state: Mapped[str] = mapped_column(String(12), default="pending", index=True)   # pending | sent | superseded
    tries: Mapped[int] = mapped_column(Integer, default=0)
    next_try: Mapped[dt.datetime] = mapped_column(DateTime, index=True)
    last_error: Mapped[str] = mapped_column(Text, default="")
    sent_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
