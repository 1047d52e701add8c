"""Comparison and diagnosis, the judge's side of a hidden test: reading what a probe observed (an answer, or the
exception a call raised), comparing it with the trusted expected value, and saying what is wrong in the student's
terms: the worst entry, a diagnosed cause, or the shape of the difference when no known mistake matches.

A problem is built as a ProblemText (its sentence, with the data results.Problem keeps) and becomes a
results.Problem when the hidden test returns it.
"""
from __future__ import annotations

import contextvars
import math
import re
from typing import Callable

import numpy as np

from posenc_autograder import words
from posenc_autograder.checks.diagnosis import Ambiguous
from posenc_autograder.results import NUMBER, PROSE_NUMBERS, STUB_ERROR, Problem, ProblemKind, Reproduction

MAX_PER_GROUP = 2      # problems reported per group of similar cases: the first ones, then a count


class ProblemText(str):
    """A problem while the judges build it: its sentence, with the fields results.Problem keeps as data (the cause,
    the worst entry's details, the student's drawn inputs, the exception's name). HiddenTest.verdict turns each
    into a results.Problem; judges keep treating it as the sentence it is."""
    cause: str | None = None
    kind: ProblemKind = ProblemKind.VALUE
    details: dict | None = None
    inputs: list | None = None
    error: str | None = None
    call: Reproduction | None = None
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
    return ProblemText(text, error=name, cause=None if name == STUB_ERROR else error)


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


# A shape that is the expected one reversed, or one entry off along one axis, said as the pattern it is (a test that
# diagnoses the values may still name a cause): the sentence then never also says that no known mistake matches.
REVERSED_SHAPE = "its shape is the expected one reversed (transposed)"


def shape_pattern(shape: tuple, expected: tuple) -> tuple[str, str] | None:
    """(the words in the sentence, the pattern kept as its cause) of a wrong shape that has one, else None."""
    if shape == tuple(reversed(expected)) and len(expected) > 1:
        return "it looks transposed", REVERSED_SHAPE
    off = [axis for axis, (got, want) in enumerate(zip(shape, expected, strict=False)) if got != want]
    if len(shape) != len(expected) or len(off) != 1 or abs(shape[off[0]] - expected[off[0]]) != 1:
        return None
    axis = off[0] - len(expected)
    part = {-1: "column", -2: "row"}.get(axis, "entry") if len(expected) > 1 else "entry"
    said = (f"one {part} too {'many' if shape[off[0]] > expected[off[0]] else 'few'}: an off-by-one in a range or a "
            f"slice? np.arange(n) gives n values, 0 to n - 1")
    return said, said


def require_shape(array: np.ndarray, expected: tuple, what: str) -> np.ndarray:
    expected = tuple(expected)
    if array.shape != expected:
        found = shape_pattern(array.shape, expected)
        if found is not None:
            raise Rejected(ProblemText(f"{what} has shape {array.shape}, expected {expected} ({found[0]})",
                                       cause=found[1], pattern=True))
        raise Rejected(f"{what} has shape {array.shape}, expected {expected}")
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


def within(actual: np.ndarray, expected: np.ndarray, atol: float, precision: str | None = None) -> bool:
    """Whether every entry of an answer of the expected shape is within atol (and the rounding allowance) of it, as
    mismatch() finds it, in one pass and one array: a right answer's whole judging. NaN is never within, and no
    infinity either when atol is finite, so a True here is compare()'s None."""
    if actual.shape != expected.shape or not actual.size or not math.isfinite(atol) \
            or expected.dtype.kind not in "biuf":          # a complex or object expectation: the full path
        return False
    diff = np.asarray(np.subtract(actual, expected, dtype=np.float64))      # an array even for 0-d ones
    np.abs(diff, out=diff)
    allowance = rounding_allowance(expected, precision)
    if isinstance(allowance, float):
        return bool(diff.max() <= atol + allowance)          # NaN anywhere: the maximum is NaN, never <=
    return bool(np.all(diff <= atol + allowance))


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
    if within(array, expected, atol, returned_precision(value)):
        return None
    try:
        if not np.all(np.isfinite(array)):      # NaN and Inf fail, yet the diagnosis or the pattern may explain them
            bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
            raise Rejected(f"{what} contains NaN or Inf (first at index {bad})")
        require_shape(array, expected.shape, what)
        problem = mismatch(array, expected, atol, what, returned_precision(value))
    except Rejected as shape_problem:
        problem = shape_problem.args[0]
    if problem is None or not _DESCRIBED.get():
        return problem
    diagnosis = known_cause(array, expected, atol, diagnose)
    if diagnosis:
        return with_cause(problem, diagnosis)
    pattern = difference_pattern(array, expected, atol)
    return with_pattern(problem, pattern) if pattern else problem


# The one cause of an answer each entry of which is the expected one cut to a whole number (the contracts test says
# it of an integer array returned where float64 is promised: one cause, one row).
WHOLE_NUMBERS = ("an integer array keeps whole numbers only, so every value written into it is cut: build it as "
                 "float64 (np.zeros(shape) or np.empty(shape), without dtype=int)")


def known_cause(array: np.ndarray, expected: np.ndarray, atol: float,
                diagnose: Callable[[np.ndarray], str | None] | None = None) -> str | None:
    """The known mistake a wrong answer shows: the test's own diagnosis, else whole numbers where the expected values
    have fractions (an integer array); None when neither fits. What compare() and the judges that read an answer's
    structure rather than its values (distinct rows, wavelengths) name as the cause."""
    diagnosis = diagnose(array) if diagnose else None
    return diagnosis or (WHOLE_NUMBERS if cut_to_whole_numbers(array, expected, atol) else None)


def cut_to_whole_numbers(actual: np.ndarray, expected: np.ndarray, atol: float) -> bool:
    """Each entry the expected one cut toward 0 (and the answer wrong, so some entry has a fraction); some whole
    entry not 0, or an answer of zeros (never filled in) would fit."""
    cut = np.trunc(np.asarray(expected, dtype=np.float64))
    return np.shape(actual) == cut.shape and bool(np.any(np.abs(cut) > atol)) and \
        bool(np.allclose(np.asarray(actual, dtype=np.float64), cut, rtol=0, atol=atol))


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
# A contract case that waits for its function's own tests, which named no cause: its answer (the type) is right.
NO_KNOWN_MISTAKE_FOUND = "No known mistake matches what they found"


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
    if any(getattr(p, "cause", None) or str.__str__(p).endswith(f"{NO_KNOWN_MISTAKE_FOUND}.") for p in problems):
        return problems
    for index, problem in enumerate(problems):
        if getattr(problem, "kind", ProblemKind.VALUE) == ProblemKind.VALUE and not getattr(problem, "error", None):
            return [*problems[:index], ProblemText(f"{str.__str__(problem)}. {NO_KNOWN_MISTAKE}.",
                                                   **fields_of(problem)), *problems[index + 1:]]
    return problems


# compare() describing what it finds wrong (a diagnosis, a pattern): off while against_any only asks whether an
# expectation fits, which an answer's failure against the other expectations never changes.
_DESCRIBED: contextvars.ContextVar[bool] = contextvars.ContextVar("described", default=True)


def against_any(problem: Callable[..., str | None], *expectations) -> str | None:
    """problem(e) for each trusted expectation (say, the reference alone and the same built on the probe's
    stand-ins, for a subject that may or may not call the function the stand-in replaces): None when one
    fits; else the problem that diagnoses a likely cause, or else describes a pattern, or the first. Whether one
    fits is asked first with compare() describing nothing: a right answer fails every expectation but its own,
    and describing those failures (diagnoses, patterns) cost more than judging it."""
    if len(expectations) > 1:
        undescribed = _DESCRIBED.set(False)
        try:
            if any(problem(expected) is None for expected in expectations):
                return None
        finally:
            _DESCRIBED.reset(undescribed)
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


def extended(problem: str, more: str) -> ProblemText:
    """The problem with `more` appended to its sentence, its data kept."""
    return ProblemText(str.__str__(problem) + more, **fields_of(problem))


def problem_of(check: Callable[[], object]) -> object:
    """What a zero-argument check says: the problem it returns (a string; anything else is none), or the one it
    raised as Rejected."""
    try:
        return check()
    except Rejected as exc:
        return exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)


def problems_of(*checks: Callable[[], object]) -> list[str]:
    """Run each zero-argument check; keep the problems: a returned string or a raised Rejected."""
    return [problem for problem in map(problem_of, checks) if isinstance(problem, str)]


def limit_problems(problems: list[str], limit: int = MAX_PER_GROUP) -> list[str]:
    """The one rule for every judge: of a group of similar cases, report the first `limit` problems."""
    if len(problems) <= limit:
        return problems
    return problems[:limit] + [ProblemText(f"... and {words.count(len(problems) - limit, 'more case')} like these",
                                           kind=ProblemKind.MORE)]


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


