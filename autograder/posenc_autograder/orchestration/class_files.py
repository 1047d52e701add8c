"""The class-wide files written after anything changes a grade: grades.csv, the LMS import files, the run report
and the dashboard, all from the gradebook's current points."""
from __future__ import annotations

from posenc_autograder.course import Course
from posenc_autograder.records import gradebook, results_store
from posenc_autograder.reports import run_report
from posenc_autograder.results import NotebookResult


def rebuild_class_files(course: Course, results: list[NotebookResult] | None = None, refused: list[str] = ()) -> None:
    """Write every class-wide file again; `results` defaults to every stored result (the whole class)."""
    if results is None:
        results = results_store.stored_results(course)
    with gradebook.open_gradebook(course) as gb:
        run_report.write_all(course, gb, results, refused)
