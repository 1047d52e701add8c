"""Who is asking: sign-in tokens (long random secrets, stored hashed, revocable), browser sessions, CSRF
tokens, the instructor's secret, and limits on failed sign-ins.

Failed sign-ins are limited per account tried (a token's first characters, or the instructor) and, with a far
higher threshold, per address. A valid student token is refused only when its own prefix is locked, so bad
tokens from one address (a campus NAT, a lab) never lock out the other students there; past the address's
threshold its failing sign-ins are refused without being checked or recorded.

Tokens and session cookies carry 256 random bits, so a plain SHA-256 of them is enough to store: there is
nothing to guess that a slow hash would protect.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import pathlib
import secrets

from sqlalchemy import bindparam, delete, func, select, update

from posenc_autograder.course import Course
from posenc_autograder.portal.models import Session, SignInFailure, Student, utcnow

TOKEN_BYTES = 32
SESSION_LIFETIME = dt.timedelta(days=30)
FAILURE_WINDOW = dt.timedelta(minutes=15)
MAX_FAILURES = 10                     # per account tried (a token prefix, the instructor) and window
MAX_ADDRESS_FAILURES = 200            # per client address and window, all accounts: a class behind one NAT
PREFIX_CHARACTERS = 8                 # a token's first characters name the account it tries (48 random bits)
INSTRUCTOR = "instructor"
LINK = "link"                         # the door of a session opened by a sign-in link (others: "lti", "hub")
SESSION_COOKIE = "portal_session"
RECORDED_AS = {LINK: "portal", "lti": "lti", "hub": "hub"}   # a session's door -> the record's (intake.attempts)


def recorded_door(session: Session) -> str:
    """The door the record of attempts names for an upload in this session."""
    return RECORDED_AS.get(session.door or LINK, "portal")
SECRET_ENV, SECRET_FILE = "POSENC_PORTAL_SECRET", "autograder/portal_secret"   # the instructor's (git-ignored)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def issue_token(db, student_id: str, name: str = "") -> str:
    """A new sign-in token for the student (any earlier one stops working); returned once, stored hashed."""
    token = new_secret()
    student = db.get(Student, student_id) or Student(id=student_id, name=name)
    student.name = name or student.name
    student.token_hash, student.token_issued = digest(token), utcnow()
    db.add(student)
    db.execute(delete(Session).where(Session.student_id == student_id))
    return token


def revoke(db, student_id: str) -> bool:
    """The student's link and every session it opened stop working."""
    found = db.execute(update(Student).where(Student.id == student_id).values(token_hash=None)).rowcount
    db.execute(delete(Session).where(Session.student_id == student_id))
    return bool(found)


def account_key(token: str | None) -> str:
    """The account a sign-in tries: the token's prefix (a guess at completing a partly seen link shares it)."""
    return "token:" + str(token or "")[:PREFIX_CHARACTERS]


def _failures(db, now: dt.datetime, *condition) -> int:
    return db.execute(select(func.count()).select_from(SignInFailure).where(
        SignInFailure.at > now - FAILURE_WINDOW, *condition)).scalar_one()


def account_locked(db, account: str, now: dt.datetime) -> bool:
    return _failures(db, now, SignInFailure.account == account) >= MAX_FAILURES


def instructor_locked(db, client: str, now: dt.datetime) -> bool:
    """Wrong instructor secrets from this address (students' bad tokens do not count; other addresses neither,
    so no one elsewhere can lock the instructor out)."""
    return _failures(db, now, SignInFailure.account == INSTRUCTOR, SignInFailure.client == client[:64]) >= MAX_FAILURES


def address_over(db, client: str, now: dt.datetime) -> bool:
    return _failures(db, now, SignInFailure.client == client[:64]) >= MAX_ADDRESS_FAILURES


def record_failure(db, client: str, account: str, now: dt.datetime) -> None:
    db.execute(delete(SignInFailure).where(SignInFailure.at < now - FAILURE_WINDOW))
    db.add(SignInFailure(client=client[:64], account=account[:24], at=now))


def student_for_token(db, token: str) -> Student | None:
    if not token or len(token) > 128:
        return None
    return db.execute(select(Student).where(Student.token_hash == digest(token))).scalar_one_or_none()


def open_session(db, student_id: str | None, instructor: bool = False, door: str = LINK) -> str:
    """A new session, opened through `door` (a sign-in link, an LTI launch, the hub); returns the cookie value."""
    cookie = new_secret()
    db.add(Session(id_hash=digest(cookie), student_id=student_id, instructor=instructor, csrf=new_secret(),
                   expires=utcnow() + SESSION_LIFETIME, door=door))
    return cookie


# Every request's check of who asks: the session with its student's link, one statement built once.
SESSION_WITH_LINK = (select(Session, Student.token_hash).outerjoin(Student, Student.id == Session.student_id)
                     .where(Session.id_hash == bindparam("id_hash")))


def session_for(db, cookie: str | None) -> Session | None:
    if not cookie or len(cookie) > 128:
        return None
    row = db.execute(SESSION_WITH_LINK, {"id_hash": digest(cookie)}).first()
    if row is None or row[0].expires < utcnow():
        return None
    found, link = row
    if found.student_id is not None and (found.door or LINK) == LINK and link is None:
        return None                     # a revoked link (or a student no longer there) closes its sessions
    return found


def close_session(db, cookie: str | None) -> None:
    if cookie:
        db.execute(delete(Session).where(Session.id_hash == digest(cookie)))


def csrf_ok(session: Session | None, given: object) -> bool:
    return session is not None and tokens_match(session.csrf, given)


def tokens_match(expected: str, given: object) -> bool:
    """A form's token (any form value) against the one expected, in constant time."""
    return isinstance(given, str) and hmac.compare_digest(expected, given)


def instructor_secret(course: Course) -> tuple[str, pathlib.Path | None]:
    """The instructor's secret ($POSENC_PORTAL_SECRET, else autograder/portal_secret, created on first use,
    readable by its owner only) and the file it is in (None when from the environment)."""
    given = os.environ.get(SECRET_ENV, "")
    if given:
        if len(given) < 16:
            raise SystemExit(f"error: ${SECRET_ENV} must be at least 16 characters")
        return given, None
    path = course.path(SECRET_FILE)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
            handle.write(new_secret() + "\n")
    return path.read_text().strip(), path


def instructor_ok(secret_hash: str, given: object) -> bool:
    return isinstance(given, str) and len(given) <= 256 and hmac.compare_digest(secret_hash, digest(given))
