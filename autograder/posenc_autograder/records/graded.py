"""Storing a graded notebook: everything kept of it, the same for `make grade` and the portal's worker.

The gradebook's scores (manual grades kept) and submission time, the attempt's points in the record of attempts,
nbgrader's files beside the submission, the autograded notebook, the feedback page (written by the page writer the
caller passes: reports/, a later stage) and the result record. The result record goes first and comes back last: a
run stopped in between leaves the notebook with no record, so the next run grades it again instead of trusting
files that may disagree with the gradebook.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable

from posenc_autograder.course import Course
from posenc_autograder.grading.pipeline import grader_error, released
from posenc_autograder.grading.regrade import RUN_AGAIN, HowRegraded, keep_higher_scores, regrade_changes
from posenc_autograder.intake import attempts
from posenc_autograder.intake.submissions import Submission
from posenc_autograder.records import gradebook, nbgrader_files, results_store
from posenc_autograder.results import NotebookResult

if TYPE_CHECKING:
    from nbformat import NotebookNode
    from nbgrader.api import Gradebook


@dataclasses.dataclass(frozen=True)
class Stored:
    """A graded notebook as the gradebook now holds it: what its feedback page states."""
    result: NotebookResult
    scores: dict[str, tuple[float, bool]]        # cell id -> (points, set by hand)
    comments: list[tuple[str, str]]              # (cell, text) written in formgrader


Page = Callable[[Stored], object]                # writes the notebook's feedback page (reports.feedback.page_writer)


def store(course: Course, gb: Gradebook, sub: Submission, result: NotebookResult, digest: str | None, fingerprint: str,
          previous: dict[str, Any] | None, page: Page, executed_notebook: str | NotebookNode | None = None,
          kept: str | None = None, how: HowRegraded = RUN_AGAIN) -> NotebookResult:
    """Store one result everywhere it belongs (`previous`: the record stored before, results_store.load; `kept`: the
    sha256 of what was kept of its run for a regrade, records/kept_records.py; `how`: how the result was made)."""
    result = keep_higher_scores(result, previous, digest, fingerprint)
    change = regrade_changes(result, previous, fingerprint, digest, how)
    if change:
        result.notes.append(change)
    if previous is not None:
        results_store.forget(course, *sub.key)
    when = nbgrader_files.submission_time(course, sub.student, sub.assignment)
    scores = gradebook.record_scores(gb, sub.student, sub.assignment, sub.notebook,
                                     {t.cell_id: t.points for t in result.tests}, when)
    if digest:
        attempts.scored(course, sub.student, sub.assignment, digest, result.score, result.max_score)
    nbgrader_files.place_beside(course, sub.student, sub.assignment, when)
    release = released(course, sub.assignment, sub.notebook)             # shared: only read here
    nbgrader_files.write_notebook(nbgrader_files.autograded_notebook(executed_notebook, release, result),
                                  course.autograded / sub.student / sub.assignment / f"{sub.notebook}.ipynb")
    page(Stored(result, scores, gradebook.comments(gb, sub.student, sub.assignment, sub.notebook)))
    results_store.save(course, result, digest, fingerprint, kept)
    return result


UNREAD = object()              # settle's `previous` when the caller has not read the stored record


def settle(course: Course, gb: Gradebook, sub: Submission, result: NotebookResult, digest: str | None,
           fingerprint: str, page: Page, executed_notebook: str | NotebookNode | None = None, kept: str | None = None,
           previous: dict[str, Any] | None | object = UNREAD, how: HowRegraded = RUN_AGAIN) -> NotebookResult:
    """Store one submission's result. An unexpected error costs that submission only: it is stored as 'not graded'
    with the reason (feedback included), and the run goes on. previous: the stored record, when the caller has read
    it already."""
    if previous is UNREAD:
        previous = results_store.load(results_store.path(course, *sub.key))       # both attempts compare with it
    assert previous is None or isinstance(previous, dict)
    try:
        return store(course, gb, sub, result, digest, fingerprint, previous, page, executed_notebook, kept, how)
    except Exception as exc:  # noqa: BLE001 - one notebook never stops the others
        failed = grader_error(course, sub, exc)
        try:
            return store(course, gb, sub, failed, digest, fingerprint, previous, page)
        except Exception:  # noqa: BLE001 - still listed in the run report
            return failed
