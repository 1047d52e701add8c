"""Grades in the files each LMS imports, for the students `make collect` took from that LMS.

- Canvas: the gradebook import CSV (Student, ID, SIS User ID, SIS Login ID, Section, one column per
  assignment), with its "Points Possible" row; Canvas matches rows by its user ID (kept in the roster).
- Moodle: the assignment's offline grading worksheet, one file per assignment; rows are matched by
  "Participant <id>".
Scores are the gradebook's final ones (manual grades included); a notebook that could not be graded
leaves its cell blank (never 0), so the LMS shows no grade rather than a wrong one. Canvas fills an
assignment's own column only when the header is "<Assignment name> (<assignment id>)": the name and id
come from autograder/lms.toml (see the comments there for where Canvas shows the id).
"""
from __future__ import annotations

import pathlib
import tomllib

from posenc_autograder import csvsafe
from posenc_autograder.intake import roster
from posenc_autograder.course import Course
from posenc_autograder.results import NotebookResult

CANVAS_FIELDS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
LMS_SETTINGS = "autograder/lms.toml"
MOODLE_FIELDS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                 "Grade can be changed", "Last modified (submission)", "Feedback comments"]


def canvas_path(course: Course) -> pathlib.Path:
    return course.reports / "grades-canvas.csv"


def moodle_path(course: Course, assignment: str) -> pathlib.Path:
    return course.reports / f"grades-moodle-{assignment}.csv"


def paths(course: Course) -> list[pathlib.Path]:
    """The LMS files the last run wrote."""
    return sorted(course.reports.glob("grades-canvas.csv")) + sorted(course.reports.glob("grades-moodle-*.csv"))


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


def _score(scores, key) -> float | str:
    """The final score, or blank for a notebook that could not be graded."""
    score, _, graded = scores[key]
    return score if graded else ""


def write_canvas(course: Course, scores, people) -> pathlib.Path | None:
    """`scores`: (student, assignment) -> (score, max score, graded)."""
    rows = {key: row for key, row in people.items() if row["lms"] == "canvas" and key in scores}
    if not rows:
        return None
    assignments = sorted({a for _, a in rows})
    columns = {a: canvas_column(course, a) for a in assignments}
    maxima = {a: max(scores[key][1] for key in rows if key[1] == a) for a in assignments}
    students: dict[str, dict] = {}
    for (student, assignment), row in sorted(rows.items()):
        # Canvas matches on ID; the SIS columns stay empty (the download does not carry them).
        line = students.setdefault(row["lms_user_id"], {"Student": row["name"], "ID": row["lms_user_id"]})
        line[columns[assignment]] = _score(scores, (student, assignment))
    points_possible = ["    Points Possible", "", "", "", ""] + [maxima[a] for a in assignments]
    return csvsafe.write(canvas_path(course), CANVAS_FIELDS + [columns[a] for a in assignments],
                         list(students.values()), [points_possible])


def unnamed_canvas_columns(course: Course, assignments) -> list[str]:
    """Assignments whose Canvas column has no id yet (the instructor is told how to add it)."""
    return [a for a in sorted(assignments) if canvas_column(course, a) == a]


def write_moodle(course: Course, scores, people) -> list[pathlib.Path]:
    written = []
    rows = {key: row for key, row in people.items() if row["lms"] == "moodle" and key in scores}
    for assignment in sorted({a for _, a in rows}):
        lines = [{"Identifier": f"Participant {row['lms_user_id']}", "Full name": row["name"],
                  "Status": "Submitted for grading",
                  "Grade": f"{scores[key][0]:.2f}" if scores[key][2] else "",
                  "Maximum Grade": f"{scores[key][1]:.2f}", "Grade can be changed": "Yes",
                  "Last modified (submission)": row["submitted_at"]}
                 for key, row in sorted(rows.items()) if key[1] == assignment]
        written.append(csvsafe.write(moodle_path(course, assignment), MOODLE_FIELDS, lines))
    return written


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
    canvas = write_canvas(course, scores, people)
    return ([canvas] if canvas else []) + write_moodle(course, scores, people)
