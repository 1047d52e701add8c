"""The mistake catalogue of every assignment, graded in-process as `make grade` grades.

Each mistake fails exactly the hidden tests it names, with its diagnosis in its own test, and loses the points
worked out by hand when the catalogue states them; each correct alternative keeps full marks. Every hidden test is
failed by some mistake, and every case a mistake fails carries the call that reproduces it (so a new hidden test
whose judge gives no call fails here). A mistake is one bug per function it writes: the dashboard shows
it as one row per function at most. Every notebook's every test is probed; a result frame byte for byte one already
judged (most of a mistake's tests answer as the solution does) takes that judgement again, judges being functions of
the frame (and, for a test that reads them, of the value tests' verdicts). A test whose probe, run on the solution,
looked up no name the mistake binds has the solution's frame without running it again (when the solution gives the
same bytes twice): the probe reads the same objects, so it answers the same.
"""
import ast
import functools
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
BINDING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign,
           ast.Delete)


class Reads(dict):
    """A notebook's namespace that notes each name looked up in it: by its functions (globals that are a dict
    subclass are read through __getitem__) and by the probe; reading it whole (iterating, copying) notes that every
    name was read (read is None)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read: set | None = set()

    def _note(self, name):
        if self.read is not None:
            self.read.add(name)

    def _whole(self):
        self.read = None

    def __getitem__(self, name):
        self._note(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self._note(name)
        return super().get(name, default)

    def __contains__(self, name):
        self._note(name)
        return super().__contains__(name)

    def __iter__(self):
        self._whole()
        return super().__iter__()

    def keys(self):
        self._whole()
        return super().keys()

    def values(self):
        self._whole()
        return super().values()

    def items(self):
        self._whole()
        return super().items()

    def copy(self):
        self._whole()
        return super().copy()


def bound_names(code: str) -> set[str] | None:
    """The names a mistake's code binds at its top level (defines, imports, assigns or deletes), or None when any of
    its statements may do more (a call, a loop, a store into an object): its every test then runs."""
    names: set[str] = set()
    for node in ast.parse(code).body:
        if not isinstance(node, BINDING):
            return None
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(alias.name == "*" for alias in node.names):
                return None
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if not all(isinstance(target, ast.Name) for target in targets) or any(
                    isinstance(part, ast.Call) for part in ast.walk(node)):
                return None
            names |= {target.id for target in targets}
        else:
            names.add(node.name)
    return names


@functools.lru_cache(maxsize=None)
def solution_frames(assignment: str) -> dict:
    """test id -> (the solution's result frame, the names its probe looked up), for each test whose probe gives the
    solution the same bytes twice (one with a random draw of its own is left out)."""
    kept = {}
    for test in hidden_tests(assignment):
        runs = []
        for _ in range(2):
            namespace = namespace_from(SOLUTIONS[assignment], namespace=Reads())
            namespace.read = set()                      # what the probe looks up, not what the notebook defined
            runs.append((result_frame_in_process(test.task_entry(framed=True), namespace), namespace.read))
        (frame, read), (again, _) = runs
        if frame == again and read is not None:
            kept[test.id] = (frame, read)
    return kept


def frames_of(assignment: str, code: str) -> dict:
    """Each test's result frame on the solution with the mistake's code: the solution's own where the test's probe
    looked up no name the code binds, else run (in order, in one namespace, as the notebook runs them)."""
    namespace, bound = namespace_from(SOLUTIONS[assignment], code), bound_names(code)
    same = solution_frames(assignment) if bound is not None else {}
    return {t.id: same[t.id][0] if t.id in same and not same[t.id][1] & bound
            else result_frame_in_process(t.task_entry(framed=True), namespace) for t in hidden_tests(assignment)}


class Decoded(dict):
    """Cell id -> result frame, read as the record it carries (decoded when a test is judged, not when kept)."""

    def __getitem__(self, cid: str) -> dict:
        return codec.decode_frame(super().__getitem__(cid), writable=False)


def graded(assignment: str, code: str) -> dict:
    """notebook.graded_in_process of the solution with the mistake's code, each test's frame judged once a run."""
    tests, frames = hidden_tests(assignment), frames_of(assignment, code)
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


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("assignment", sorted(CATALOGUES))
def test_a_frame_taken_from_the_solution_is_the_frame_the_mistake_gives(assignment):
    """The shortcut of frames_of, checked on every assignment's first mistake that reuses any: each frame it takes
    from the solution is what running the test on the mistake gives, and the tests it runs are those whose probe
    looked up a name the mistake binds."""
    same = solution_frames(assignment)
    for mistake in CATALOGUES[assignment][0]:
        bound = bound_names(mistake.code)
        reused = {cid for cid, (_, read) in same.items() if bound is not None and not read & bound}
        if reused:
            break
    assert reused and mistake.failing.isdisjoint(reused), mistake.name
    namespace = namespace_from(SOLUTIONS[assignment], mistake.code)
    frames = frames_of(assignment, mistake.code)
    for test in hidden_tests(assignment):
        if test.id in same:
            assert frames[test.id] == result_frame_in_process(test.task_entry(framed=True), namespace), test.id
            assert (frames[test.id] is same[test.id][0]) == (test.id in reused), test.id


def test_a_namespace_notes_the_names_its_functions_and_its_readers_look_up():
    namespace = namespace_from("def f():\n    return g() + len([])\n\ndef g():\n    return 1\n", namespace=Reads())
    namespace.read = set()
    assert namespace["f"]() == 1 and "h" not in namespace and namespace.get("k") is None
    assert namespace.read == {"f", "g", "len", "h", "k"}
    list(namespace)
    assert namespace.read is None


@pytest.mark.parametrize("code, names", [
    ("def f(x):\n    return x\nclass C:\n    pass\n", {"f", "C"}),
    ("import numpy as np\nfrom math import pi, tau as t\nx: int = 3\ny = z = 2\ndel w\n",
     {"np", "pi", "t", "x", "y", "z", "w"}),
    ("from math import *\n", None),
    ("x = f()\n", None),
    ("table[0] = 1\n", None),
    ("print(1)\n", None),
    ("for i in range(3):\n    pass\n", None),
    ("x += 1\n", None),
], ids=["defs", "imports and assignments", "star import", "assigned a call", "stored into", "a call", "a loop",
        "augmented"])
def test_a_mistake_binds_the_names_it_defines_and_anything_more_runs_every_test(code, names):
    assert bound_names(code) == names
