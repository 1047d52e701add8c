"""autograder/roster.csv: who each collected submission belongs to in the LMS, and when it was handed in.

One row per (student id, assignment), written by `make collect`, read by the grade exports and the
dashboard. The LMS's ids are kept so grades can go back to the right person.
"""
from __future__ import annotations

import csv
import pathlib

from posenc_autograder import csvsafe
from posenc_autograder.course import Course

ROSTER_FILE = "autograder/roster.csv"
FIELDS = ["student_id", "assignment", "lms", "lms_user_id", "name", "submitted_at", "late", "attempt",
          "file_name", "source_zip", "sha256", "lms_prefix", "extension"]  # extension: a later deadline, ISO 8601


def path(course: Course) -> pathlib.Path:
    return course.path(ROSTER_FILE)


def _unquote(value: str) -> str:
    """Undo csvsafe's leading quote on the way back in."""
    return value[1:] if value.startswith("'") and value[1:2] in csvsafe.FORMULA_STARTS else value


def load(course: Course) -> dict[tuple[str, str], dict]:
    """(student id, assignment) -> row; empty when nothing was collected yet."""
    if not path(course).is_file():
        return {}
    with open(path(course), newline="") as src:
        rows = [{k: _unquote(v or "") for k, v in row.items() if k in FIELDS} for row in csv.DictReader(src)]
    return {(r["student_id"], r["assignment"]): r for r in rows}


def save(course: Course, rows: dict[tuple[str, str], dict]) -> pathlib.Path:
    return csvsafe.write(path(course), FIELDS, [rows[k] for k in sorted(rows)])
