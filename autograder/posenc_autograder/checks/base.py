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
import re
from typing import Callable

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.diagnosis import Ambiguous
from posenc_autograder.probes import codec
from posenc_autograder.results import NUMBER, PROSE_NUMBERS, Problem, ProblemKind

Observations = dict
Problems = list
MAX_PER_GROUP = 2      # problems reported per group of similar cases: the first ones, then a count
SHOWN_INPUT_NUMBERS = 256  # a failing case's input arrays are kept (shown folded) up to this many entries


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

    def verdict(self, record: dict, variant: int | None = None, verdicts: dict | None = None) -> list[str]:
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
            return Findings([as_result(p) for p in said_unexplained(list(found))], getattr(found, "cases", 0),
                            getattr(found, "failed", 0), getattr(found, "reported", 0))
        except Exception as exc:  # noqa: BLE001 - malformed observations never crash grading
            return Findings([Problem(f"your answers had an unexpected form ({type(exc).__name__}); check return "
                                     f"types and shapes")])

    def graded(self, record: dict, variant: int | None = None,
               verdicts: dict | None = None) -> tuple[list[str], int, int]:
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


INPUTS_KEPT = 128      # (test, variant) inputs kept encoded: every test of the notebooks in flight, several variants


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
    call.kept = kept
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


def judge_all(tests, records: dict, variant: int | None = None) -> dict[str, tuple[list[str], int, int]]:
    """graded() for every test with a record (cell id -> record): first the value tests, then the tests that
    read their verdicts (a function's contract counts only when every test judging it passed)."""
    results = {t.id: t.graded(records[t.id], variant) for t in tests if t.id in records and not t.reads_verdicts}
    verdicts = function_verdicts(tests, results)
    results.update({t.id: t.graded(records[t.id], variant, verdicts)
                    for t in tests if t.id in records and t.reads_verdicts})
    return results


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Whether every value test of a function passed (what its truth says), and the first cause their problems
    named when not (what the contracts test charges its contract to): a diagnosed mistake before a described
    pattern."""
    passed: bool = True
    cause: str | None = None
    pattern: bool = False          # the cause describes the difference's shape (no known mistake matched)

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
        for name in test.subjects:
            before = verdicts.get(name, Verdict())
            known = [(before.cause, before.pattern)] if before.cause else []
            cause, pattern = min(known + causes, key=lambda found: found[1], default=(None, False))
            verdicts[name] = Verdict(before.passed and passed, cause, pattern)
    return verdicts


def limit_problems(problems: list[str], limit: int = MAX_PER_GROUP) -> list[str]:
    """The one rule for every judge: of a group of similar cases, report the first `limit` problems."""
    if len(problems) <= limit:
        return problems
    return problems[:limit] + [ProblemText(f"... and {len(problems) - limit} more case(s) like these",
                                           kind=ProblemKind.MORE)]


# --- describing calls (inputs side) ------------------------------------------------------------

def call(*args, **kwargs) -> dict:
    """One call of a student function, as plain data (probes turn lists back into arrays)."""
    return {"args": list(args), "kwargs": kwargs}


def calling(function: str, **groups: list[dict]) -> dict:
    """Inputs of probes.helpers.call_each: each group is a list of call() records."""
    return {"function": function, "groups": groups}


LABEL_LIST_ENTRIES = 4     # a longer list argument is named by its shape in a sentence (the page's line writes it)


def call_label(function: str, record: dict) -> str:
    """`f(3, 4, base=10)`, with arrays shown by shape, for messages."""
    def show(value):
        if isinstance(value, np.ndarray) or (isinstance(value, list) and value and isinstance(value[0], list)) \
                or (isinstance(value, list) and len(value) > LABEL_LIST_ENTRIES):
            return f"<array of shape {np.shape(value)}>"
        return repr(value) if isinstance(value, str) else f"{value:g}" if isinstance(value, float) else str(value)
    parts = [show(a) for a in record["args"]] + [f"{k}={show(v)}" for k, v in record["kwargs"].items()]
    return f"{function}({', '.join(parts)})"


# --- reading observations (judge side) ---------------------------------------------------------

class ProblemText(str):
    """A problem while the judges build it: its sentence, with the fields results.Problem keeps as data (the cause,
    the worst entry's details, the student's drawn inputs, the exception's name). HiddenTest.verdict turns each
    into a results.Problem; judges keep treating it as the sentence it is."""
    cause: str | None = None
    kind: ProblemKind = ProblemKind.VALUE
    details: dict | None = None
    inputs: list | None = None
    error: str | None = None
    call: dict | None = None
    quoted: str | None = None
    pattern: bool | None = None

    def __new__(cls, text: str, **fields) -> "ProblemText":
        finding = super().__new__(cls, text)
        for name, value in {**fields_of(text), **fields}.items():
            setattr(finding, name, value)
        return finding


FIELDS = ("cause", "kind", "details", "inputs", "error", "call", "quoted", "pattern")


def fields_of(problem) -> dict:
    """The data a problem carries besides its sentence (none for a plain string)."""
    return {name: getattr(problem, name) for name in FIELDS if getattr(problem, name, None) is not None}


def as_result(problem) -> Problem:
    """A judge's problem (a string or a ProblemText) as the plain data grading stores."""
    if isinstance(problem, Problem):
        return problem
    return Problem(str.__str__(problem), **fields_of(problem))


class Rejected(Exception):
    """An observed answer the readers below cannot accept, raised with the sentence for the student (a string or a
    ProblemText; judges turn it into a results.Problem: the one class of that name)."""


def raised_problem(text: str, error: str) -> ProblemText:
    """A problem saying a call raised `error` ('TypeError: ...'): the exception's name kept as data, and the error
    itself as the cause (what the dashboard groups by), unless it is the template's stub (a part not attempted)."""
    name = error.split(":", 1)[0]
    return ProblemText(text, error=name, cause=None if name == "NotImplementedError" else error)


def value_of(record: dict, what: str):
    """The value of an attempt() record; Rejected when the call raised (the exception's name kept as data)."""
    if "error" in record:
        raise Rejected(raised_problem(f"{what} raised {record['error']}", record["error"]))
    return record["value"]


def as_array(value, what: str, *, finite: bool = True) -> np.ndarray:
    """An observed value as a float array; non-finite entries are Rejected unless the spec allows them."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise Rejected(f"{what} should be a numpy array of numbers, got {type(value).__name__}") from None
    if finite and not np.all(np.isfinite(array)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        where = non_finite_where(array)
        raise Rejected(ProblemText(f"{what} contains NaN or Inf (first at index {bad}; {where})", cause=where,
                                   pattern=True))
    return array


def non_finite_where(array: np.ndarray) -> str:
    """Where an answer's NaN and infinite entries are: 'NaN in row 0 only', 'infinity in 3 of 64 entries'."""
    bad = ~np.isfinite(array)
    what = "NaN" if np.all(np.isnan(array[bad])) else "infinity" if not np.any(np.isnan(array[bad])) else \
        "NaN or infinity"
    if array.ndim >= 2:
        rows = np.flatnonzero(bad.reshape(-1, *array.shape[-2:]).any(axis=(0, 2)))
        if len(rows) <= FEW_WRONG:
            named = ", ".join(str(int(r)) for r in rows[:-1]) + (" and " if len(rows) > 1 else "") + str(int(rows[-1]))
            return f"{what} in row{'s' if len(rows) > 1 else ''} {named} only"
    return f"{what} in every entry" if bad.all() else f"{what} in {int(bad.sum())} of {bad.size} entries"


def require_shape(array: np.ndarray, expected: tuple, what: str) -> np.ndarray:
    expected = tuple(expected)
    if array.shape != expected:
        hint = " (it looks transposed)" if array.shape == tuple(reversed(expected)) and len(expected) > 1 else ""
        raise Rejected(f"{what} has shape {array.shape}, expected {expected}{hint}")
    return array


def observed_array(record: dict, what: str, shape: tuple | None = None) -> np.ndarray:
    """The float array a call returned: Rejected if it raised, is not an array, has another shape or NaN/Inf."""
    array = as_array(value_of(record, what), what)
    return array if shape is None else require_shape(array, shape, what)


def mismatch(actual: np.ndarray, expected: np.ndarray, atol: float, what: str,
             precision: str | None = None) -> str | None:
    """A sentence naming the worst entry, or None when every entry is within atol (NaN is never within),
    plus, for a value returned in a lower `precision`, the rounding of the expected value to it."""
    diff = np.abs(np.asarray(actual, dtype=np.float64) - expected)
    bad = ~(diff <= atol + rounding_allowance(expected, precision))     # written so that NaN counts as wrong
    if not bad.any():
        return None
    worst = np.unravel_index(int(np.argmax(np.where(np.isnan(diff), np.inf, diff))), diff.shape)
    place = f" at [{', '.join(str(int(i)) for i in worst)}]" if diff.ndim else ""   # a scalar has no place
    judged_at = f" plus {precision} rounding, the precision returned" if precision in LOWER_PRECISIONS else ""
    details = {"what": what, "where": [int(i) for i in worst], "expected": float(expected[worst]),
               "got": float(actual[worst]), "tolerance": atol, "dtype": precision or "float64",
               "wrong": int(bad.sum()), "entries": int(diff.size)}
    count = f"{int(bad.sum())} of {diff.size} entries off" if diff.ndim else "off"
    return ProblemText(f"{what} is wrong{place}: expected {expected[worst]:.10g}, got {actual[worst]:.10g} "
                       f"({count} by more than {atol:g}{judged_at})", details=details)


LOWER_PRECISIONS = ("float32",)    # returned dtypes whose rounding a value test forgives (PyTorch's default)


def returned_precision(value) -> str | None:
    """The precision of a returned array as it crossed the codec (float32 arrays cross as they are), never what the
    record says of it: a float64 array holds float64 answers, whatever its record claims."""
    return str(value.dtype) if isinstance(value, np.ndarray) and value.dtype.name in LOWER_PRECISIONS else None


def rounding_allowance(expected, precision: str | None):
    """One unit in the last place of `expected` in the returned precision (0 for float64 and anything unknown):
    a correct value returned as float32 costs the contracts test alone, never the value tests too."""
    if precision not in LOWER_PRECISIONS:
        return 0.0
    return np.spacing(np.abs(np.asarray(expected, dtype=np.float64)).astype(precision)).astype(np.float64)


def compare(record: dict, expected: np.ndarray, what: str, atol: float,
            diagnose: Callable[[np.ndarray], str | None] | None = None) -> str | None:
    """The first problem of an observed array against its expected value, with a diagnosis when one fits."""
    try:
        value = value_of(record, what)
        array = as_array(value, what, finite=False)
    except Rejected as problem:
        return problem.args[0]
    try:
        if not np.all(np.isfinite(array)):      # NaN and Inf fail, yet the diagnosis or the pattern may explain them
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
            raise Rejected(f"{what} contains NaN or Inf (first at index {bad})")
        require_shape(array, expected.shape, what)
        problem = mismatch(array, expected, atol, what, returned_precision(value))
    except Rejected as shape_problem:
        problem = shape_problem.args[0]
    if problem is None:
        return None
    diagnosis = diagnose(array) if diagnose else None
    if diagnosis:
        return with_cause(problem, diagnosis)
    pattern = difference_pattern(array, expected, atol)
    return with_pattern(problem, pattern) if pattern else problem


FLOAT32_RELATIVE = 1e-6      # differences this small relative to the values are float32 rounding, not a formula


def difference_pattern(actual: np.ndarray, expected: np.ndarray, atol: float) -> str | None:
    """What the difference between an answer and its expected value looks like, when it has a shape a student can
    act on (float32 rounding, one sign, one constant offset, a transposition, which columns or rows are right);
    None when it has none."""
    actual, expected = np.asarray(actual, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        if actual.ndim >= 2 and actual.shape == expected.shape[:-2] + expected.shape[:-3:-1] \
                and np.allclose(np.swapaxes(actual, -1, -2), expected, rtol=0, atol=atol):
            return "the result is the expected one with its last two axes swapped (transposed)"
        return None
    if not expected.size:
        return None
    if not np.all(np.isfinite(actual)):
        return _where_not_finite(actual, expected, atol)
    diff = actual - expected
    scale = max(1.0, float(np.max(np.abs(expected))))
    if np.max(np.abs(diff)) <= FLOAT32_RELATIVE * scale and np.mean(np.abs(diff) > 1e-12 * scale) >= 0.5:
        return (f"every difference is at most {np.max(np.abs(diff)):.1g}, the size of float32 rounding: part of the "
                f"computation is in float32 (np.float32 arrays, or a PyTorch default), even if cast back at the end")
    if np.allclose(actual, -expected, rtol=0, atol=atol) and np.any(np.abs(expected) > atol):
        return "every entry has the expected size but the opposite sign"
    if np.ptp(diff) <= 2 * atol:
        return f"every entry is off by the same constant, {float(np.mean(diff)):.6g}"
    if (factor := _constant_factor(actual, expected, atol)) is not None:
        return f"every entry is the expected one times the same factor, {factor:.6g}"
    if expected.ndim >= 2 and expected.shape[-1] > 1:
        found = [said for axis, part in ((-1, "column"), (-2, "row"))
                 if (said := _which_part_is_right(diff, atol, axis, part))]
        return min(found, key=lambda said: said[0])[1] if found else None      # the axis with fewer wrong slices
    return None


def _where_not_finite(actual: np.ndarray, expected: np.ndarray, atol: float) -> str | None:
    """'NaN in row 0 only; every other entry is right', when every finite entry is right."""
    bad = ~np.isfinite(actual)
    if np.any(np.abs(actual[~bad] - expected[~bad]) > atol):
        return None
    return f"{non_finite_where(actual)}; every other entry is right (an entry never filled in, or a division by zero?)"


def _constant_factor(actual: np.ndarray, expected: np.ndarray, atol: float) -> float | None:
    """The one factor that turns every expected entry into the answer's (within atol), if there is one."""
    sizable = np.abs(expected) > atol
    if not sizable.any():
        return None
    factor = float(np.median(actual[sizable] / expected[sizable]))
    return factor if np.allclose(actual, factor * expected, rtol=0, atol=atol) else None


FEW_WRONG = 4      # wrong rows or columns named one by one when they are this few and scattered


def _which_part_is_right(diff: np.ndarray, atol: float, axis: int, part: str) -> tuple[float, str] | None:
    """('every even column is right; every odd one is off' and similar, the share of slices off) when the right ones
    form a pattern that tells the student something. A single right row or column at the start is never named: row 0
    of a causal attention, or a column of frequency base**0 = 1, is right for almost any wrong answer."""
    moved = np.moveaxis(np.abs(diff), axis, -1).reshape(-1, diff.shape[axis])
    right = np.all(moved <= atol, axis=0)
    count = right.size
    if right.all() or not right.any():
        return None
    index = np.arange(count)
    share = float(np.mean(~right))
    if count > 2 and (np.array_equal(right, index % 2 == 0) or np.array_equal(right, index % 2 == 1)):
        first, second = ("even", "odd") if right[0] else ("odd", "even")
        off = np.moveaxis(diff, axis, -1)[..., ~right]
        constant = " by the same amount in every " + ("row" if part == "column" else "column") \
            if np.allclose(off, off.reshape(-1, off.shape[-1])[:1], rtol=0, atol=atol) else ""
        return share, f"every {first} {part} is right; every {second} one is off{constant}"
    wrong = index[~right]
    if np.array_equal(wrong, np.arange(wrong[0], count)) and wrong[0] >= 2:
        return share, f"every {part} from {part} {wrong[0]} on is off; the {part}s before it are right"
    if np.array_equal(wrong, np.arange(0, wrong[-1] + 1)) and count - wrong[-1] - 1 >= 2:
        return share, f"every {part} before {part} {wrong[-1] + 1} is off; from it on, every one is right"
    if len(wrong) <= FEW_WRONG and right.sum() >= 2:
        named = ", ".join(str(int(i)) for i in wrong[:-1]) + (" and " if len(wrong) > 1 else "") + str(int(wrong[-1]))
        return share, f"only {part}{'s' if len(wrong) > 1 else ''} {named} {'are' if len(wrong) > 1 else 'is'} off; " \
                      f"every other {part} is right"
    return None


LIKELY_CAUSE = "Likely cause: "


NO_KNOWN_MISTAKE = "No known mistake matches this answer"      # said plainly when nothing is diagnosed
PATTERN_LEAD = "No known mistake matches; the difference: "    # a described pattern is never called a cause


def with_cause(problem: str, explanation: str) -> ProblemText:
    """The problem followed by its diagnosed cause, in the words feedback uses, with the cause kept as data
    (what "Fix this first" and the dashboard group by)."""
    ambiguous = True if isinstance(explanation, Ambiguous) else None      # a diagnosis replaces a described pattern
    return ProblemText(f"{_unexplained(problem)}. {LIKELY_CAUSE}{explanation}.",
                       **{**fields_of(problem), "cause": str(explanation), "pattern": ambiguous})


def with_pattern(problem: str, pattern: str) -> ProblemText:
    """The problem followed by what its difference looks like, said as a pattern, not as a cause (no known mistake
    matched); the pattern is kept as its cause's data, marked as a pattern."""
    text = f"{_unexplained(problem)}. {PATTERN_LEAD}{pattern}."
    if len(NUMBER.findall(text)) > PROSE_NUMBERS:          # the rows named one by one, counted instead
        text = NAMED_PARTS.sub(lambda m: f"only {len(NUMBER.findall(m.group(2)))} {m.group(1)}s are off", text)
    return ProblemText(text, **{**fields_of(problem), "cause": str(pattern), "pattern": True})


NAMED_PARTS = re.compile(r"only (row|column)s ((?:\d+, )*\d+ and \d+) are off")


def _unexplained(problem: str) -> str:
    """The problem's sentence without the plain "no known mistake" statement, when a cause is now found."""
    return str.__str__(problem).removesuffix(f". {NO_KNOWN_MISTAKE}.")


def said_unexplained(problems: list) -> list:
    """A failed test's problems, the first judged value saying plainly that no known mistake matches when none of
    them names a cause or a pattern (a student is never left to guess whether the grader recognised it)."""
    if any(getattr(p, "cause", None) for p in problems):
        return problems
    for index, problem in enumerate(problems):
        if getattr(problem, "kind", ProblemKind.VALUE) == ProblemKind.VALUE and not getattr(problem, "error", None):
            return [*problems[:index], ProblemText(f"{str.__str__(problem)}. {NO_KNOWN_MISTAKE}.",
                                                   **fields_of(problem)), *problems[index + 1:]]
    return problems


def against_any(problem: Callable[..., str | None], *expectations) -> str | None:
    """problem(e) for each trusted expectation (say, the reference alone and the same built on the probe's
    stand-ins, for a subject that may or may not call the function the stand-in replaces): None when one
    fits; else the problem that diagnoses a likely cause, or else describes a pattern, or the first."""
    found = []
    for expected in expectations:
        said = problem(expected)
        if said is None:
            return None
        found.append(said)
    return min(found, key=lambda p: 2 if not getattr(p, "cause", None) else 1 if getattr(p, "pattern", None) else 0)


def error_name(record: dict) -> str | None:
    """The exception type an attempt() record raised, or None when the call returned."""
    return record["error"].split(":", 1)[0] if "error" in record else None


def expect_error(record: dict, expected: str, what: str, why: str) -> str | None:
    """A problem unless the call raised the expected exception type; what came back instead, said as it is."""
    raised = error_name(record)
    if raised == expected:
        return None
    if raised is not None:          # another error: its cause is whatever the same function's other tests name
        return ProblemText(f"{what} must raise {expected} {why}, but it raised {record['error']}",
                           error=raised)
    return ProblemText(f"{what} must raise {expected} {why}, but it returned {returned_value(record)}",
                       cause=f"no {expected} {why}")


def returned_value(record: dict) -> str:
    """What a call that returned gave back, in a few words: 'an array of shape (10, 3)', 'the number 2'."""
    if "returned" in record:                 # a value the probe could not record as data: its type
        return f"a {record['returned']} object"
    value = record.get("value")
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    if isinstance(value, (list, dict)):
        return f"a {type(value).__name__} of {len(value)} items"
    return "None" if value is None else f"the {type(value).__name__} {value!r}"[:80]


def number(value, what: str) -> float:
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise Rejected(f"{what} should be a number, got {type(value).__name__}") from None
    if not math.isfinite(result):
        raise Rejected(f"{what} is {result}, expected a finite number")
    return result


def each_case(problem: Callable[..., str | None], *columns, function: str | None = None,
              stand_ins: tuple[str, ...] = (), reproduce: Callable[..., dict] | None = None) -> Findings:
    """problem(*row) for each row of the columns (say, the calls and their records), limited per group; with the
    `function` the cases are call() records of (run with the probe's `stand_ins` for the functions it names), or
    with `reproduce(*row)` (a reproduction() of the row's case), the first problem keeps its failing call as data.

    Every case needs its answer: observations with fewer or more records than cases (lost, or
    tampered with next to student code) fail instead of being judged on the cases they kept."""
    columns = [list(column) for column in columns]
    if len({len(column) for column in columns}) > 1:
        return Findings([f"the grader received {len(columns[-1])} answers for {len(columns[0])} cases, so this "
                         f"test could not be judged; run the notebook from the top without changing the grader's code"])
    rows = sorted(zip(*columns), key=lambda row: case_size(row[0]))        # smallest failing case first
    failing = [(row, said) for row in rows if (said := problems_of(functools.partial(problem, *row)))]
    found = [p for row, said in failing for p in [with_case(said[0], row, function, stand_ins, reproduce), *said[1:]]]
    reported = limit_problems(found)
    return Findings(reported, cases=len(rows), failed=len(found), reported=len(reported))


def with_case(problem, row: tuple, function: str | None, stand_ins: tuple[str, ...],
              reproduce: Callable[..., Reproduction] | None):
    """A failing case's first problem with the case as data: its inputs (the student's own variant, small enough to
    show) and its failing call, from the call() record (`function`) or from `reproduce(*row)`."""
    if variants.current() is not None and (shown := inputs_of(row[0])):
        problem = ProblemText(problem, inputs=shown)
    if function is not None and (called := call_of(function, row[0], stand_ins)):
        problem = ProblemText(problem, call=called)
    if reproduce is not None:
        problem = reproduced(problem, reproduce(*row))
    return problem


def each_call(function: str, group: str, problem: Callable[..., str | None]) -> Callable[[dict, dict], Findings]:
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


def extended(problem: str, more: str) -> ProblemText:
    """The problem with `more` appended to its sentence, its data kept."""
    return ProblemText(str.__str__(problem) + more, **fields_of(problem))


def _arrays_and_numbers(case) -> list:
    if isinstance(case, dict) and "args" in case:
        return list(case["args"]) + list(case["kwargs"].values())
    return [case]


def case_size(case) -> int:
    """How big a case is: its arrays' sizes plus the product of its whole-number arguments (a table's L x d)."""
    values = _arrays_and_numbers(case)
    whole = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return sum(int(np.size(v)) for v in values if isinstance(v, (np.ndarray, list))) + math.prod(whole)


def inputs_of(case) -> list[list] | None:
    """The case's array inputs as data (nested lists, exact), for the page to show by shape and a few entries with
    the whole array in a block to copy: they are the student's own variant, so showing them helps no one else.
    Arrays over SHOWN_INPUT_NUMBERS entries in all are left out (a page is no place for thousands of numbers)."""
    arrays = [np.asarray(v, dtype=np.float64) for v in _arrays_and_numbers(case)
              if isinstance(v, (np.ndarray, list)) and np.size(v)]
    if not arrays or sum(a.size for a in arrays) > SHOWN_INPUT_NUMBERS:
        return None
    return [a.tolist() for a in arrays]


SNIPPET_SCALARS = (bool, int, float, str, type(None))


def call_of(function: str, case, stand_ins: tuple[str, ...] = ()) -> dict | None:
    """A failing call() record as data for the page's snippet: scalar arguments as they are (the sentence shows them
    already), each array argument as {"input": its place among inputs_of(case), "shape", "dtype"}, never its
    values (the page takes them from the problem's inputs, which exist only when the student may see them). None
    for a case that is not a call, or has an argument a line of code cannot write."""
    if not (isinstance(case, dict) and "args" in case):
        return None
    places = iter(range(len(case["args"]) + len(case["kwargs"])))

    def written(value):
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, SNIPPET_SCALARS):
            return value
        if isinstance(value, dict) and set(value) == {"default_rng"}:       # probes.helpers.argument's generator
            return {"default_rng": int(value["default_rng"])}
        if isinstance(value, (np.ndarray, list)) and np.size(value):
            array = np.asarray(value)
            return {"input": next(places), "shape": list(array.shape), "dtype": str(array.dtype)}
        raise TypeError(type(value).__name__)
    try:
        return {"function": function, "args": [written(v) for v in case["args"]],
                "kwargs": {str(k): written(v) for k, v in case["kwargs"].items()},
                **({"stand_ins": list(stand_ins)} if stand_ins else {})}
    except TypeError:
        return None


# --- reproducing a failing case that is more than one call: lines of code, as data ---------------

def step(function: str, *args, assign: str | None = None, **kwargs) -> dict:
    """A line `assign = function(*args, **kwargs)` of a reproduction (function may be a method: `layer.forward`)."""
    return {"call": function, "args": list(args), "kwargs": kwargs, **({"assign": assign} if assign else {})}


def setting(target: str, value) -> dict:
    """A line `target = value` (say, `layer.embedding = <the table the probe set>`)."""
    return {"set": target, "value": value}


def reading(target: str) -> dict:
    """A line that reads an attribute (say, `layer.grad_embedding`): the value judged."""
    return {"get": target}


@dataclasses.dataclass(frozen=True)
class Unshown:
    """An argument of a reproduction that is no array nor number (the grader's encoder, say): named, described."""
    name: str
    what: str


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A failing case as lines of code (call data the page writes out: each array argument by its place among
    `arrays`, its shape and dtype; an all-zero one as np.zeros), with the arrays themselves, which become the
    problem's inputs only when the student may see them."""
    call: dict
    arrays: list


def reproduction(*lines: dict, stand_ins=()) -> Reproduction:
    """The lines (step, setting, reading) of a case as data; `stand_ins`: the student functions the probe replaced
    with the grader's own while the case ran (the page says so: the line runs the student's own)."""
    arrays: list[np.ndarray] = []

    def written(value):
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, SNIPPET_SCALARS) or (isinstance(value, dict) and set(value) == {"default_rng"}):
            return value
        if isinstance(value, Unshown):
            return {"object": value.name, "what": value.what}
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise TypeError(type(value).__name__)
        if array.size and not array.any():
            return {"zeros": list(array.shape)}
        arrays.append(array)
        return {"input": len(arrays) - 1, "shape": list(array.shape), "dtype": str(array.dtype)}

    written_lines = []          # an argument a line of code cannot write (TypeError): no reproduction at all
    for line in lines:
        line = dict(line)
        if "call" in line:
            line["args"] = [written(v) for v in line["args"]]
            line["kwargs"] = {str(k): written(v) for k, v in line["kwargs"].items()}
        if "set" in line:
            line["value"] = written(line["value"])
        written_lines.append(line)
    return Reproduction({"lines": written_lines, **({"stand_ins": sorted(stand_ins)} if stand_ins else {})}, arrays)


def called(function: str, case: dict, stand_ins=()) -> Reproduction:
    """The reproduction of one call() record of `function`."""
    return reproduction(step(function, *case["args"], **case["kwargs"]), stand_ins=stand_ins)


def reproduced(problem, found: Reproduction):
    """The problem (anything but a sentence, None say, stays as it is) with the case's reproduction as its call, and
    the case's arrays as its inputs when they are the student's own variant and few enough to show."""
    if not isinstance(problem, str):
        return problem
    return ProblemText(problem, call=found.call, inputs=shown_arrays(found.arrays))


def shown_arrays(arrays: list[np.ndarray]) -> list | None:
    """The arrays a page may show of a case, by place (None for one left out): all of them are the student's own
    variant, and the smallest are shown until SHOWN_INPUT_NUMBERS entries in all (a page is no place for thousands
    of numbers). None when none is shown (course-wide inputs are everyone's: never shown)."""
    if variants.current() is None:
        return None
    shown: list = [None] * len(arrays)
    budget = SHOWN_INPUT_NUMBERS
    for place in sorted(range(len(arrays)), key=lambda i: arrays[i].size):
        if 0 < arrays[place].size <= budget:
            shown[place], budget = arrays[place].tolist(), budget - arrays[place].size
    return shown if any(a is not None for a in shown) else None


def reproducing(check: Callable[[], str | None], found: Reproduction) -> Callable[[], str | None]:
    """A zero-argument check (for problems_of) whose problem carries the reproduction."""
    return lambda: reproduced(_problem_or_rejected(check), found)


def _problem_or_rejected(check):
    try:
        return check()
    except Rejected as exc:
        return exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)


def problems_of(*checks) -> list[str]:
    """Run each zero-argument check; keep the problems: a returned string or a raised Rejected."""
    found = []
    for check in checks:
        try:
            problem = check()
        except Rejected as exc:
            problem = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
        if isinstance(problem, str):
            found.append(problem)
    return found


def normal(seed: int, shape) -> np.ndarray:
    """Deterministic random test inputs, drawn from the active student's variant of the seed."""
    return variants.rng(seed).normal(size=shape)
