"""A hidden test is one object: what it grades, its points, its inputs, its probe and its judge.

The probe (a function of posenc_autograder.probes) runs next to student code, in the sandbox,
and returns *observations*: plain data only (float arrays, numbers, strings, bools, lists and
dicts of those), including the exceptions the student's code raised. The judge runs outside and
turns (inputs, observations) into problems worded for the student, computing every expected value
with the trusted reference. Both halves receive the same inputs, built once by `inputs()`.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from typing import Callable

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.comparison import as_result, call_label, limit_problems, problems_of, said_unexplained
from posenc_autograder.checks.reproduction import SHOWN_INPUT_NUMBERS, Reproduced, case_size, with_case
from posenc_autograder.probes import codec
from posenc_autograder.results import Problem, ProblemKind

Observations = dict
Problems = list


@dataclasses.dataclass(frozen=True, kw_only=True)
class HiddenTest:
    id: str                          # the nbgrader grade_id of its cell in the solution notebook
    assignment: str
    title: str                       # what the cell says it checks; `make release` writes it and the points
    points: float
    answer_cell: str                 # grade_id of the answer cell it grades; a new test cell goes after it
    probe: Callable[[dict, dict], Observations]       # sandbox side: probe(namespace, inputs)
    judge: Callable[[dict, Observations], Problems]   # trusted side: judge(inputs, observations)
    inputs: Callable[[], dict] = dict                 # trusted side: plain data for both halves
    bullets: tuple[str, ...] = ()    # ids from posenc_autograder.authoring.spec_bullets
    partial: bool = False            # independent cases (sizes, offsets, head counts): points in proportion
    subjects: tuple[str, ...] = ()   # the manifest's functions whose values it judges (checks/<assignment>/manifest.py)
    depends: tuple[str, ...] = ()    # student functions its subjects call, replaced by the probe with stand-ins
    reads_verdicts: bool = False     # its judge needs the other tests' verdicts (the contracts test)

    def __post_init__(self):
        if not self.id.startswith("hidden_"):
            raise ValueError(f"hidden test ids start with 'hidden_': {self.id!r}")
        if not self.points > 0:
            raise ValueError(f"{self.id}: points must be positive, got {self.points!r}")
        if not self.probe.__module__.startswith(f"{__package__.rsplit('.', 1)[0]}.probes."):
            raise ValueError(f"{self.id}: the probe must live in the probes package (it runs in the sandbox)")

    @property
    def cell_id(self) -> str:
        return self.id

    def variant_inputs(self, variant: int | None = None) -> dict:
        """inputs() for one student's variant (None: the course-wide inputs; see variants.py)."""
        with variants.active(variant):
            return self.inputs()

    def task_entry(self, variant: int | None = None, framed: bool = False) -> dict:
        """What the sandbox needs to run the probe: its module in the probes package, its name, the inputs (framed:
        as the kept frame, for codec.frame to place in the task as it is)."""
        return {"module": self.probe.__module__.rsplit(".", 1)[-1], "probe": self.probe.__name__,
                "data": codec.Framed(self.inputs_frame(variant)) if framed else self.plain_inputs(variant)}

    def plain_inputs(self, variant: int | None = None) -> dict:
        """The inputs exactly as the probe receives them: through the channel's codec, as in the sandbox. Built and
        decoded once per (test, variant) for prepare and the judge alike; every caller gets its own dicts and lists
        around the same arrays, which are read-only (a judge that writes to one raises instead of changing the next
        notebook's inputs)."""
        return read_only(_decoded_inputs(self, variant))

    def inputs_frame(self, variant: int | None = None) -> bytes:
        """The inputs as the channel's codec sends them (built once per test and variant, then kept)."""
        return _inputs_frame(self, variant)

    def verdict(self, record: dict, variant: int | None = None, verdicts: dict | None = None) -> list[Problem]:
        """Problems from what the sandbox recorded for this test ({"observations": ...} or {"missing": ...});
        `verdicts` (function name -> passed its value tests) for a test that reads_verdicts."""
        return list(self.findings(record, variant, verdicts))

    def findings(self, record: dict, variant: int | None = None, verdicts: dict | None = None) -> Findings:
        """What the judge returned: its problems, with the cases it judged and failed (plain problems when the
        judge returned a plain list, or could not judge)."""
        if "missing" in record:
            return Findings([Problem(str(record["missing"]), kind=ProblemKind.NOT_RUN)])
        try:
            inputs = self.plain_inputs(variant)
            extra = {"verdicts": verdicts or {}} if self.reads_verdicts else {}
            with variants.active(variant):          # judges may show a student their own inputs
                found = self.judge(inputs, read_only(record["observations"]), **extra)    # the record stays as sent
            problems = self.with_drawn([as_result(p) for p in said_unexplained(list(found))], variant)
            return Findings(problems, getattr(found, "cases", 0), getattr(found, "failed", 0),
                            getattr(found, "reported", 0))
        except Exception as exc:  # noqa: BLE001 - malformed observations never crash grading
            return Findings([Problem(f"your answers had an unexpected form ({type(exc).__name__}); check return "
                                     f"types and shapes")])

    def with_drawn(self, problems: list[Problem], variant: int | None) -> list[Problem]:
        """The problems, each that shows inputs saying whether any of them is drawn for this student (`drawn`): one
        not among the course-wide variant's inputs is (read once a process); one that is, is everyone's when
        another student's inputs have it too (read only then: a fixed case, such as a case's set positions)."""
        if variant is None or not any(p.inputs for p in problems):
            return problems
        course_wide = _course_wide_arrays(self)
        others: list[set[tuple]] = []

        def drawn(shown: list) -> bool:
            keys = [_array_key(array) for array in shown if array is not None]
            if any(key not in course_wide for key in keys):
                return True
            others[:] = others or [_arrays_in(self.plain_inputs(variant + 1))]
            return any(key not in others[0] for key in keys)
        return [dataclasses.replace(p, drawn=drawn(p.inputs)) if p.inputs else p for p in problems]

    def graded(self, record: dict, variant: int | None = None,
               verdicts: dict | None = None) -> tuple[list[Problem], int, int]:
        """verdict(), with (cases passed, cases judged) as the judge's Findings count them. A problem found
        outside the cases (or no cases at all) leaves none counted as passed: all-or-nothing."""
        found = self.findings(record, variant, verdicts)
        problems, total = list(found), max(found.cases, 1)
        if not problems:
            return problems, total, total
        if found.cases == 0 or len(problems) > found.reported:
            return problems, 0, total
        return problems, found.cases - found.failed, total

    def points_for(self, passed: int, total: int) -> float:
        """Full points when every case passed; otherwise, for a test of independent cases, its share rounded
        down to a half point (so a failed test never scores in full), else 0."""
        if passed >= total:
            return float(self.points)
        return math.floor(2 * self.points * passed / total) / 2 if self.partial else 0.0


def _array_key(value) -> tuple | None:
    """A small numeric array (or nested list) by its shape and values, whatever its dtype (None: not one)."""
    try:
        array = np.asarray(value)
    except (ValueError, TypeError):                      # ragged
        return None
    if array.dtype.kind not in "biuf" or array.size > SHOWN_INPUT_NUMBERS:
        return None
    return array.shape, array.astype(np.float64).tobytes()


def _arrays_in(inputs, depth: int = 0) -> set[tuple]:
    """Every small numeric array (or list of numbers) in a test's inputs, by _array_key: what a page may show."""
    found: set[tuple] = set()
    key = _array_key(inputs) if isinstance(inputs, (np.ndarray, list, tuple)) else None
    if key is not None:
        found.add(key)
    if depth < MAX_INPUT_DEPTH:
        items = inputs.values() if isinstance(inputs, dict) else inputs if isinstance(inputs, (list, tuple)) else ()
        for item in items:
            found |= _arrays_in(item, depth + 1)
    return found


MAX_INPUT_DEPTH = 12   # a test's inputs nest a few levels (groups, cases, arguments); trusted data, bounded anyway
INPUTS_KEPT = 128      # (test, variant) inputs kept encoded: every test of the notebooks in flight, several variants


@functools.lru_cache(maxsize=INPUTS_KEPT)
def _course_wide_arrays(test: HiddenTest) -> set[tuple]:
    """_arrays_in the test's course-wide inputs, walked once a process (every student's page is judged against it)."""
    return _arrays_in(test.plain_inputs(None))


@functools.lru_cache(maxsize=INPUTS_KEPT)
def _inputs_frame(test: HiddenTest, variant: int | None) -> bytes:
    return codec.frame(test.variant_inputs(variant))


@functools.lru_cache(maxsize=INPUTS_KEPT)
def _decoded_inputs(test: HiddenTest, variant: int | None) -> dict:
    return codec.decode_frame(_inputs_frame(test, variant), writable=False)


def read_only(value, _views: dict | None = None):
    """The value with its dicts, lists and tuples copied and its arrays as read-only views (no numbers copied; an array
    met twice is one view): what a judge receives, so that it may change the containers it was given, while writing
    to an array raises instead of changing what the next caller sees (kept inputs and references, the record the
    evidence keeps)."""
    views = {} if _views is None else _views
    if isinstance(value, dict):
        return {key: read_only(item, views) for key, item in value.items()}
    if type(value) in (list, tuple):
        if codec.PLAIN_SCALARS.issuperset(map(type, value)):     # nothing in it to copy or view
            return type(value)(value)
        return type(value)(read_only(item, views) for item in value)
    if isinstance(value, np.ndarray) and value.flags.writeable:
        if id(value) not in views:
            view = value.view()
            view.flags.writeable = False
            views[id(value)] = (value, view)          # the array kept alive while its id is a key
        return views[id(value)][1]
    return value


REFERENCES_KEPT = 512      # reference results kept: every size and setting the judges of a few assignments ask for
KEPT_BY = (bool, int, float, str, type(None))


def remembered(function: Callable) -> Callable:
    """A reference function whose results are kept by the values of its arguments when they are all numbers or
    strings (the sizes and settings every notebook's judge asks for alike; a student's variant has its own) and
    handed out read-only, so a judge that writes to one raises instead of changing the next notebook's expectation.
    A call with any other argument (an array, say) runs as it is."""
    @functools.lru_cache(maxsize=REFERENCES_KEPT, typed=True)
    def kept(*args, **kwargs):
        return read_only(function(*args, **kwargs))

    @functools.wraps(function)
    def call(*args, **kwargs):
        if all(type(value) in KEPT_BY for value in (*args, *kwargs.values())):
            return kept(*args, **kwargs)
        return function(*args, **kwargs)
    return call


class References:
    """A reference module as judges use it: its functions remembered(), everything else (classes, constants) as is."""

    def __init__(self, module):
        self._module, self._functions = module, {}

    def __getattr__(self, name: str):
        value = getattr(self._module, name)
        if not inspect.isfunction(value):
            return value
        if name not in self._functions:
            self._functions[name] = remembered(value)
        return self._functions[name]


class Findings(list):
    """What a judge returns: its problems (a list, as before), with the independent cases behind them, which
    partial credit counts. each_case makes them; `+` adds two judges' findings (a plain list added to them is
    problems found outside the cases, which make the test all-or-nothing)."""

    def __init__(self, problems=(), cases: int = 0, failed: int = 0, reported: int = 0):
        super().__init__(problems)
        self.cases = cases          # cases judged
        self.failed = failed        # of them, cases with a problem
        self.reported = reported    # lines returned for them (the first problems, then a count)

    def __add__(self, other):
        return Findings([*self, *other], self.cases + getattr(other, "cases", 0),
                        self.failed + getattr(other, "failed", 0), self.reported + getattr(other, "reported", 0))

    def __radd__(self, other):
        return Findings([*other, *self], self.cases, self.failed, self.reported)

    def map(self, change: Callable[[str], str]) -> Findings:
        """The same findings with each problem changed (a cause attached, say), the cases kept."""
        return Findings([change(p) for p in self], self.cases, self.failed, self.reported)


def all_findings(*found) -> Findings:
    """Several judges' findings (or plain problem lists) as one."""
    return sum(found, Findings())


def registry(*modules) -> dict[str, HiddenTest]:
    """Every HiddenTest declared in the modules' TESTS lists, by id (ids are unique)."""
    found: dict[str, HiddenTest] = {}
    for module in modules:
        for test in getattr(module, "TESTS", ()):     # a manifest defines none
            if test.id in found:
                raise ValueError(f"duplicate hidden test id {test.id}")
            found[test.id] = test
    return found


def judge_all(tests, records: dict, variant: int | None = None,
              kept: Callable[..., tuple[list[Problem], int, int] | None] | None = None
              ) -> dict[str, tuple[list[Problem], int, int]]:
    """graded() for every test with a record (cell id -> record): first the value tests, then the tests that
    read their verdicts (a function's contract counts only when every test judging it passed). kept(test, verdicts):
    an outcome kept from the same run and judge (a regrade, records/kept_records.py), else None: judged here."""
    def outcome(test, verdicts=None):
        found = kept(test, verdicts) if kept is not None else None
        return found if found is not None else test.graded(records[test.id], variant, verdicts)

    results = {t.id: outcome(t) for t in tests if t.id in records and not t.reads_verdicts}
    verdicts = function_verdicts(tests, results)
    results.update({t.id: outcome(t, verdicts) for t in tests if t.id in records and t.reads_verdicts})
    return results


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether every value test of a function passed (what its truth says), and the first cause their problems
    named when not (what the contracts test charges its contract to): a diagnosed mistake before a described
    pattern."""
    passed: bool = True
    cause: str | None = None
    pattern: bool = False          # the cause describes the difference's shape (no known mistake matched)
    stub: bool = False             # every failed value test met only the template's stub (a part not attempted there)

    def __bool__(self) -> bool:
        return self.passed


def function_verdicts(tests, results: dict) -> dict[str, Verdict]:
    """Function name -> whether every value test naming it among its subjects passed (and was run), with the
    first cause the failed ones named."""
    verdicts: dict[str, Verdict] = {}
    for test in tests:
        if test.reads_verdicts:
            continue
        problems = results[test.id][0] if test.id in results else None
        passed = problems is not None and not problems
        causes = [(p.cause, bool(getattr(p, "pattern", None))) for p in problems or () if getattr(p, "cause", None)]
        cases = [p for p in problems or () if getattr(p, "kind", None) is not ProblemKind.MORE]
        at_stub = not passed and bool(cases) and all(getattr(p, "at_stub", False) for p in cases)
        for name in test.subjects:
            before = verdicts.get(name, Verdict())
            known = [(before.cause, before.pattern)] if before.cause else []
            cause, pattern = min(known + causes, key=lambda found: found[1], default=(None, False))
            stub = before.stub if passed else at_stub and (before.passed or before.stub)
            verdicts[name] = Verdict(before.passed and passed, cause, pattern, stub)
    return verdicts


# --- describing calls (inputs side) ------------------------------------------------------------

def call(*args, **kwargs) -> dict:
    """One call of a student function, as plain data (probes turn lists back into arrays)."""
    return {"args": list(args), "kwargs": kwargs}


def calling(function: str, **groups: list[dict]) -> dict:
    """Inputs of probes.helpers.call_each: each group is a list of call() records."""
    return {"function": function, "groups": groups}


def each_case(problem: Callable[..., object], *columns, function: str | None = None,
              stand_ins: tuple[str, ...] = (), reproduce: Callable[..., Reproduced | None] | None = None) -> Findings:
    """problem(*row) for each row of the columns (say, the calls and their records), limited per group; with the
    `function` the cases are call() records of (run with the probe's `stand_ins` for the functions it names), or
    with `reproduce(*row)` (a reproduction() of the row's case), the first problem keeps its failing call as data.

    Every case needs its answer: observations with fewer or more records than cases (lost, or
    tampered with next to student code) fail instead of being judged on the cases they kept."""
    lists = [list(column) for column in columns]
    if len({len(column) for column in lists}) > 1:
        return Findings([f"the grader received {len(lists[-1])} answers for {len(lists[0])} cases, so this "
                         f"test could not be judged; run the notebook from the top without changing the grader's code"])
    rows = sorted(zip(*lists, strict=True), key=lambda row: case_size(row[0]))        # smallest failing case first
    failing = [(row, said) for row in rows if (said := problems_of(functools.partial(problem, *row)))]
    found = [p for row, said in failing for p in [with_case(said[0], row, function, stand_ins, reproduce), *said[1:]]]
    reported = limit_problems(found)
    return Findings(reported, cases=len(rows), failed=len(found), reported=len(reported))


def each_call(function: str, group: str, problem: Callable[..., object]) -> Callable[[dict, dict], Findings]:
    """The judge of one group of calling(function, group=[call(...), ...]): problem(*args, record=...,
    label=..., **kwargs) for each call, its label the call as written (`f(3, base=10)`)."""
    def judge(inputs: dict, obs: dict) -> Findings:
        return each_case(lambda case, record: problem(*case["args"], record=record, label=call_label(function, case),
                                                      **case["kwargs"]), inputs["groups"][group], obs[group],
                         function=function, stand_ins=tuple(sorted(inputs.get("stand_ins", {}))))
    return judge


def judging_all(*judges: Callable[[dict, dict], Findings]) -> Callable[[dict, dict], Findings]:
    """One judge from several (a judge per group, say): every problem and every case of each."""
    return lambda inputs, obs: all_findings(*(judge(inputs, obs) for judge in judges))


def normal(seed: int, shape) -> np.ndarray:
    """Deterministic random test inputs, drawn from the active student's variant of the seed."""
    return variants.rng(seed).normal(size=shape)
