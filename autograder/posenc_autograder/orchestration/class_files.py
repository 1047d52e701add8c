"""The class-wide files written after anything changes a grade: grades.csv, the LMS import files, the run report
and the dashboard, all from the gradebook's current points."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from posenc_autograder.course import Course
from posenc_autograder.records import gradebook, results_store
from posenc_autograder.reports import run_report
from posenc_autograder.results import NotebookResult


def rebuild_class_files(course: Course, fresh: Sequence[NotebookResult] = (), refused: Sequence[str] = (),
                        graded: Mapping[tuple[str, str, str], results_store.GradedFile] | None = None,
                        in_submitted: Mapping[tuple[str, str], dict[str, str]] | None = None
                        ) -> results_store.ClassResults:
    """Write every class-wide file again, for the whole class: every stored result, `fresh` (this run's) in place
    of the stored ones of their notebooks (`graded`: the files the run graded, results_store.class_results;
    `in_submitted`: what folders of submitted/ hold, as the run hashed them, late_policy.Deadlines'). Returns the class
    they were made from."""
    stored = results_store.class_results(course, fresh, graded)
    with gradebook.open_gradebook(course) as gb:
        run_report.write_all(course, gb, stored.results, refused, stored.files, in_submitted)
    return stored
