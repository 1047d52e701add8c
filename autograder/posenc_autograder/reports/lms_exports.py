"""Grades in the files each LMS imports, for the students `make collect` took from that LMS.

- Canvas: the gradebook import CSV (Student, ID, SIS User ID, SIS Login ID, Section, one column per
  assignment), with its "Points Possible" row; Canvas matches rows by its user ID (kept in the roster).
- Moodle: the assignment's offline grading worksheet, one file per assignment; rows are matched by
  "Participant <id>".
Scores are the gradebook's final ones (manual grades included).
"""
from __future__ import annotations

import pathlib

from posenc_autograder import csvsafe
from posenc_autograder.intake import roster
from posenc_autograder.course import Course
from posenc_autograder.results import NotebookResult

CANVAS_FIELDS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_FIELDS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                 "Grade can be changed", "Last modified (submission)", "Feedback comments"]


def canvas_path(course: Course) -> pathlib.Path:
    return course.reports / "grades-canvas.csv"


def moodle_path(course: Course, assignment: str) -> pathlib.Path:
    return course.reports / f"grades-moodle-{assignment}.csv"


def paths(course: Course) -> list[pathlib.Path]:
    """The LMS files the last run wrote."""
    return sorted(course.reports.glob("grades-canvas.csv")) + sorted(course.reports.glob("grades-moodle-*.csv"))


def write_canvas(course: Course, scores, people) -> pathlib.Path | None:
    rows = {key: row for key, row in people.items() if row["lms"] == "canvas" and key in scores}
    if not rows:
        return None
    assignments = sorted({a for _, a in rows})
    maxima = {a: max(scores[key][1] for key in rows if key[1] == a) for a in assignments}
    students: dict[str, dict] = {}
    for (student, assignment), row in sorted(rows.items()):
        # Canvas matches on ID; the SIS columns stay empty (the download does not carry them).
        line = students.setdefault(row["lms_user_id"], {"Student": row["name"], "ID": row["lms_user_id"]})
        line[assignment] = scores[(student, assignment)][0]
    points_possible = ["    Points Possible", "", "", "", ""] + [maxima[a] for a in assignments]
    return csvsafe.write(canvas_path(course), CANVAS_FIELDS + assignments, list(students.values()), [points_possible])


def write_moodle(course: Course, scores, people) -> list[pathlib.Path]:
    written = []
    rows = {key: row for key, row in people.items() if row["lms"] == "moodle" and key in scores}
    for assignment in sorted({a for _, a in rows}):
        lines = [{"Identifier": f"Participant {row['lms_user_id']}", "Full name": row["name"],
                  "Status": "Submitted for grading", "Grade": f"{scores[key][0]:.2f}",
                  "Maximum Grade": f"{scores[key][1]:.2f}", "Grade can be changed": "Yes",
                  "Last modified (submission)": row["submitted_at"]}
                 for key, row in sorted(rows.items()) if key[1] == assignment]
        written.append(csvsafe.write(moodle_path(course, assignment), MOODLE_FIELDS, lines))
    return written


def write_all(course: Course, results: list[NotebookResult], finals: dict) -> list[pathlib.Path]:
    """`finals`: (student, assignment) -> (score, max score), the gradebook's (gradebook.class_scores)."""
    for stale in paths(course):
        stale.unlink()
    scores, people = {(r.student, r.assignment): finals[r.student, r.assignment] for r in results}, roster.load(course)
    canvas = write_canvas(course, scores, people)
    return ([canvas] if canvas else []) + write_moodle(course, scores, people)
