"""One notebook through prepare, the sandbox side, the judge and the evidence: each hidden test's inputs are
built once, and the evidence reuses the judge's verdicts instead of judging the same records again."""
import collections
import dataclasses

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course, solved_notebook

from posenc_autograder.checks import REGISTRY, variants
from posenc_autograder.checks import hidden as base
from posenc_autograder.course import Course
from posenc_autograder.grading import pipeline, shared_probes
from posenc_autograder.grading.execute import execute_task
from posenc_autograder.intake.submissions import discover
from posenc_autograder.records import evidence
from posenc_autograder.results import Problem
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=20, notebook_seconds=60)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("costs")))
    folder = course.submitted / "solver" / ASSIGNMENT
    folder.mkdir(parents=True)
    nb = solved_notebook()
    nb.cells[-1].source = "raise ValueError('a last cell that fails')"   # a visible failure changes nothing here
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    return course


def test_each_tests_inputs_are_built_once_from_prepare_to_the_evidence(course, monkeypatch):
    built = collections.Counter()
    real = base.HiddenTest.variant_inputs

    def counting(test, variant=None):
        built[(test.id, variant)] += 1
        return real(test, variant)

    monkeypatch.setattr(base.HiddenTest, "variant_inputs", counting)
    base._inputs_frame.cache_clear()
    shared_probes.varies.cache_clear()
    [sub] = discover(course)
    task = pipeline.prepare(course, sub, LIMITS, isolate=False)
    execution = execute_task(task)
    result = pipeline.judge(course, sub, execution, LIMITS)
    evidence.keep_graded(course, sub, execution)
    assert result.graded and result.score > 0
    hidden = {cid for cid, check in REGISTRY.items() if check.assignment == ASSIGNMENT}
    assert {cid for cid, _ in built} == hidden
    assert set(built.values()) == {1}, {k: n for k, n in built.items() if n != 1}


def test_the_evidence_takes_the_judges_verdicts(course, monkeypatch):
    """Variants off: every record is the student's own run, which the judge has judged (with variants on, the
    shared set's runs on the course-wide inputs of varied tests are judged for the evidence alone). The verdicts
    travel in the judge's result, passed to the evidence; the execution carries none back."""
    monkeypatch.setenv(variants.SWITCH_ENV, "off")
    [sub] = discover(course)
    execution = execute_task(pipeline.prepare(course, sub, LIMITS, isolate=False))
    result = pipeline.judge(course, sub, execution, LIMITS)
    assert result.graded and any(t.passed for t in result.tests if t.hidden)
    assert not hasattr(execution, "failed")                   # no verdict written back beside the records
    failing = dataclasses.replace(result, tests=[dataclasses.replace(t, problems=[Problem("the judge's word")])
                                                 if t.hidden else t for t in result.tests])
    monkeypatch.setattr(base.HiddenTest, "verdict", lambda *a, **k: pytest.fail("judged a second time"))
    evidence.keep_graded(course, sub, execution, judged=failing)   # the judge's word is the one the evidence keeps
    kept = evidence.read(evidence.path(course, ASSIGNMENT, NOTEBOOK, "solver"))
    assert kept.answers and all(answer.failed for answer in kept.answers)
