"""Storing a graded notebook: everything kept of it, the same for `make grade` and the portal's worker.

The gradebook's scores (manual grades kept) and submission time, the attempt's points in the record of attempts,
nbgrader's files beside the submission, the autograded notebook, the feedback page (written by the page writer the
caller passes: reports/, a later stage) and the result record. The result record goes first and comes back last: a
run stopped in between leaves the notebook with no record, so the next run grades it again instead of trusting
files that may disagree with the gradebook. A run storing many notebooks (make grade) puts them in a Batch: their
scores share one commit, and their result records are written after it (still last).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import pathlib
import pickle
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from posenc_autograder.course import Course
from posenc_autograder.grading.pipeline import grader_error, released
from posenc_autograder.grading.regrade import RUN_AGAIN, HowRegraded, keep_higher_scores, regrade_changes
from posenc_autograder.intake import attempts
from posenc_autograder.intake.submissions import Submission
from posenc_autograder.records import nbgrader_files, results_store
from posenc_autograder.results import NotebookResult

# records.gradebook (nbgrader's models, SQLAlchemy's ORM: half a CPU-second) is imported where a notebook is stored:
# the processes re-judging ahead of a run (made_ahead) never use it, and are forked before the run imports it.

if TYPE_CHECKING:
    from nbformat import NotebookNode
    from nbgrader.api import Gradebook


@dataclasses.dataclass(frozen=True)
class Stored:
    """A graded notebook as the gradebook now holds it: what its feedback page states."""
    result: NotebookResult
    scores: dict[str, tuple[float, bool]]        # cell id -> (points, set by hand)
    comments: list[tuple[str, str]]              # (cell, text) written in formgrader


class Page(Protocol):
    """Writes a stored notebook's feedback page (reports.feedback.PageWriter)."""

    def __call__(self, stored: Stored) -> object: ...

    def ahead(self, stored: Stored) -> Any:
        """The page rendered, not written."""

    def write_ahead(self, made: Any, stored: Stored) -> object:
        """made (ahead's) written where it was made from this very stored notebook, else the page written now."""


@dataclasses.dataclass(frozen=True)
class MadeAhead:
    """A re-judged notebook's autograded notebook and feedback page, made by a process re-judging ahead of the run
    (made_ahead) from the result as store settles it and the gradebook's points as store records them (no manual
    grade, no comment): store writes each where it finds what it was made from, and makes its own elsewhere."""
    result: NotebookResult
    autograded: str                   # the autograded notebook's text (nbgrader_files.notebook_text)
    page: Any                         # the page's (Page.ahead)
    executed: bytes                   # the notebook it was built from, pickled: read back only where it is not used

    def executed_notebook(self) -> str | NotebookNode | None:
        """Pickled by made_ahead, in a process forked from this one."""
        found: str | NotebookNode | None = pickle.loads(self.executed)
        return found


def made_ahead(course: Course, sub: Submission, result: NotebookResult, digest: str | None, fingerprint: str,
               previous: dict[str, Any] | None, page: Page, executed_notebook: str | NotebookNode | None,
               how: HowRegraded) -> MadeAhead:
    """What store will write of `result` unless the gradebook holds more than its automatic points (`result` is left
    as it is: store settles its own)."""
    result = settled(_copied(result), previous, digest, fingerprint, how)
    release = released(course, sub.assignment, sub.notebook)
    autograded = nbgrader_files.notebook_text(nbgrader_files.autograded_notebook(executed_notebook, release, result))
    scores = {t.cell_id: (float(t.points), False) for t in result.tests}
    return MadeAhead(result, autograded, page.ahead(Stored(result, scores, [])), pickle.dumps(executed_notebook))


def _copied(result: NotebookResult) -> NotebookResult:
    """A copy settled() may change: a result is plain data, and pickle's round trip copies it in a third of
    copy.deepcopy's time (a failing notebook's result: 1.2 against 4.2 ms)."""
    copied: NotebookResult = pickle.loads(pickle.dumps(result, pickle.HIGHEST_PROTOCOL))
    return copied


def settled(result: NotebookResult, previous: dict[str, Any] | None, digest: str | None, fingerprint: str,
            how: HowRegraded) -> NotebookResult:
    """The result as stored: scores kept from the last grading of the same file and grader, and what a regrade
    moved said."""
    result = keep_higher_scores(result, previous, digest, fingerprint)
    change = regrade_changes(result, previous, fingerprint, digest, how)
    if change:
        result.notes.append(change)
    return result


BATCH_NOTEBOOKS = 64          # notebooks whose scores share a commit, at most
BATCH_SECONDS = 1.0           # ... and for this long at most: another gradebook writer (formgrader) waits no longer
# record_scores' arguments after the gradebook: student, assignment, notebook, scores, submission time
Scores = tuple[str, str, str, dict[str, float], "dt.datetime | None"]


class Batch:
    """The gradebook of a run storing many notebooks: their scores are committed together, every BATCH_NOTEBOOKS
    notebooks or BATCH_SECONDS (each commit of SQLite's waits for the disk: milliseconds, more on a busy machine), and
    each one's result record is written once its scores are committed. A run stopped before a commit leaves those
    notebooks with no record, so the next run grades them again, as a run stopped before the record does; close()
    commits what was stored whole (a Ctrl-C included). One notebook whose scores the gradebook refuses rolls back the
    transaction: the scores of those stored before it in the batch are recorded again, and only it fails."""

    def __init__(self, gb: Gradebook):
        self.gb = gb
        self._scored: list[Scores] = []                # record_scores' arguments in the open transaction, in order
        self._records: list[Callable[[], object]] = []  # the result records to write once it is committed
        self._unsynced: list[pathlib.Path] = []         # records of attempts written, synced before the result records
        self._opened: float | None = None
        self._comments: dict[tuple[str, str, str], list[tuple[str, str]]] | None = None
        self._whole_class = gb.db.get_bind().dialect.name == "sqlite"

    def record_scores(self, *args: *Scores) -> dict[str, tuple[float, bool]]:
        """gradebook.record_scores in the batch's transaction."""
        from posenc_autograder.records import gradebook
        try:
            found = gradebook.record_scores(self.gb, *args, commit=False)
        except BaseException:
            self._comments = None                     # the transaction ended: read again once it is open again
            self._replay()
            raise
        self._scored.append(args)
        if self._opened is None:
            self._opened = time.monotonic()
        return found

    def comments(self, student: str, assignment: str, notebook: str) -> list[tuple[str, str]]:
        """gradebook.comments, read for the whole class once a transaction where the gradebook is SQLite: once the
        batch has written, no other writer (formgrader) can commit before the batch does, so the comments read
        once are what each notebook's own read would find. (A server's database: each notebook's own read.)"""
        from posenc_autograder.records import gradebook
        if not self._whole_class or not self._scored:
            return gradebook.comments(self.gb, student, assignment, notebook)
        if self._comments is None:
            self._comments = gradebook.class_comments(self.gb)
        return list(self._comments.get((student, assignment, notebook), []))

    def _replay(self) -> None:
        """The scores of the notebooks stored earlier in this batch, recorded again after a rollback; if even that
        fails, none of them is committed, and with no result record they are graded again next run."""
        from posenc_autograder.records import gradebook
        try:
            for args in self._scored:
                gradebook.record_scores(self.gb, *args, commit=False)
        except BaseException:  # noqa: BLE001 - the error being raised is the one that says why
            self.gb.db.rollback()
            self._scored, self._records = [], []

    def then_sync(self, path: pathlib.Path) -> None:
        """A record of attempts written without its sync: synced at the commit, before any result record."""
        self._unsynced.append(path)

    def then_record(self, write: Callable[[], object]) -> None:
        """write() (a notebook's result record) once the scores stored so far are committed; commits when due."""
        self._records.append(write)
        if len(self._records) >= BATCH_NOTEBOOKS or time.monotonic() - (self._opened or 0.0) >= BATCH_SECONDS:
            self.commit()

    def commit(self) -> None:
        """The scores committed, then their notebooks' result records written. A commit the database refuses is
        made again notebook by notebook: one it still refuses is left with no record (graded again next run)."""
        scored, records, self._scored, self._records, self._opened = self._scored, self._records, [], [], None
        unsynced, self._unsynced = self._unsynced, []
        self._comments = None                         # others may write once the transaction ends
        if not scored and not records:
            attempts.sync_written(unsynced)
            return
        try:
            self.gb.db.commit()
        except Exception:  # noqa: BLE001 - the database's refusal: retried one notebook at a time below
            self.gb.db.rollback()
            records = [write for args, write in zip(scored, records, strict=False) if self._alone(args)]
        attempts.sync_written(unsynced)               # a result record is written last, after all it stands on
        for write in records:
            write()

    def _alone(self, args: Scores) -> bool:
        from posenc_autograder.records import gradebook
        try:
            gradebook.record_scores(self.gb, *args)
        except Exception:  # noqa: BLE001 - that notebook stays without a record
            return False
        return True

    close = commit


def store(course: Course, gb: Gradebook | Batch, sub: Submission, result: NotebookResult, digest: str | None,
          fingerprint: str, previous: dict[str, Any] | None, page: Page,
          executed_notebook: str | NotebookNode | None = None, kept: str | None = None,
          how: HowRegraded = RUN_AGAIN, made: MadeAhead | None = None) -> NotebookResult:
    """Store one result everywhere it belongs (`gb`: the gradebook, or a run's Batch of it; `previous`: the record
    stored before, results_store.load; `kept`: the sha256 of what was kept of its run for a regrade,
    records/kept_records.py; `how`: how the result was made; `made`: what another process made of it ahead, which
    holds the executed notebook then)."""
    from posenc_autograder.records import gradebook

    result = settled(result, previous, digest, fingerprint, how)
    if previous is not None:
        results_store.forget(course, *sub.key)
    when = nbgrader_files.submission_time(course, sub.student, sub.assignment)
    arguments = (sub.student, sub.assignment, sub.notebook, {t.cell_id: t.points for t in result.tests}, when)
    scores = gb.record_scores(*arguments) if isinstance(gb, Batch) else gradebook.record_scores(gb, *arguments)
    book = gb.gb if isinstance(gb, Batch) else gb
    if digest and isinstance(gb, Batch):
        written = attempts.scored(course, sub.student, sub.assignment, digest, result.score, result.max_score,
                                  sync=False)
        if written is not None:
            gb.then_sync(written)
    elif digest:
        attempts.scored(course, sub.student, sub.assignment, digest, result.score, result.max_score)
    nbgrader_files.place_beside(course, sub.student, sub.assignment, when)
    target = course.autograded / sub.student / sub.assignment / f"{sub.notebook}.ipynb"
    if made is not None and made.result == result:
        target.write_text(made.autograded, encoding="utf-8")
    else:
        release = released(course, sub.assignment, sub.notebook)             # shared: only read here
        executed = made.executed_notebook() if made is not None else executed_notebook
        nbgrader_files.write_notebook(nbgrader_files.autograded_notebook(executed, release, result), target)
    key = (sub.student, sub.assignment, sub.notebook)
    stored = Stored(result, scores, gb.comments(*key) if isinstance(gb, Batch) else gradebook.comments(book, *key))
    if made is not None:
        page.write_ahead(made.page, stored)
    else:
        page(stored)
    if isinstance(gb, Batch):
        gb.then_record(lambda: results_store.save(course, result, digest, fingerprint, kept))
    else:
        results_store.save(course, result, digest, fingerprint, kept)
    return result


UNREAD = object()              # settle's `previous` when the caller has not read the stored record


def settle(course: Course, gb: Gradebook | Batch, sub: Submission, result: NotebookResult, digest: str | None,
           fingerprint: str, page: Page, executed_notebook: str | NotebookNode | None = None, kept: str | None = None,
           previous: dict[str, Any] | None | object = UNREAD, how: HowRegraded = RUN_AGAIN,
           made: MadeAhead | None = None) -> NotebookResult:
    """Store one submission's result. An unexpected error costs that submission only: it is stored as 'not graded'
    with the reason (feedback included), and the run goes on. previous: the stored record, when the caller has read
    it already."""
    if previous is UNREAD:
        previous = results_store.load(results_store.path(course, *sub.key))       # both attempts compare with it
    assert previous is None or isinstance(previous, dict)
    try:
        return store(course, gb, sub, result, digest, fingerprint, previous, page, executed_notebook, kept, how, made)
    except Exception as exc:  # noqa: BLE001 - one notebook never stops the others
        failed = grader_error(course, sub, exc)
        try:
            return store(course, gb, sub, failed, digest, fingerprint, previous, page)
        except Exception:  # noqa: BLE001 - still listed in the run report
            return failed
