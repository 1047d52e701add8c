"""Judging what every function promises besides its values: return types, and inputs left alone.

The other tests see answers after the codec has made them float64 arrays and plain numbers, so
a list, a float32 table or a changed input would pass them; this one test charges those, once.
Each function of the manifest is one case: it counts when the function returned what it promised,
left the caller's arrays as they were sent, and passed its own value tests (a stub or a wrong function
earns no contract point).

What the contract covers (a call or an attribute read, its arguments) is this module's declaration (the manifest),
never the record. That the arguments were left alone is a value proof: the probe calls the function a second time
on the very same argument objects, and that second answer must be the trusted reference's answer for the inputs
sent (accepted_answers: the assignment's reference.py run here, on the probe's stand-ins or without them). A call
that wrote into X answers the second time for another X and loses the point whatever its record says of its
arguments; a forged record must carry reference-correct answers. What no answer can prove is left to the record
only where it can cost, never earn: the arguments as the probe saw them after the calls (a write that leaves the
answer unchanged), and the kind of a value where the codec does not carry it (an integer array crosses as
float64; a Python int and numpy's look alike). An attribute read (LearnedPositionalEncoding.embedding) takes no
argument: its contract is its type, and its value is its own tests' to check (a random table has no reference).
"""
from __future__ import annotations

import collections
import copy
import functools
import importlib
import pathlib
import threading

import numpy as np

from posenc_autograder.checks.comparison import (
    NO_KNOWN_MISTAKE_FOUND,
    WHOLE_NUMBERS,
    ProblemText,
    Rejected,
    raised_problem,
)
from posenc_autograder.checks.hidden import HiddenTest, each_case, read_only
from posenc_autograder.checks.manifest import ARRAY, BOOL, FLOAT, INT, INT_ARRAY, StudentFunction
from posenc_autograder.checks.reproduction import reading, reproduction, setting, step
from posenc_autograder.probes import codec
from posenc_autograder.probes.calls import contract_each, contract_target
from posenc_autograder.probes.helpers import argument, stand_in, to_plain
from posenc_autograder.results import Line, ProblemKind

# Likely causes, worded once: the bonus notebook's visible checks give the same words (tests hold them together).
CAUSES = {
    "dtype": "computing or storing in float32 loses digits the tests need; keep everything float64",
    "list": "build the result with numpy, or wrap it in np.array(...)",
    "integer": "indices and buckets are integers: build them with integer arithmetic, or cast with .astype(np.int64)",
    "whole_numbers": WHOLE_NUMBERS,
    "in_place": "`out = X; out += ...`, `X += ...` or `x[..., 0::2] = ...` writes into the caller's array; "
                "compute into a new array, `X + ...` or `np.empty(x.shape)`, or copy first",
}


INTEGER_TYPES = ("int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def describe_kind(kind: dict) -> str:
    """'a float32 ndarray', 'a list', 'a float64': what came back, for messages."""
    word = f"{kind.get('dtype')} ndarray" if kind.get("type") == "ndarray" else str(kind.get("type"))
    return f"{'an' if word[:1] in 'aeio' else 'a'} {word}"       # an int64, an object; a uint8, a float32


def kind_problem(kind: dict, promised, what: str) -> str | None:
    """Why `kind` (probes.helpers.kind_of) is not what the spec promised, or None."""
    if promised == FLOAT and kind.get("float") and not kind.get("bool"):
        return None
    if promised == BOOL and kind.get("bool"):
        return None
    if promised == ARRAY and kind.get("type") == "ndarray" and kind.get("dtype") == "float64":
        return None
    if promised == INT_ARRAY and kind.get("type") == "ndarray" and kind.get("dtype") in INTEGER_TYPES:
        return None
    if promised == INT and kind.get("type") in INTEGER_TYPES:
        return None
    if isinstance(promised, tuple):
        items = kind.get("items") or []
        if kind.get("type") == "tuple" and len(items) == len(promised):
            return next((p for p in (kind_problem(k, e, f"item {i} of {what}")
                                     for i, (k, e) in enumerate(zip(items, promised, strict=True))) if p), None)
        return ProblemText(f"{what} returned {describe_kind(kind)}; expected a tuple (M, error)",
                           cause=f"returns {describe_kind(kind)} where a tuple (M, error) is promised")
    if isinstance(promised, dict):
        items = kind.get("items") or {}
        if kind.get("type") != "dict":
            return ProblemText(f"{what} returned {describe_kind(kind)}; expected a dict",
                               cause=f"returns {describe_kind(kind)} where a dict is promised")
        return next((p for p in (kind_problem(items[key], expected, f"{what}['{key}']")
                                 for key, expected in promised.items() if key in items) if p), None)
    expected = {FLOAT: "a Python float (float(...))", BOOL: "a bool", INT: "an integer (int(...))",
                INT_ARRAY: "an integer numpy ndarray (np.int64)"}.get(promised, "a float64 numpy ndarray")
    cause = fix = None
    if promised == ARRAY and kind.get("type") == "ndarray":
        cause = CAUSES["whole_numbers" if kind.get("dtype") in INTEGER_TYPES else "dtype"]
    elif promised == INT_ARRAY and kind.get("type") == "ndarray":
        cause = CAUSES["integer"]
    elif promised in (ARRAY, INT_ARRAY) and kind.get("type") in ("list", "tuple"):
        fix = CAUSES["list"]      # a fix: the student's text gives it; the cause (the dashboard's label) is the mistake
    hint = f" ({cause or fix})" if cause or fix else ""
    return ProblemText(f"{what} returned {describe_kind(kind)}; expected {expected}{hint}",
                       cause=cause or f"returns {describe_kind(kind)} where {expected} is promised")


def changed_arguments(sent: dict, record: dict) -> list[int]:
    """Indices of the array arguments the probe saw changed after the calls (record["arguments"]): the job's own
    report, so it can only cost (a write that leaves the second answer right); the value proof is answered_again."""
    back = record.get("arguments")
    if not isinstance(back, list) or len(back) != len(sent["args"]):
        raise Rejected("the grader did not receive the arguments back, so this test could not be judged; run the "
                      "notebook from the top without changing the grader's code")
    changed = []
    for index, (before, after) in enumerate(zip(sent["args"], back, strict=True)):
        if isinstance(before, (list, np.ndarray)):
            try:
                before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
            except (TypeError, ValueError):
                changed.append(index)
                continue
            if before.shape != after.shape or not np.array_equal(before, after, equal_nan=True):
                changed.append(index)
    return changed


# --- the value proof: the trusted side's own answers for a contract call ------------------------------------------

SAME_ANSWER = {"rtol": 1e-6, "atol": 1e-9}     # one answer up to rounding; a write into an input moves it far more


@functools.cache
def _reference_code(assignment: str):
    path = str(importlib.import_module(f"posenc_autograder.checks.{assignment}.reference").__file__)
    return compile(pathlib.Path(path).read_text(encoding="utf-8"), path, "exec")


def reference_namespace(assignment: str) -> dict:
    """A fresh namespace of the assignment's reference.py (its own globals, so a stand-in put in it is what the
    reference's functions call; fresh for each call, so judges in several threads never share one)."""
    namespace: dict = {"__name__": f"posenc_reference_{assignment}"}
    exec(_reference_code(assignment), namespace)  # noqa: S102 - the course's own trusted reference
    return namespace


def _trusted_stand_ins(stand_ins: dict) -> dict:
    from posenc_autograder.checks import stand_ins_in_process
    stand_ins_in_process()
    return {name: stand_in(spec) for name, spec in stand_ins.items()}


def reference_answer(assignment: str, entries, name: str, c: dict, stand_ins: dict):
    """What the reference answers for contract call c of `name` (built, set and stepped as the probe does), with
    the student functions of `stand_ins` replaced (under their reference names too) as the probe replaces them."""
    namespace = reference_namespace(assignment)
    names = {e.defined_name: e.reference if e.reference is not None else e.defined_name for e in entries}
    replaced = _trusted_stand_ins(stand_ins)
    namespace.update({names.get(n, n) or n: f for n, f in replaced.items()})
    view = {**{student: namespace[ref] for student, ref in names.items() if ref and ref in namespace}, **replaced}
    c = copy.deepcopy(c)
    target = contract_target(view, name, c)
    return to_plain(target(*[argument(a) for a in c["args"]], **{k: argument(v) for k, v in c["kwargs"].items()}))


def accepted_answers(assignment: str, entries, name: str, c: dict, stand_ins: dict) -> list:
    """The answers the trusted side accepts for a contract call: the entry's own (one with no reference), else the
    reference's, on the probe's stand-ins and without them (a function may compute what it could have called)."""
    entry = next(e for e in entries if e.name == name)
    if entry.answers is not None:
        return [to_plain(a) for a in entry.answers(copy.deepcopy(c), stand_ins)]
    found = [reference_answer(assignment, entries, name, c, {})]
    if stand_ins:
        found.insert(0, reference_answer(assignment, entries, name, c, stand_ins))
    return found


def agrees(value, expected) -> bool:
    """Whether an answer as it crossed is the expected one: same structure, numbers within SAME_ANSWER."""
    if isinstance(expected, dict):
        return isinstance(value, dict) and value.keys() == expected.keys() and \
            all(agrees(value[k], expected[k]) for k in expected)
    if isinstance(expected, list) and not isinstance(value, np.ndarray):
        return isinstance(value, list) and len(value) == len(expected) and \
            all(agrees(v, e) for v, e in zip(value, expected, strict=True))
    try:
        value, expected = np.asarray(value, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    if value.shape != expected.shape:
        return False
    # np.isclose's own rule where every expected entry is finite (its Python-level cost was most of this judge's);
    # a NaN or infinite answer fails it, and np.allclose decides (equal NaN, equal infinities)
    if np.all(np.isfinite(expected)) and \
            np.all(np.abs(value - expected) <= SAME_ANSWER["atol"] + SAME_ANSWER["rtol"] * np.abs(expected)):
        return True
    return bool(np.allclose(value, expected, equal_nan=True, **SAME_ANSWER))


def answered_again(record: dict, accepted: list) -> tuple[bool, bool]:
    """(the first answer is an accepted one, the second is): the value proof of a contract call."""
    again = record.get("again")
    if not isinstance(again, dict):
        raise Rejected("the grader did not receive the second answer of this call, so this test could not be "
                      "judged; run the notebook from the top without changing the grader's code")
    first = "value" in record and any(agrees(record["value"], a) for a in accepted)
    return first, "value" in again and any(agrees(again["value"], a) for a in accepted)


def trusted_kind(record: dict) -> dict:
    """The kind of the first answer: the record's word, corrected by the answer as it crossed where the codec keeps
    the difference (an array and its float dtype, a list), so that a claim can only make it stricter."""
    kind = dict(record["kind"]) if isinstance(record.get("kind"), dict) else {"type": "unknown"}
    value = record.get("value")
    if isinstance(value, np.ndarray) and value.dtype == np.float32:
        kind.update(type="ndarray", dtype="float32")
    elif isinstance(value, list) and kind.get("type") == "ndarray":
        kind = {"type": "list"}
    return kind


def _in_place_problem(name: str, names: list[str], answered_differently: bool) -> ProblemText:
    what = f"its argument {', '.join(names)}" if names else "an argument"
    again = ", and called again on the same arrays it answered differently" if answered_differently else ""
    return ProblemText(f"{name} changed {what} in place: the caller's array must come back unchanged{again} "
                       f"(likely cause: {CAUSES['in_place']})", cause=CAUSES["in_place"])


def _function_problem(name, sent, record, promised, argument_names, value_tests_passed, accepted) -> str | None:
    if "missing" in record:        # as its own tests say it (hidden.py): one cause, the same words and row
        return ProblemText(str(record["missing"]), kind=ProblemKind.NOT_RUN)
    cause = None if value_tests_passed else getattr(value_tests_passed, "cause", None)   # what its value tests found
    pattern = bool(cause) and getattr(value_tests_passed, "pattern", False) or None
    if "error" in record:      # with values found wrong, one mistake behind both: their cause (one dashboard row)
        raised = raised_problem(f"{name} raised {record['error']}, so its return type could not be checked",
                                record["error"])
        return ProblemText(raised, cause=cause, pattern=pattern) if cause else raised
    if "kind" not in record:
        raise Rejected(f"the grader received no answer for {name}")
    problem = kind_problem(trusted_kind(record), promised, name)
    if problem is None and not sent.get("attribute"):
        problem = _argument_problem(name, sent, record, argument_names, accepted if value_tests_passed else None)
    if problem is None and not value_tests_passed and not cause and getattr(value_tests_passed, "stub", False):
        # what its tests met is said there (a part not attempted), not judged again here: no "no known mistake"
        problem = ProblemText(f"{name} returned the promised type, but its contract counts once it passes its own "
                              f"tests, which met the template stub", kind=ProblemKind.NOT_JUDGED)
    elif problem is None and not value_tests_passed:
        problem = ProblemText(f"{name} returned the promised type, but its contract counts once it passes its own "
                              f"tests" + (f", which found: {cause}" if cause else f". {NO_KNOWN_MISTAKE_FOUND}."),
                              cause=cause, pattern=pattern)
    elif problem is not None and cause:      # one mistake behind both (a float32 table): one cause, the dashboard's row
        problem = ProblemText(problem, cause=cause, pattern=pattern)
    return problem


def _argument_problem(name, sent, record, argument_names, accepted) -> str | None:
    """The caller's arrays: proven left alone by the second answer, else charged (an in-place write when the first
    answer was right), and charged too when the probe saw them changed. A function its own tests failed earns no
    point anyway (`accepted` None): only what the probe saw is said, as the first thing to fix."""
    changed = [argument_names[i] if i < len(argument_names) else f"argument {i}"
               for i in changed_arguments(sent, record)]
    if accepted is None:
        return _in_place_problem(name, changed, False) if changed else None
    first, second = answered_again(record, accepted())
    if first and not second:
        return _in_place_problem(name, changed, True)
    if not second:
        return ProblemText(f"{name} did not give the reference's answer for this call, so the grader could not check "
                           f"that it leaves the caller's arrays unchanged")
    return _in_place_problem(name, changed, False) if changed else None


ACCEPTED_KEPT = 64     # a contracts judge's accepted answers kept: every call of the course-wide inputs, which every
                       # notebook's shared probe set makes again, and the last few notebooks' own


class KeptAnswers:
    """accepted_answers() kept by the bytes of the call and its stand-ins (the inputs themselves, not where they came
    from), handed out read-only: the reference is run once for inputs met again."""

    def __init__(self, assignment: str, entries: tuple[StudentFunction, ...]):
        self.assignment, self.entries = assignment, entries
        self.kept: collections.OrderedDict[tuple, list] = collections.OrderedDict()
        self.lock = threading.Lock()

    def __call__(self, name: str, c: dict, stand_ins: dict) -> list:
        key = (name, codec.frame(c), codec.frame(stand_ins))
        with self.lock:
            if key in self.kept:
                self.kept.move_to_end(key)
                return self.kept[key]
        found = read_only(accepted_answers(self.assignment, self.entries, name, c, stand_ins))
        with self.lock:
            self.kept[key] = found
            while len(self.kept) > ACCEPTED_KEPT:
                self.kept.popitem(last=False)
        return found


def contracts_judge(assignment: str, entries: tuple[StudentFunction, ...]):
    """The judge of an assignment's contracts test: one case per entry, judged on its call in inputs["calls"]
    against the promise and arguments the entry declares; `verdicts` (name -> hidden.Verdict) from judge_all."""
    declared = {e.name: e for e in entries}        # every entry: the stand-ins' reference names are among them
    kept = KeptAnswers(assignment, entries)

    def judge(inputs, obs, verdicts=None):
        calls, stand_ins = inputs["calls"], inputs.get("stand_ins", {})
        verdicts = verdicts or {}

        def case(name, record):
            def accepted():
                return kept(name, calls[name], stand_ins.get(name, {}))
            return _function_problem(name, calls[name], record, declared[name].returns,
                                     list(declared[name].arguments), verdicts.get(name, True), accepted)
        return each_case(case, list(calls), [obs.get(name, {}) for name in calls],
            reproduce=lambda name, record: contract_reproduction(name, calls[name], inputs.get("stand_ins", {})))
    return judge


def contract_reproduction(name: str, c: dict, stand_ins: dict):
    """A contract's call as lines (probes.calls.contract_target's): a function called; or an instance built, stepped
    (forward, then backward, say), then its member called or read."""
    replaced = tuple(stand_ins.get(name, {}))
    if "member" not in c:
        return reproduction(step(name, *c["args"], **c["kwargs"]), stand_ins=replaced)
    lines: list[Line] = [step(name.split(".", 1)[0], *c["init"]["args"], assign="instance", **c["init"]["kwargs"])]
    lines += [setting(f"instance.{attribute}", value) for attribute, value in c.get("set", {}).items()]
    lines += [step(f"instance.{method}", *taken["args"], **taken["kwargs"]) for method, taken in c["steps"]]
    member = f"instance.{c['member']}"
    lines.append(reading(member) if c.get("attribute") else step(member, *c["args"], **c["kwargs"]))
    return reproduction(*lines, stand_ins=replaced)


def contracts_test(assignment: str, entries: tuple[StudentFunction, ...], **fields) -> HiddenTest:
    """The contracts test of an assignment, from its manifest: each entry's contract call, prorated."""
    checked = [entry for entry in entries if entry.contract is not None]
    return HiddenTest(assignment=assignment, partial=True, reads_verdicts=True,
                      subjects=tuple(entry.name for entry in checked),
                      inputs=lambda: {"calls": {entry.name: entry.contract() for entry in checked},
                                      "stand_ins": {entry.name: entry.stand_ins() for entry in checked
                                                    if entry.stand_ins}},
                      probe=contract_each,
                      judge=contracts_judge(assignment, tuple(entries)), **fields)
