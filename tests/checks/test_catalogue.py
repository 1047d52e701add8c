"""The mistake catalogue of every assignment, graded in-process as `make grade` grades.

Each mistake fails exactly the hidden tests it names, with its diagnosis in its own test, and loses the points
worked out by hand when the catalogue states them; each correct alternative keeps full marks.
"""
import pytest

from notebook_tools import implementation_source, namespace_from, solution_notebook
from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.catalogue import catalogues
from posenc_autograder.notebook import graded_in_process

CATALOGUES = catalogues()            # every assignment folder's catalogue.py, found as the hidden tests are
SOLUTIONS = {assignment: implementation_source(solution_notebook(assignment)) for assignment in CATALOGUES}
MISTAKE_CASES = [(assignment, mistake) for assignment, (mistakes, _) in CATALOGUES.items() for mistake in mistakes]
ALTERNATIVE_CASES = [(assignment, name) for assignment, (_, alternatives) in CATALOGUES.items()
                     for name in alternatives]


def graded(assignment: str, code: str) -> dict:
    return graded_in_process(assignment, namespace_from(SOLUTIONS[assignment], code))


# Some mistakes (an unshifted softmax) overflow on purpose; their warnings are the mistake, not noise.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("assignment, mistake", MISTAKE_CASES, ids=[f"{a}: {m.name}" for a, m in MISTAKE_CASES])
def test_mistake_fails_exactly_its_tests_with_its_diagnosis_and_score(assignment, mistake):
    results = graded(assignment, mistake.code)
    failed = {cid: problems for cid, (problems, _, _) in results.items() if problems}
    assert set(failed) == mistake.failing, f"{mistake.name} failed {sorted(failed)}"
    if mistake.feedback_phrase:
        said = " ".join(map(str, failed[mistake.failing_check]))
        assert mistake.feedback_phrase in said, said
    if mistake.points_lost is not None:
        assert sum(REGISTRY[cid].points - REGISTRY[cid].points_for(passed, total)
                   for cid, (problems, passed, total) in results.items() if problems) == mistake.points_lost


@pytest.mark.parametrize("assignment, name", ALTERNATIVE_CASES, ids=[f"{a}: {n}" for a, n in ALTERNATIVE_CASES])
def test_correct_alternative_gets_full_marks(assignment, name):
    assert {cid: p for cid, (p, _, _) in graded(assignment, CATALOGUES[assignment][1][name]).items() if p} == {}


def test_every_catalogued_name_is_unique():
    for mistakes, alternatives in CATALOGUES.values():
        assert len({m.name for m in mistakes}) == len(mistakes)
