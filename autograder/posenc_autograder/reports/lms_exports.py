"""Grades in the files each LMS imports, for the students `make collect` took from that LMS: each LMS module
(intake/lms/<name>.py, grade_files) says what its files hold; this writes them, spreadsheet-safe.

Scores are the gradebook's final ones (manual grades included); a notebook that could not be graded
leaves its cell blank (never 0), so the LMS shows no grade rather than a wrong one. Canvas fills an
assignment's own column only when the header is "<Assignment name> (<assignment id>)": the name and id
come from autograder/lms.toml (see the comments there for where Canvas shows the id).
"""
from __future__ import annotations

import pathlib
import tomllib

from posenc_autograder import csvsafe
from posenc_autograder.intake import lms, roster
from posenc_autograder.course import Course
from posenc_autograder.results import NotebookResult

LMS_SETTINGS = "autograder/lms.toml"


def canvas_path(course: Course) -> pathlib.Path:
    return course.reports / lms.canvas.GRADE_FILE


def moodle_path(course: Course, assignment: str) -> pathlib.Path:
    return course.reports / lms.moodle.grade_file_name(assignment)


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


def canvas_column(course: Course, assignment: str) -> str:
    """"<Assignment name> (<assignment id>)" when lms.toml gives the id; else the assignment's folder name
    (Canvas then adds a new column instead of filling the assignment's)."""
    given = settings(course).get("canvas", {}).get(assignment, {})
    return f"{given.get('name') or assignment} ({given['id']})" if str(given.get("id", "")).strip() else assignment


def write_lms(course: Course, name: str, scores, people) -> list[pathlib.Path]:
    """The grade files of one LMS for the students collected from it. `scores`: (student, assignment) ->
    (score, max score, graded); `people`: the roster."""
    rows = {key: row for key, row in people.items() if row["lms"] == name and key in scores}
    if not rows:
        return []
    files = lms.REGISTRY[name].grade_files(rows, scores, lambda assignment: canvas_column(course, assignment))
    return [csvsafe.write(course.reports / f.name, f.fields, f.rows, f.preamble) for f in files]


def unnamed_canvas_columns(course: Course, assignments) -> list[str]:
    """Assignments whose Canvas column has no id yet (the instructor is told how to add it)."""
    return [a for a in sorted(assignments) if canvas_column(course, a) == a]


def class_scores(results: list[NotebookResult], finals: dict) -> dict:
    """(student, assignment) -> (final score, max score, graded: every notebook of it was graded)."""
    graded: dict[tuple[str, str], bool] = {}
    for r in results:
        graded[r.student, r.assignment] = graded.get((r.student, r.assignment), True) and r.graded
    return {key: (*finals[key], ok) for key, ok in graded.items()}


def write_all(course: Course, results: list[NotebookResult], finals: dict) -> list[pathlib.Path]:
    """`finals`: (student, assignment) -> (score, max score), the gradebook's (gradebook.class_scores)."""
    for stale in paths(course):
        stale.unlink()
    scores, people = class_scores(results, finals), roster.load(course)
    return [path for name in lms.REGISTRY for path in write_lms(course, name, scores, people)]
