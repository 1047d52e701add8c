"""Each graded notebook's result, kept next to the autograded notebook (<notebook>.result.json).

The class-wide files (grades, report, dashboard) and `make feedback` are rebuilt from these, so a
run limited to some students merges into the class instead of replacing it.
"""
from __future__ import annotations

import json
import pathlib

from posenc_autograder.course import Course
from posenc_autograder.results import NotebookResult

SUFFIX = ".result.json"


def path(course: Course, student: str, assignment: str, notebook: str) -> pathlib.Path:
    return course.autograded / student / assignment / f"{notebook}{SUFFIX}"


def load(file: pathlib.Path) -> dict | None:
    """The stored record (sha256, fingerprint, result), or None when absent or unreadable."""
    try:
        return json.loads(file.read_text()) if file.is_file() and not file.is_symlink() else None
    except (ValueError, OSError):
        return None


def result_from_json(data: dict) -> NotebookResult:
    return NotebookResult.from_json(data)


def save(course: Course, result: NotebookResult, digest: str | None, fingerprint: str) -> pathlib.Path:
    file = path(course, result.student, result.assignment, result.notebook)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"sha256": digest, "fingerprint": fingerprint,
                                "result": result.to_json()}, indent=1))
    return file


def forget(course: Course, student: str, assignment: str, notebook: str) -> None:
    """No stored result for this notebook (until save() writes the new one)."""
    path(course, student, assignment, notebook).unlink(missing_ok=True)


def stored_results(course: Course) -> list[NotebookResult]:
    """Every stored result whose submission folder still exists, in a stable order."""
    found = []
    for file in sorted(course.autograded.glob(f"*/*/*{SUFFIX}")):
        student, assignment = file.parent.parent.name, file.parent.name
        record = load(file)
        if record is None or not (course.submitted / student / assignment).is_dir():
            continue
        try:
            found.append(result_from_json(record["result"]))
        except (KeyError, TypeError):
            continue
    return found


def merged(course: Course, fresh: list[NotebookResult]) -> list[NotebookResult]:
    """The whole class: this run's results, and the stored ones for everyone this run did not touch."""
    by_key = {(r.student, r.assignment, r.notebook): r for r in stored_results(course)}
    by_key.update({(r.student, r.assignment, r.notebook): r for r in fresh})
    return [by_key[k] for k in sorted(by_key)]
