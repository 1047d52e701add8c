"""A hidden test's inputs change mid-term: the regrade runs each notebook with only that test's probes (the job's own
answers say which ran), keeps every other test's outcome, and stores exactly what a full regrade (--force) stores:
result, autograded notebook, feedback page, integrity evidence and kept record, for a solved notebook and for one
whose single mistake fails three tests (one cause, said once). The regrade note says it was re-probed; a cut kept
record runs the whole notebook again."""
import dataclasses
import re

import nbformat
import pytest
from fixture_submissions import NOTEBOOK, course_with_solvers, solved_notebook

from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.catalogue import catalogues
from posenc_autograder.checks.hidden import call, calling
from posenc_autograder.course import grade_id
from posenc_autograder.grading import executors
from posenc_autograder.orchestration import grade
from posenc_autograder.probes import codec
from posenc_autograder.records import evidence, kept_records, results_store
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=60)
TEST = "hidden_pe_values"                     # its inputs do not vary by student: the shared probe set keeps its own
MISTAKE = "base 1000"                         # fails hidden_pe_values, hidden_pe_frequency and hidden_pe_stability
STUDENTS = ("ann", "bob")
RANDOM = "/without_rng"       # hidden_learned_init's answer drawn from no seed: another in every run, full or not


@pytest.fixture
def jobs(monkeypatch):
    """Every sandbox job a run starts: the tests it was asked to probe and the tests it sent answers for."""
    started = []
    real = executors.execute_task

    def recording(task):
        execution = real(task)
        started.append((task.key[0], sorted(task.task_ids), sorted(execution.observations)))
        return execution

    monkeypatch.setattr(executors, "execute_task", recording)
    monkeypatch.setattr(grade, "execute_task", recording, raising=False)     # the whole notebook, run after all
    return started


def _with_mistake(name):
    """The solved notebook with the catalogued mistake's function redefined at the end of its answer cell."""
    nb = solved_notebook()
    code = next(m.code for m in catalogues()["positional_encoding"][0] if m.name == name)
    function = re.search(r"^def (\w+)", code, re.M).group(1)
    cell = next(c for c in nb.cells if grade_id(c) and f"def {function}(" in c.source)
    cell.source += "\n\n" + code
    return nb


def _change_inputs(monkeypatch):
    """What editing the test's inputs in checks/ does: one more case for its probe, and a new grader."""
    sizes = ((3, 4), (7, 10), (60, 34), (5, 6))
    changed = dataclasses.replace(REGISTRY[TEST], inputs=lambda: calling(
        "sinusoidal_positional_encoding", tables=[call(*size) for size in sizes]))
    monkeypatch.setitem(REGISTRY, TEST, changed)
    real = grade.grader_fingerprint
    monkeypatch.setattr(grade, "grader_fingerprint", lambda *args, **kwargs: real(*args, **kwargs) + " new inputs")


def _stored(course, student):
    """Everything a regrade stores for the notebook, but the regrade note (the second of two regrades has none) and
    the run's seconds (a new run's own)."""
    key = (student, "positional_encoding", NOTEBOOK)
    record = results_store.load(results_store.path(course, *key))["result"]
    record["notes"] = [n for n in record["notes"] if n["kind"] != "regrade"]
    del record["seconds"]
    page = next((course.feedback / student / key[1]).glob("*.html")).read_text()
    kept = codec.decode_frame(kept_records.path(course, key).read_bytes())
    del kept["seconds"]
    found = evidence.read(evidence.path(course, key[1], NOTEBOOK, student))
    found.answers = [a for a in found.answers if a.where != RANDOM]
    return (record, (course.autograded / student / key[1] / f"{NOTEBOOK}.ipynb").read_text(),
            re.sub(r'<h2>What happened while grading</h2>\n<ul class="notes"></ul>\n?', "",
                   re.sub(r"<li>regraded with a changed grader[^<]*</li>", "", page)),
            codec.frame(dataclasses.asdict(found)), codec.frame(kept))


def test_changed_inputs_run_only_that_tests_probes_exactly_as_a_full_regrade(tmp_path, jobs, monkeypatch, capsys):
    course = course_with_solvers(tmp_path, "ann")
    folder = course.submitted / "bob" / "positional_encoding"
    folder.mkdir(parents=True)
    nbformat.write(_with_mistake(MISTAKE), folder / f"{NOTEBOOK}.ipynb")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    every = {cell_id for cell_id in REGISTRY if REGISTRY[cell_id].assignment == "positional_encoding"}
    assert all(set(asked) >= every for _, asked, _ in jobs)
    _change_inputs(monkeypatch)

    jobs.clear()
    regraded = {r.student: r for r in grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)}
    assert sorted(jobs) == [(student, [TEST], [TEST]) for student in STUDENTS]     # one probe asked, one answered
    said = capsys.readouterr().err
    assert "2 re-probed (executed with only these tests' probes: hidden_pe_values (2))" in said, said
    assert "none executed again" in said
    for result in regraded.values():
        values = next(t for t in result.tests if t.cell_id == TEST)
        assert values.cases[1] == 4                                          # judged on the new inputs
        note = next(n.text for n in result.notes if n.kind == "regrade")
        assert "now 4 input cases (was 3)" in note and f"only the probes of {TEST} ran again" in note
    assert regraded["ann"].score == regraded["ann"].max_score
    assert sum("Fix this first" in n.text for n in regraded["bob"].notes) == 1       # one cause, said once
    stored = {student: _stored(course, student) for student in STUDENTS}

    jobs.clear()
    full = {r.student: r for r in grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, force=True,
                                                   quiet=True)}
    assert sorted(asked for _, asked, _ in jobs) == [sorted(every | {"integrity_shared_probes"})] * 2
    assert {s: r.score for s, r in full.items()} == {s: r.score for s, r in regraded.items()}
    for student in STUDENTS:
        assert _stored(course, student) == stored[student], student


def test_a_cut_kept_record_runs_the_whole_notebook_again(tmp_path, jobs, monkeypatch, capsys):
    course = course_with_solvers(tmp_path, "ann")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    kept = kept_records.path(course, ("ann", "positional_encoding", NOTEBOOK))
    kept.write_bytes(kept.read_bytes()[:-9])
    _change_inputs(monkeypatch)
    jobs.clear()
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
    [(_, asked, answered)] = jobs
    assert TEST in asked and len(answered) > 2 and "cut, edited or replaced" in capsys.readouterr().err

