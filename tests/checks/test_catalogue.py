"""The mistake catalogue of every assignment, graded in-process as `make grade` grades.

Each mistake fails exactly the hidden tests it names, with its diagnosis in its own test, and loses the points
worked out by hand when the catalogue states them; each correct alternative keeps full marks. Every hidden test is
failed by some mistake, and every case a mistake fails carries the call that reproduces it (so a new hidden test
whose judge gives no call fails here). A mistake is one bug per function it writes: the dashboard shows
it as one row per function at most. Every notebook's every test is probed; a result frame byte for byte one already
judged (most of a mistake's tests answer as the solution does) takes that judgement again, judges being functions of
the frame (and, for a test that reads them, of the value tests' verdicts).
"""
import ast
import hashlib

import pytest
from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks import REGISTRY, hidden_tests
from posenc_autograder.checks.catalogue import catalogues
from posenc_autograder.checks.hidden import judge_all
from posenc_autograder.notebook import result_frame_in_process
from posenc_autograder.probes import codec
from posenc_autograder.reports.dashboard import grouped_mistakes
from posenc_autograder.reports.templating import snippet
from posenc_autograder.results import GradedTest, NotebookResult, ProblemKind

CATALOGUES = catalogues()            # every assignment folder's catalogue.py, found as the hidden tests are
SOLUTIONS = {assignment: implementation_source(solution_notebook(assignment)) for assignment in CATALOGUES}
MISTAKE_CASES = [(assignment, mistake) for assignment, (mistakes, _) in CATALOGUES.items() for mistake in mistakes]
ALTERNATIVE_CASES = [(assignment, name) for assignment, (_, alternatives) in CATALOGUES.items()
                     for name in alternatives]


JUDGED: dict = {}       # (test id, digest of its result frame, verdicts it read) -> (problems, passed, total)


class Decoded(dict):
    """Cell id -> result frame, read as the record it carries (decoded when a test is judged, not when kept)."""

    def __getitem__(self, cid: str) -> dict:
        return codec.decode_frame(super().__getitem__(cid), writable=False)


def graded(assignment: str, code: str) -> dict:
    """notebook.graded_in_process of the solution with the mistake's code, each test's frame judged once a run."""
    namespace, tests = namespace_from(SOLUTIONS[assignment], code), hidden_tests(assignment)
    frames = {t.id: result_frame_in_process(t.task_entry(framed=True), namespace) for t in tests}
    digests = {cid: hashlib.sha256(frame).digest() for cid, frame in frames.items()}
    judging: dict = {}

    def kept(test, verdicts):
        key = (test.id, digests[test.id], tuple(sorted((verdicts or {}).items())))
        if key not in JUDGED:
            judging[test.id] = key
        return JUDGED.get(key)
    results = judge_all(tests, Decoded(frames), kept=kept)
    JUDGED.update({judging[cid]: results[cid] for cid in judging})
    return results


def as_result(assignment: str, results: dict) -> NotebookResult:
    """The judged tests as grading stores them, for the dashboard."""
    return NotebookResult("student", assignment, assignment, True, [
        GradedTest(cid, REGISTRY[cid].title, True, REGISTRY[cid].points_for(passed, total), REGISTRY[cid].points,
                   problems) for cid, (problems, passed, total) in results.items()], [])


def functions_defined(code: str) -> int:
    """How many functions or classes a mistake writes: one bug each at most (a degenerate answer is wrong in all)."""
    return max(1, sum(isinstance(node, (ast.FunctionDef, ast.ClassDef)) for node in ast.parse(code).body))


def without_call(problems) -> list[str]:
    """A failed case's problems that carry no call to reproduce it, or whose call the page cannot write as lines."""
    return [str(p) for p in problems if p.kind == ProblemKind.VALUE and not (p.call and snippet(p)["line"])]


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
    assert {cid: without_call(problems) for cid, problems in failed.items() if without_call(problems)} == {}
    mistakes, not_attempted = grouped_mistakes([as_result(assignment, results)])
    if "del " not in mistake.code:     # a cell that did not run: the pipeline's one note, not the judges' (not here)
        assert 1 <= len(mistakes) <= functions_defined(mistake.code) or (not mistakes and not_attempted), \
            f"one mistake, one row on the dashboard: {[row.label for row in mistakes + not_attempted]}"
    if mistake.points_lost is not None:
        assert sum(REGISTRY[cid].points - REGISTRY[cid].points_for(passed, total)
                   for cid, (problems, passed, total) in results.items() if problems) == mistake.points_lost


@pytest.mark.parametrize("assignment, name", ALTERNATIVE_CASES, ids=[f"{a}: {n}" for a, n in ALTERNATIVE_CASES])
def test_correct_alternative_gets_full_marks(assignment, name):
    assert {cid: p for cid, (p, _, _) in graded(assignment, CATALOGUES[assignment][1][name]).items() if p} == {}


def test_every_catalogued_name_is_unique():
    for mistakes, _alternatives in CATALOGUES.values():
        assert len({m.name for m in mistakes}) == len(mistakes)


def test_every_hidden_test_is_failed_by_some_catalogued_mistake():
    """With the test above: every hidden test of every assignment has a failing case whose call is data."""
    failed = {cid for mistakes, _ in CATALOGUES.values() for m in mistakes for cid in m.failing}
    assert set(REGISTRY) - failed == set()
