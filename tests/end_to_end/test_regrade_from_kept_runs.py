"""A mid-term regrade re-runs only what must run again: when a hidden test's points change, every notebook is judged
again from its kept run with no sandbox job, and the grades equal a full regrade's (--force, computed here); a
changed job (here the limits it runs under; a hidden test's inputs are in the same job digest) runs again."""
import nbformat
import pytest
from fixture_submissions import NOTEBOOK, course_with_solvers

from posenc_autograder.course import RELEASE_DIRECTORY
from posenc_autograder.orchestration import grade
from posenc_autograder.records import kept_runs
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=30)
TEST = "hidden_pe_values"


@pytest.fixture
def jobs(monkeypatch):
    """The sandbox jobs a run starts, counted as the executor is handed them."""
    started = []
    real = grade.run_local

    def counting(tasks, count):
        return real((started.append(task.key) or task for task in tasks), count)

    monkeypatch.setattr(grade, "run_local", counting)
    return started


def _set_points(course, cell_id, points):
    path = course.path(RELEASE_DIRECTORY) / NOTEBOOK / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell_id)
    before = cell.metadata["nbgrader"]["points"]
    cell.metadata["nbgrader"]["points"] = points
    nbformat.write(nb, path)
    return before


def _scores(results):
    return {(r.student, t.cell_id): (t.points, t.max_points) for r in results for t in r.tests}


def test_points_change_rejudges_from_kept_runs_as_a_full_regrade_would(tmp_path, jobs, capsys):
    course = course_with_solvers(tmp_path, "ann")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert len(jobs) == 1 and all(kept_runs.path(course, k).is_file() for k in jobs)
    before = _set_points(course, TEST, None) or 0
    _set_points(course, TEST, before + 1)

    jobs.clear()
    rejudged = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
    assert jobs == []                                               # no sandbox job ran
    assert "1 notebook(s) judged again from their kept runs" in capsys.readouterr().err
    assert {s for (_, c), s in _scores(rejudged).items() if c == TEST} == {(before + 1, before + 1)}

    full = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, force=True, quiet=True)
    assert len(jobs) == 1                                           # the full regrade ran every notebook
    assert _scores(rejudged) == _scores(full)
    assert [r.score for r in rejudged] == [r.score for r in full]


def test_a_changed_job_runs_again_and_a_forged_kept_run_earns_nothing(tmp_path, jobs):
    course = course_with_solvers(tmp_path, "ann")
    [first] = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    [key] = jobs
    kept = kept_runs.path(course, key)
    kept.write_bytes(kept.read_bytes()[:-9])          # cut: not one well-formed frame any more
    _set_points(course, TEST, 7)
    jobs.clear()
    [again] = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert jobs == [key] and again.score > 0                          # a broken kept run: the notebook ran again

    _set_points(course, TEST, 8)
    jobs.clear()
    grade.grade_all(course, jobs=1, isolate=False, limits=Limits(cell_seconds=9, notebook_seconds=30), quiet=True)
    assert jobs == [key]                                              # another job (its limits): run again
