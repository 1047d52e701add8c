"""Each graded notebook's result, kept next to the autograded notebook (<notebook>.result.json).

The class-wide files (grades, report, dashboard) and `make feedback` are rebuilt from these, so a
run limited to some students merges into the class instead of replacing it.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

from posenc_autograder.course import Course
from posenc_autograder.results import NotebookResult

SUFFIX = ".result.json"


def path(course: Course, student: str, assignment: str, notebook: str) -> pathlib.Path:
    return course.autograded / student / assignment / f"{notebook}{SUFFIX}"


def load(file: pathlib.Path) -> dict[str, Any] | None:
    """The stored record (sha256, fingerprint, result), or None when absent or unreadable."""
    try:
        return json.loads(file.read_text()) if file.is_file() and not file.is_symlink() else None
    except (ValueError, OSError):
        return None


def result_from_json(data: dict[str, Any]) -> NotebookResult:
    return NotebookResult.from_json(data)


def save(course: Course, result: NotebookResult, digest: str | None, fingerprint: str,
         kept: str | None = None) -> pathlib.Path:
    """digest: the graded file's sha256 (the dashboard finds byte-identical files by it, and an untouched one by the
    result's own flag, instead of reading every submission again); kept: the sha256 of what was kept of its run for a
    regrade (records/kept_records.py), which a regrade reads only when it is this."""
    file = path(course, result.student, result.assignment, result.notebook)
    file.parent.mkdir(parents=True, exist_ok=True)
    record = {"sha256": digest, "fingerprint": fingerprint, "result": result.to_json()}
    if kept is not None:
        record["kept"] = kept
    file.write_text(json.dumps(record))          # compact: the C encoder (an indented one is Python's, ~10x slower)
    return file


def forget(course: Course, student: str, assignment: str, notebook: str) -> None:
    """No stored result for this notebook (until save() writes the new one)."""
    path(course, student, assignment, notebook).unlink(missing_ok=True)


@dataclasses.dataclass(frozen=True)
class GradedFile:
    """What a stored result says of the file it graded."""
    sha256: str | None


@dataclasses.dataclass
class ClassResults:
    """The whole class as the class files show it: each notebook's result, and what was graded."""
    results: list[NotebookResult]
    files: dict[tuple[str, str, str], GradedFile]


def class_results(course: Course, fresh: Sequence[NotebookResult] = (),
                  graded: Mapping[tuple[str, str, str], GradedFile] | None = None) -> ClassResults:
    """Every stored result whose submission folder still exists, each record read once, in a stable order; `fresh`
    (this run's) replace the stored ones of their notebooks. `graded`: what the run knows of the files it graded, by
    notebook (the sha256 it stored with each of `fresh`); given, the records of `fresh` are not read again."""
    results, files = {}, {}
    skip = {(r.student, r.assignment, r.notebook) for r in fresh} if graded is not None else set()
    for file in sorted(course.autograded.glob(f"*/*/*{SUFFIX}")):
        student, assignment = file.parent.parent.name, file.parent.name
        if (student, assignment, file.name[:-len(SUFFIX)]) in skip:
            continue                                  # this run's: its result and file are known
        record = load(file)
        if record is None or not (course.submitted / student / assignment).is_dir():
            continue
        try:
            result = result_from_json(record["result"])
        except (KeyError, TypeError):
            continue
        key = (result.student, result.assignment, result.notebook)
        results[key] = result
        files[key] = GradedFile(record.get("sha256") if isinstance(record.get("sha256"), str) else None)
    for result in fresh:
        key = (result.student, result.assignment, result.notebook)
        results[key] = result
        if graded is not None and key in graded:
            files[key] = graded[key]
    return ClassResults([results[k] for k in sorted(results)], files)


def stored_results(course: Course) -> list[NotebookResult]:
    """Every stored result whose submission folder still exists, in a stable order."""
    return class_results(course).results

