"""A mid-term regrade executes only what must run again: when a hidden test's points change, every notebook is
re-judged from its compact kept record with no sandbox job, and everything stored (scores, problems, feedback page,
autograded notebook) equals what a full regrade (--force, computed here) stores; a kept record that was cut or edited,
or a changed job (its limits), runs again; a changed judge re-judges the kept answers, and the tests whose answers were
too large to keep are probed again alone (tests/end_to_end/test_regrade_reprobe.py)."""
import re

import nbformat
import pytest
from fixture_submissions import NOTEBOOK, course_with_solvers

from posenc_autograder.course import RELEASE_DIRECTORY
from posenc_autograder.grading import regrade
from posenc_autograder.orchestration import grade
from posenc_autograder.probes import codec
from posenc_autograder.records import kept_records, results_store
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=60)
TEST = "hidden_pe_values"
KEY = ("ann", "positional_encoding", NOTEBOOK)


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
    """What `make release` does to the released notebook when a hidden test's points change."""
    path = course.path(RELEASE_DIRECTORY) / "positional_encoding" / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell_id)
    before = cell.metadata["nbgrader"]["points"]
    cell.metadata["nbgrader"]["points"] = points
    nbformat.write(nb, path)
    return before


def _stored(course):
    """Everything a regrade stores for the notebook: its result, autograded notebook and feedback page, the regrade
    note left out (the second of two regrades has none) and the run's seconds (a new run's own)."""
    record = results_store.load(results_store.path(course, *KEY))["result"]
    record["notes"] = [n for n in record["notes"] if n["kind"] != "regrade"]
    del record["seconds"]
    folder = course.autograded / KEY[0] / KEY[1]
    page = next((course.feedback / KEY[0] / KEY[1]).glob("*.html")).read_text()
    return record, (folder / f"{NOTEBOOK}.ipynb").read_text(), re.sub(r"<li>regraded with a changed grader[^<]*</li>",
                                                                       "", page)


def test_points_change_rejudges_from_kept_records_exactly_as_a_full_regrade(tmp_path, jobs, capsys):
    course = course_with_solvers(tmp_path, "ann")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    kept = kept_records.path(course, KEY)
    assert jobs == [KEY] and kept.stat().st_size <= kept_records.MAX_KEPT_BYTES
    before = _set_points(course, TEST, 5)

    jobs.clear()
    [rejudged] = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
    assert jobs == []                                               # no sandbox job ran
    said = capsys.readouterr().err
    assert "Regrade of positional_encoding: 1 notebook re-judged from their kept records" in said
    assert "none executed again" in said and "1 re-weighed, 0 with their answers judged again" in said
    assert next(t for t in rejudged.tests if t.cell_id == TEST).max_points == 5 != before
    assert any("not run again" in n.text for n in rejudged.notes)   # the page's regrade note says how
    stored = _stored(course)

    full = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, force=True, quiet=True)
    assert jobs == [KEY]                                            # the full regrade ran the notebook
    assert [r.score for r in full] == [rejudged.score] and _stored(course) == stored


def test_a_cut_or_edited_kept_record_or_a_changed_job_runs_again(tmp_path, jobs, capsys):
    course = course_with_solvers(tmp_path, "ann")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    kept = kept_records.path(course, KEY)
    whole = kept.read_bytes()
    value = codec.decode_frame(whole)
    value["tests"][TEST]["passed"] = 0                   # well formed, but not what the grader kept
    for forged, points in ((whole[:-9], 3), (codec.frame(value), 7)):
        kept.write_bytes(forged)
        _set_points(course, TEST, points)
        jobs.clear()
        [again] = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
        assert jobs == [KEY] and "cut, edited or replaced" in capsys.readouterr().err
        assert next(t for t in again.tests if t.cell_id == TEST).points == points     # a new run's: all passed
        whole = kept.read_bytes()

    _set_points(course, TEST, 6)
    jobs.clear()
    grade.grade_all(course, jobs=1, isolate=False, limits=Limits(cell_seconds=9, notebook_seconds=60))
    assert jobs == [KEY] and "what runs changed" in capsys.readouterr().err


def test_a_changed_judge_rejudges_kept_answers_or_probes_again(tmp_path, jobs, capsys, monkeypatch):
    course = course_with_solvers(tmp_path, "ann")
    monkeypatch.setattr(kept_records, "MAX_ANSWER_BYTES", 2**30)          # every answer kept, for this test only
    monkeypatch.setattr(kept_records, "MAX_KEPT_BYTES", 2**30)
    monkeypatch.setattr(kept_records, "MAX_NODES", codec.MAX_NODES)
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    first = results_store.load(results_store.path(course, *KEY))["result"]

    real = regrade.judge_digest
    monkeypatch.setattr(regrade, "judge_digest", lambda package=regrade.PACKAGE: "another judge")
    _set_points(course, TEST, 5)
    jobs.clear()
    [rejudged] = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
    said = capsys.readouterr().err
    assert jobs == [] and "1 notebook re-judged" in said and "0 re-weighed, 1 with their answers judged" in said
    assert [t.cell_id for t in rejudged.tests] == [t["cell_id"] for t in first["tests"]]
    assert next(t for t in rejudged.tests if t.cell_id == TEST).points == 5                # its answers judged again
    stored = _stored(course)

    monkeypatch.setattr(kept_records, "MAX_ANSWER_BYTES", 32 * 2**10)               # as shipped: large answers
    monkeypatch.setattr(regrade, "judge_digest", real)
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, force=True, quiet=True)
    assert jobs == [KEY] and _stored(course) == stored                            # as the full regrade judges
    monkeypatch.setattr(regrade, "judge_digest", lambda package=regrade.PACKAGE: "a third judge")
    _set_points(course, TEST, 6)
    jobs.clear()
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
    said = capsys.readouterr().err          # the tests whose answers were too large to keep are probed again alone
    assert jobs == [KEY] and "1 re-probed (executed with only these tests' probes: " in said
    assert "hidden_pe_shapes (1)" in said and f"{TEST} (1)" not in said and "none executed again" in said
