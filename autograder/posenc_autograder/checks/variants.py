"""Per-student hidden inputs: each student's random test arrays come from their own seed.

The seed is an HMAC of the student id under a course secret, so a student cannot work out anyone
else's inputs, and the same student, secret and grader always get the same inputs (regrades are
deterministic). The secret is the instructor's (POSENC_VARIANT_SECRET) or generated on first use
into a git-ignored file beside the gradebook. VARIANTS=0 gives every student the course-wide inputs.

Only random *values* vary: shapes, sizes and the special cases a test builds stay as the notebook
states them, so every variant exercises the same properties (tests/end_to_end/test_integrity_report.py checks this).
"""
from __future__ import annotations

import contextlib
import contextvars
import hashlib
import hmac
import os
import secrets

import numpy as np

SECRET_FILE = "autograder/variant_secret"       # beside autograder/gradebook.db; git-ignored
SECRET_ENV, SWITCH_ENV = "POSENC_VARIANT_SECRET", "VARIANTS"

_current: contextvars.ContextVar[int | None] = contextvars.ContextVar("posenc_variant", default=None)


def enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def course_secret(course) -> bytes:
    """The instructor's secret, else the course's stored one, created on first use (readable by its owner only)."""
    given = os.environ.get(SECRET_ENV, "")
    if given:
        return given.encode()
    path = course.path(SECRET_FILE)
    if not path.exists():
        _create_secret(path)
    secret = path.read_text().strip()
    if len(secret) < 16:
        raise ValueError(f"{path} holds a secret shorter than 16 characters; delete it to have one generated")
    return secret.encode()


def _create_secret(path) -> None:
    """Write a new secret whole, then link it into place: two graders starting at once (the portal's worker and
    make grade) both end up reading the one that came first, never a half-written or a second secret."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as handle:
        handle.write(secrets.token_hex(32) + "\n")
    try:
        os.link(partial, path)
    except FileExistsError:
        pass                                    # another grader's secret is in place: it is the course's
    finally:
        partial.unlink()


def seed_for(secret: bytes, student: str) -> int:
    return int.from_bytes(hmac.new(secret, student.encode(), hashlib.sha256).digest()[:8], "big")


def student_variant(course, student: str) -> int | None:
    """The student's variant seed, or None when variants are off (everyone gets the course-wide inputs)."""
    return seed_for(course_secret(course), student) if enabled() else None


def grader_setting(course) -> str:
    """What of the variant setting changes scores: part of the grader's fingerprint (never the secret itself)."""
    if not enabled():
        return "variants off"
    return "variants " + hashlib.sha256(b"posenc-variants\0" + course_secret(course)).hexdigest()


@contextlib.contextmanager
def active(variant: int | None):
    """Inputs built inside draw their random values from this variant (None: the course-wide inputs)."""
    token = _current.set(variant)
    try:
        yield
    finally:
        _current.reset(token)


def current() -> int | None:
    return _current.get()


def rng(seed: int) -> np.random.Generator:
    """The generator a test's inputs draw from: its fixed seed, mixed with the active student's variant."""
    variant = _current.get()
    return np.random.default_rng(seed if variant is None else [variant, seed])
