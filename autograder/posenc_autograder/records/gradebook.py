"""The nbgrader gradebook: registering assignments and recording automatic scores.

Only `auto_score` is written, so manual grades entered in formgrader survive every regrade.
"""
from __future__ import annotations

import pathlib
import warnings

import nbformat
from nbgrader.api import (Assignment, BaseCell, Grade, Gradebook, MissingEntry, Notebook, Student,
                          SubmittedAssignment, SubmittedNotebook)
from sqlalchemy import update

from posenc_autograder.authoring import cell_definitions
from posenc_autograder.course import Course, grade_id, nbgrader_meta, open_gradebook


def graded_cells(notebook_path: pathlib.Path) -> dict[str, float]:
    nb = nbformat.read(notebook_path, as_version=4)
    return {grade_id(c): float(nbgrader_meta(c).get("points", 0)) for c in nb.cells if nbgrader_meta(c).get("grade")}


def is_registered(course: Course, assignment: str) -> bool:
    """True when the gradebook knows exactly the graded cells of the assignment, with their current points."""
    with open_gradebook(course) as gb:
        for notebook in course.notebooks(assignment):
            definition = cell_definitions.read_definition(gb, assignment, notebook)
            if definition is None or definition.points() != graded_cells(course.source_notebook(assignment, notebook)):
                return False
    return True


def register(course: Course, assignment: str, scratch: pathlib.Path) -> list[cell_definitions.Migration]:
    """Record the assignment's cells as solutions/ defines them now: nbgrader writes the definition into a
    scratch gradebook and the course's is migrated to it in place (submissions and manual grades kept)."""
    if is_registered(course, assignment):
        return []
    definitions = cell_definitions.built_definitions(course, assignment, course.root, scratch)
    return cell_definitions.migrate_all(course, {assignment: definitions})


def record_scores(gb: Gradebook, student: str, assignment: str, notebook: str, scores: dict[str, float],
                  timestamp=None) -> None:
    """Automatic scores, and the submission time formgrader shows (it must equal timestamp.txt's)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not in session.*")
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            gb.update_or_create_student(student)
            submission = gb.add_submission(assignment, student)
        submission.timestamp = timestamp
        gb.db.flush()
        # One SELECT and one UPDATE for the notebook's grades: the ORM loads each grade and its cell
        # apart (some 40 queries, a tenth of a second a student).
        rows = {row.cell: row.grade_id for row in _grade_rows(gb, assignment, student, notebook)}
        missing = set(scores) - set(rows)
        if missing:         # tests added by a re-release since this submission was first recorded
            submitted = gb.find_submission_notebook(notebook, assignment, student)
            for cell_id in sorted(missing):
                gb.db.add(Grade(cell_id=gb.find_grade_cell(cell_id, notebook, assignment).id, notebook=submitted))
            gb.db.flush()
            rows = {row.cell: row.grade_id for row in _grade_rows(gb, assignment, student, notebook)}
        gb.db.execute(update(Grade), [{"id": rows[cell_id], "auto_score": score, "needs_manual_grade": False}
                                      for cell_id, score in scores.items()])
        gb.db.commit()


def _grade_rows(gb: Gradebook, assignment: str, student: str | None = None, notebook: str | None = None):
    """(student, notebook, cell, grade_id, score, manual) rows of an assignment's grades, one query; scores
    by nbgrader's own rule (Grade.score: manual over automatic, plus extra credit)."""
    query = (gb.db.query(Student.id.label("student"), Notebook.name.label("notebook"), BaseCell.name.label("cell"),
                         Grade.id.label("grade_id"), Grade.score.label("score"), Grade.manual_score.label("manual"))
             .select_from(Grade).join(BaseCell, Grade.cell_id == BaseCell.id)
             .join(SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id)
             .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
             .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
             .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
             .join(Student, SubmittedAssignment.student_id == Student.id)
             .filter(Assignment.name == assignment))
    if student is not None:
        query = query.filter(Student.id == student)
    if notebook is not None:
        query = query.filter(Notebook.name == notebook)
    return query.all()


def final_scores(gb: Gradebook, student: str, assignment: str) -> tuple[float, float]:
    """(score, max score) as nbgrader computes them: manual scores override automatic ones."""
    found = class_final_scores(gb, assignment, student)
    if student not in found:
        raise MissingEntry(f"no submission of {assignment} by {student}")
    return found[student]


def class_final_scores(gb: Gradebook, assignment: str, student: str | None = None) -> dict[str, tuple[float, float]]:
    """final_scores() of every student of an assignment (or one), in one query."""
    query = (gb.db.query(Student.id, SubmittedAssignment.score, SubmittedAssignment.max_score)
             .select_from(SubmittedAssignment).join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
             .join(Student, SubmittedAssignment.student_id == Student.id)
             .filter(Assignment.name == assignment))
    rows = (query if student is None else query.filter(Student.id == student)).all()
    return {student: (float(score), float(max_score)) for student, score, max_score in rows}


def cell_scores(gb: Gradebook, student: str, assignment: str, notebook: str) -> dict[str, tuple[float, bool]]:
    """cell id -> (score, set by hand in formgrader?) as the gradebook holds them now."""
    return class_cell_scores(gb, assignment, student).get((student, notebook), {})


def class_cell_scores(gb: Gradebook, assignment: str, student: str | None = None
                      ) -> dict[tuple[str, str], dict[str, tuple[float, bool]]]:
    """(student, notebook) -> cell_scores(), for a whole assignment (or one student) in one query."""
    found: dict[tuple[str, str], dict[str, tuple[float, bool]]] = {}
    for row in _grade_rows(gb, assignment, student):
        found.setdefault((row.student, row.notebook), {})[row.cell] = (float(row.score), row.manual is not None)
    return found


def class_scores(gb: Gradebook, assignments) -> tuple[dict, dict]:
    """For the class files: (student, assignment) -> final scores, (student, assignment, notebook) -> cell scores."""
    finals, cells = {}, {}
    for assignment in sorted(assignments):
        finals.update({(student, assignment): v for student, v in class_final_scores(gb, assignment).items()})
        cells.update({(student, assignment, notebook): v
                      for (student, notebook), v in class_cell_scores(gb, assignment).items()})
    return finals, cells
