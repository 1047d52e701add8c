"""Grades in the files each LMS imports, for the students `make collect` took from that LMS: each LMS module
(intake/lms/<name>.py, grade_files) says what its files hold; this writes them, spreadsheet-safe.

Scores are the gradebook's final ones (manual grades included); a notebook that could not be graded
leaves its cell blank (never 0), so the LMS shows no grade rather than a wrong one. What an LMS's files need
to know about the course (Canvas: each assignment's name and id) is its table in autograder/lms.toml ([<lms>.*]).
"""
from __future__ import annotations

import pathlib
import tomllib

from posenc_autograder import csvsafe
from posenc_autograder.course import Course
from posenc_autograder.intake import lms
from posenc_autograder.results import NotebookResult

LMS_SETTINGS = "autograder/lms.toml"


def paths(course: Course) -> list[pathlib.Path]:
    """The LMS files the last run wrote (every LMS module's files are named grades-<lms>...csv)."""
    return sorted(course.reports.glob("grades-*.csv"))


def settings(course: Course) -> dict:
    """The course's LMS settings ({} when the file is absent); a broken file is an error that says where."""
    file = course.path(LMS_SETTINGS)
    if not file.is_file():
        return {}
    try:
        return tomllib.loads(file.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SystemExit(f"error: {file} is not valid TOML ({exc})") from None


def lms_settings(course: Course, name: str) -> dict:
    """The LMS's own table of lms.toml ({} when it has none)."""
    return settings(course).get(name, {})


def write_lms(course: Course, name: str, scores, people) -> list[pathlib.Path]:
    """The grade files of one LMS for the students collected from it. `scores`: (student, assignment) ->
    (score, max score, graded); `people`: the roster."""
    rows = {key: row for key, row in people.items() if row["lms"] == name and key in scores}
    if not rows:
        return []
    files = lms.REGISTRY[name].grade_files(rows, scores, lms_settings(course, name))
    return [csvsafe.write(course.reports / f.name, f.fields, f.rows, f.preamble) for f in files]


def missing_settings(course: Course, name: str, assignments) -> list[str]:
    """Assignments the LMS's grade files cannot name as it would until lms.toml says more (the instructor is told
    what to add)."""
    return lms.REGISTRY[name].missing_settings(lms_settings(course, name), assignments)


def class_scores(results: list[NotebookResult], finals: dict) -> dict:
    """(student, assignment) -> (final score, max score, graded: every notebook of it was graded)."""
    graded: dict[tuple[str, str], bool] = {}
    for r in results:
        graded[r.student, r.assignment] = graded.get((r.student, r.assignment), True) and r.graded
    return {key: (*finals[key], ok) for key, ok in graded.items()}


def write_all(course: Course, results: list[NotebookResult], finals: dict, deadlines) -> list[pathlib.Path]:
    """`finals`: (student, assignment) -> (score, max score), the gradebook's (gradebook.class_scores);
    `deadlines` (late_policy.Deadlines): the submission time each file states, the record's (of the attempt that
    counts), never the roster's column, which a later door's attempt can leave behind."""
    for stale in paths(course):
        stale.unlink()
    scores = class_scores(results, finals)
    people = {key: {**row, "submitted_at": deadlines.submitted_stamp(*key)} for key, row in deadlines.people.items()}
    return [path for name in lms.REGISTRY for path in write_lms(course, name, scores, people)]
