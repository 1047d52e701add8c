"""Notebooks re-judged in a row share one gradebook commit (records.graded.Batch), each result record written after
it: a notebook whose scores the gradebook refuses costs that notebook only (the rollback does not take the scores of
those stored before it in the batch), and a commit the database refuses is made again notebook by notebook. Whatever
fails, every stored result agrees with the gradebook. (A run stopped midway: test_stopped_run.py.)"""
import os
import pathlib
import re
import shutil
import sqlite3

import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, course_with_solvers, disagreements, set_released_points
from sqlalchemy.exc import OperationalError

from posenc_autograder.course import GRADEBOOK, Course
from posenc_autograder.orchestration import grade
from posenc_autograder.records import gradebook, graded, results_store
from posenc_autograder.settings import Limits

STUDENTS = ("ann", "ben", "cat")
LIMITS = Limits(cell_seconds=20, notebook_seconds=60)
TEST = "hidden_pe_values"


@pytest.fixture(scope="module")
def graded_once(tmp_path_factory):
    course = course_with_solvers(tmp_path_factory.mktemp("batched") / "course", *STUDENTS)
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    return course


@pytest.fixture
def course(graded_once, tmp_path, monkeypatch):
    """A copy of the class graded once, its TEST now worth 5 points, and one batch for the whole regrade."""
    shutil.copytree(graded_once.root, tmp_path / "course")
    copy = Course(tmp_path / "course")
    set_released_points(copy, TEST, 5)
    monkeypatch.setattr(graded, "BATCH_SECONDS", 3600.0)
    return copy


def regrade(course):
    return grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)


def worth(result) -> float:
    return next(t.max_points for t in result.tests if t.cell_id == TEST)


def test_a_notebook_the_gradebook_refuses_costs_only_that_notebook(course, monkeypatch):
    real = gradebook.record_scores

    def refusing_ben_once(gb, student, assignment, notebook, scores, *args, **kwargs):
        if student == "ben" and not refused:
            refused.append(student)        # part of its rows written, then refused: the transaction is rolled back
            scores = {**scores, "no_such_cell": 1.0}
        return real(gb, student, assignment, notebook, scores, *args, **kwargs)

    refused: list[str] = []
    monkeypatch.setattr(gradebook, "record_scores", refusing_ben_once)
    results = {r.student: r for r in regrade(course)}
    assert refused == ["ben"]
    assert not results["ben"].graded                          # stored as the grader's error on ben alone
    assert results["ann"].graded and results["cat"].graded and worth(results["ann"]) == worth(results["cat"]) == 5
    assert {r.student for r in results_store.stored_results(course)} == set(STUDENTS)
    assert disagreements(course) == []                       # ann's scores, stored before ben's, were not lost
    with gradebook.open_gradebook(course) as gb:
        assert gradebook.final_scores(gb, "ann", ASSIGNMENT)[0] == results["ann"].score


class _RefusingFirstCommit:
    """The gradebook's session, whose first commit the database refuses (as a locked SQLite file would)."""

    def __init__(self, session):
        self.session, self.refused = session, False

    def commit(self):
        if not self.refused:
            self.refused = True
            raise OperationalError("COMMIT", {}, Exception("database is locked"))
        return self.session.commit()

    def __getattr__(self, name):
        return getattr(self.session, name)


class _Gradebook:
    def __init__(self, gb):
        self.db = _RefusingFirstCommit(gb.db)


def test_a_refused_commit_is_made_again_notebook_by_notebook(course, monkeypatch):
    real = graded.Batch

    class RefusedOnce(real):
        def __init__(self, gb):
            super().__init__(_Gradebook(gb))

    monkeypatch.setattr(graded, "Batch", RefusedOnce)
    results = regrade(course)
    assert [r.student for r in results if r.graded and worth(r) == 5] == list(STUDENTS)
    stored = {r.student: r for r in results_store.stored_results(course)}
    assert set(stored) == set(STUDENTS) and all(worth(r) == 5 for r in stored.values())
    assert disagreements(course) == []
    with gradebook.open_gradebook(course) as gb:
        assert all(gradebook.final_scores(gb, s, ASSIGNMENT)[0] == stored[s].score for s in STUDENTS)
    assert (course.autograded / "ann" / ASSIGNMENT / f"{NOTEBOOK}.ipynb").is_file()


def write_comment(course, student: str, text: str) -> str:
    """A comment written in formgrader (another connection) on one of the student's cells; returns the cell."""
    with sqlite3.connect(course.path(GRADEBOOK)) as db:
        comment, cell = db.execute(
            "SELECT comment.id, base_cell.name FROM comment JOIN submitted_notebook ON comment.notebook_id = "
            "submitted_notebook.id JOIN submitted_assignment ON submitted_notebook.assignment_id = "
            "submitted_assignment.id JOIN base_cell ON comment.cell_id = base_cell.id "
            "WHERE submitted_assignment.student_id = ? ORDER BY comment.id LIMIT 1", (student,)).fetchone()
        db.execute("UPDATE comment SET manual_comment = ? WHERE id = ?", (text, comment))
    return cell


def test_a_batch_reads_the_comments_each_notebook_would_and_again_after_each_commit(course):
    """The comments read once for the class in a batch's transaction are each notebook's own (formgrader cannot
    commit while it is open); once committed, a comment written before the next notebook is on its page."""
    cell = write_comment(course, "ben", "  See me about the scaling  ")
    with gradebook.open_gradebook(course) as gb:
        batch = graded.Batch(gb)

        def scored(student):
            held = gradebook.cell_scores(gb, student, ASSIGNMENT, NOTEBOOK)
            batch.record_scores(student, ASSIGNMENT, NOTEBOOK, {c: points for c, (points, _) in held.items()}, None)
            return batch.comments(student, ASSIGNMENT, NOTEBOOK)

        assert scored("ann") == [] == gradebook.comments(gb, "ann", ASSIGNMENT, NOTEBOOK)
        assert scored("ben") == [(cell, "See me about the scaling")] == gradebook.comments(gb, "ben", ASSIGNMENT,
                                                                                           NOTEBOOK)
        batch.commit()
        later = write_comment(course, "cat", "Well argued")
        assert scored("cat") == [(later, "Well argued")]
        batch.close()


RECORD_FILE = re.compile(r"/\.?attempts\.json(\.\d+\.tmp)?$")      # the record, or the file renamed into place


def test_a_batch_syncs_its_records_of_attempts_at_its_commit_before_any_result_record(course, monkeypatch):
    """Each notebook's points in the record of attempts reach the disk before its result record is written (a run
    stopped before then grades it again), synced together at the batch's commit rather than one by one as stored."""
    events: list[tuple[str, str]] = []
    real_fsync, real_commit, real_save = os.fsync, graded.Batch.commit, results_store.save

    def fsync(fd):
        events.append(("sync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def commit(self):
        events.append(("commit", ""))
        return real_commit(self)

    def save(course, result, *args, **kwargs):
        events.append(("record", result.student))
        return real_save(course, result, *args, **kwargs)

    monkeypatch.setattr(graded.attempts.os, "fsync", fsync)
    monkeypatch.setattr(graded.Batch, "commit", commit)
    monkeypatch.setattr(graded.Batch, "close", commit)
    monkeypatch.setattr(results_store, "save", save)
    regrade(course)
    syncs = [i for i, (kind, path) in enumerate(events) if kind == "sync" and RECORD_FILE.search(path)]
    assert sorted(pathlib.Path(events[i][1]).parent.parent.name for i in syncs) == sorted(STUDENTS)  # each changed
    first_record = next(i for i, (kind, _) in enumerate(events) if kind == "record")
    last_commit_before = max(i for i, (kind, _) in enumerate(events[:first_record]) if kind == "commit")
    assert all(last_commit_before < i < first_record for i in syncs), events
