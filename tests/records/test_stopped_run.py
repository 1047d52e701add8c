"""A run stopped midway (killed, interrupted, the machine went down) leaves every stored result agreeing with the
gradebook, and the next run grades whatever has no result; new students' gradebook rows, made in one commit before
grading, never hold a score no result explains."""
import dataclasses

import pytest
from fixture_submissions import ASSIGNMENT, course_with_solvers, disagreements

from posenc_autograder.orchestration import grade
from posenc_autograder.records import gradebook, results_store
from posenc_autograder.reports import feedback
from posenc_autograder.settings import Limits

STUDENTS = ("ann", "ben", "cat")
LIMITS = Limits(cell_seconds=20, notebook_seconds=60)


@pytest.fixture
def course(tmp_path):
    return course_with_solvers(tmp_path / "course", *STUDENTS)


def run(course, **options):
    return grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True, **options)


def stop_at_call(monkeypatch, module, name, call):
    """The run stops (as at Ctrl-C) when module.name is called for the call-th time."""
    real, calls = getattr(module, name), []

    def stopping(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(module, name, stopping)


def recorded(course) -> set[str]:
    return {r.student for r in results_store.stored_results(course)}


def test_a_run_stopped_after_a_notebooks_gradebook_commit_regrades_it_next_time(course, monkeypatch):
    with monkeypatch.context() as patch:
        stop_at_call(patch, feedback, "write", 2)          # the second notebook: scores committed, no feedback yet
        with pytest.raises(KeyboardInterrupt):
            run(course)
    assert recorded(course) == {"ann"} and disagreements(course) == []
    with gradebook.open_gradebook(course) as gb:           # every student of the run has nbgrader's rows already
        assert {s.student.id for s in gb.assignment_submissions(ASSIGNMENT)} == set(STUDENTS)
        assert gb.find_submission(ASSIGNMENT, "cat").score == 0          # made, never scored
    results = run(course)
    assert [r.student for r in results if r.graded and r.score > 0] == list(STUDENTS)
    assert recorded(course) == set(STUDENTS) and disagreements(course) == []
    assert all(feedback.path(course.feedback, r).is_file() for r in results)


def test_a_regrade_stopped_midway_leaves_no_result_the_gradebook_contradicts(course, monkeypatch):
    """The first run scored nothing (as a loaded machine timing out good answers would); a forced regrade of the same
    files by the same grader scores them fully and stops after ann's new scores are committed. Her earlier result
    must not stand beside them (the next run would trust it: same file, same grader); the next run grades her."""
    real_judged = grade._judged

    def judged_nothing(*args):
        result = real_judged(*args)
        return dataclasses.replace(result, tests=[dataclasses.replace(t, points=0.0) for t in result.tests])
    with monkeypatch.context() as patch:
        patch.setattr(grade, "_judged", judged_nothing)
        assert all(r.score == 0 for r in run(course))
    with monkeypatch.context() as patch:
        stop_at_call(patch, feedback, "write", 1)
        with pytest.raises(KeyboardInterrupt):
            run(course, force=True)
    assert disagreements(course) == []
    assert recorded(course) == {"ben", "cat"}
    results = run(course)
    assert [r.student for r in results if r.graded and r.score > 0] == ["ann"]
    assert recorded(course) == set(STUDENTS) and disagreements(course) == []
