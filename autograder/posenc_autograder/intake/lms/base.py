"""What every LMS module shares: the Entry its parser makes of a file's name, the Notes some LMSes write beside
the notebooks, the GradeFile its grade files are, safe ids, and the defaults a module without notes, download-wide
context or settings takes.

A parser turns a path inside the zip into an `Entry` (or None: not its format). Everything parsed is
student-controlled text and is validated by the caller before it names a folder.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import unicodedata
from typing import Callable

SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One file in a download, as the LMS described it."""
    member: str                          # path inside the zip
    lms: str
    student_id: str                      # the id proposed for nbgrader (validated by the caller)
    name: str                            # display name, as the LMS gives it
    lms_user_id: str                     # the LMS's own id of the student (or of the participant)
    file_name: str                       # the student's file name with the LMS's renaming undone (opaque)
    attempt: tuple                       # larger is later; only from the LMS's part of the name
    submitted_at: dt.datetime | None     # None: the LMS's part of the name does not say
    late: bool = False
    prefix: str = ""                     # the LMS's own part of the name: feedback goes back under it


def is_safe_id(student_id: str) -> bool:
    """A folder name nbgrader and a shell can use: no '.', '..', leading '-', separators or markup."""
    return bool(SAFE_ID.fullmatch(student_id))


def slug(name: str) -> str:
    """A display name made into an id: 'John Smith' -> 'john_smith', 'José Núñez' -> 'jose_nunez'."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")[:48]


def usable_id(entry: Entry) -> str | None:
    """The entry's id if safe; else, when the LMS names the student by its own id, one made from the name
    or that id ('moodle_12345'); else None (a plain zip's unsafe name cannot be repaired)."""
    if is_safe_id(entry.student_id):
        return entry.student_id
    if entry.lms_user_id.isdigit():
        fallback = slug(entry.student_id) or f"{entry.lms}_{entry.lms_user_id}"
        return fallback if is_safe_id(fallback) else f"{entry.lms}_{entry.lms_user_id}"
    return None


def basename(member: str) -> str:
    return member.rsplit("/", 1)[-1]


@dataclasses.dataclass(frozen=True)
class GradeFile:
    """One file of grades in the form an LMS imports: its name (in autograder/reports/), header, rows and any
    rows right under the header. Scores arrive as (score, max score, graded); a notebook that was not graded
    leaves its cell blank (never 0), so the LMS shows no grade rather than a wrong one."""
    name: str
    fields: list[str]
    rows: list[dict]
    preamble: list[list] = dataclasses.field(default_factory=list)


def score_or_blank(score: tuple[float, float, bool]) -> float | str:
    return score[0] if score[2] else ""


@dataclasses.dataclass(frozen=True)
class NoteFacts:
    """What an LMS's note about one attempt states (None: it does not say)."""
    user: str | None = None              # the LMS's id of the student
    name: str | None = None              # the display name
    submitted_on: dt.date | None = None


@dataclasses.dataclass(frozen=True)
class Notes:
    """Text files an LMS writes beside a download's notebooks, one per attempt (Blackboard: '<prefix>.txt').
    collect reads each one, bounded, hands them to the LMS's context(), and checks what a note states against the
    LMS's part of its attempt's name (the name decides; the instructor is told of a disagreement)."""
    title: str                                   # what the instructor calls one: "Blackboard's note"
    max_bytes: int
    attempt_of: Callable[[str], str | None]      # the attempt prefix a zip member is the note of (None: not a note)
    facts: Callable[[str], NoteFacts]            # what a note's text states


def no_context(notebooks: list[str], notes: dict[str, str]) -> dict:
    """An LMS whose names say everything on their own: parse needs nothing from the rest of the download."""
    return {}


def no_missing_settings(settings: dict, assignments) -> list[str]:
    """An LMS whose grade files need nothing from autograder/lms.toml."""
    return []
