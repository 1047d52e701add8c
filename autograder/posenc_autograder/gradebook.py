"""The nbgrader gradebook: registering assignments and recording automatic scores.

Only `auto_score` is written, so manual grades entered in formgrader survive every regrade.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import warnings

import nbformat
from nbgrader.api import Gradebook, MissingEntry

from .course import COURSE_ID, Course, grade_id, nbgrader_meta, run_nbgrader


def graded_cells(notebook_path: pathlib.Path) -> dict[str, float]:
    nb = nbformat.read(notebook_path, as_version=4)
    return {grade_id(c): float(nbgrader_meta(c).get("points", 0)) for c in nb.cells if nbgrader_meta(c).get("grade")}


def _venv_tools_on_path() -> None:
    """nbgrader's Gradebook runs `alembic` by name to migrate the database: find it in this environment."""
    tools = str(pathlib.Path(sys.executable).parent)
    if tools not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = tools + os.pathsep + os.environ.get("PATH", "")


@contextlib.contextmanager
def open_gradebook(course: Course):
    _venv_tools_on_path()
    # nbgrader's add_submission trips SQLAlchemy's autoflush warnings; they are noise, not problems.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="nbgrader")
        warnings.filterwarnings("ignore", message=".*not in session.*")
        with Gradebook(course.gradebook_url, course_id=COURSE_ID) as gb:
            yield gb


def is_registered(course: Course, assignment: str) -> bool:
    """True when the gradebook knows every graded cell of the assignment with its current points."""
    with open_gradebook(course) as gb:
        for notebook in course.notebooks(assignment):
            for cell_id, points in graded_cells(course.source_notebook(assignment, notebook)).items():
                try:
                    if gb.find_grade_cell(cell_id, notebook, assignment).max_score != points:
                        return False
                except MissingEntry:
                    return False
    return True


def register(course: Course, assignment: str, scratch: pathlib.Path) -> None:
    """Let nbgrader record the assignment's cells (generate_assignment, released into a scratch folder)."""
    if is_registered(course, assignment):
        return
    scratch.mkdir(parents=True, exist_ok=True)
    result = run_nbgrader(course.root, "generate_assignment", assignment, "--force", "--log-level=ERROR",
                          f"--CourseDirectory.release_directory={scratch}",
                          f"--CourseDirectory.db_url={course.gradebook_url}", f"--CourseDirectory.root={course.root}",
                          home=scratch, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader could not register '{assignment}':\n{result.stdout}\n{result.stderr}")


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
        # One query for the notebook's grades rather than one per cell (22 queries cost 0.6 s a student).
        grades = {g.name: g for g in gb.find_submission_notebook(notebook, assignment, student).grades}
        for cell_id, score in scores.items():
            grade = grades.get(cell_id) or gb.find_grade(cell_id, notebook, assignment, student)
            grade.auto_score = score
            grade.needs_manual_grade = False
        gb.db.commit()


def final_scores(gb: Gradebook, student: str, assignment: str) -> tuple[float, float]:
    """(score, max score) as nbgrader computes them: manual scores override automatic ones."""
    submission = gb.find_submission(assignment, student)
    return float(submission.score), float(submission.max_score)


def cell_scores(gb: Gradebook, student: str, assignment: str, notebook: str) -> dict[str, tuple[float, bool]]:
    """cell id -> (score, set by hand in formgrader?) as the gradebook holds them now."""
    try:
        graded = gb.find_submission_notebook(notebook, assignment, student).grades
    except MissingEntry:
        return {}
    return {g.name: (float(g.score), g.manual_score is not None) for g in graded}
