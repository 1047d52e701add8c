"""Judging what every function promises besides its values: return types, and inputs left alone.

The other tests see answers after the codec has made them float64 arrays and plain numbers, so
a list, a float32 table or a changed input would pass them; this one test charges those, once.
Each function of the manifest is one case: it counts when the function returned what it promised,
left the caller's arrays as they were sent (compared here, on the trusted side, with what the probe
brought back), and passed its own value tests (a stub or a wrong function earns no contract point).
"""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.comparison import ProblemText, Rejected, raised_problem
from posenc_autograder.checks.hidden import HiddenTest, each_case
from posenc_autograder.checks.manifest import ARRAY, BOOL, FLOAT, INT, INT_ARRAY, StudentFunction
from posenc_autograder.checks.reproduction import reading, reproduction, step
from posenc_autograder.probes.calls import contract_each
from posenc_autograder.results import Line

# Likely causes, worded once: the bonus notebook's visible checks give the same words (tests hold them together).
CAUSES = {
    "dtype": "computing or storing in float32 loses digits the tests need; keep everything float64",
    "list": "build the result with numpy, or wrap it in np.array(...)",
    "integer": "indices and buckets are integers: build them with integer arithmetic, or cast with .astype(np.int64)",
    "in_place": "`out = X; out += ...`, `X += ...` or `x[..., 0::2] = ...` writes into the caller's array; "
                "compute into a new array, `X + ...` or `np.empty(x.shape)`, or copy first",
}


INTEGER_TYPES = ("int", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def describe_kind(kind: dict) -> str:
    """'a float32 ndarray', 'a list', 'a float64': what came back, for messages."""
    if kind.get("type") == "ndarray":
        return f"a {kind.get('dtype')} ndarray"
    return f"a {kind.get('type')}"


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
    expected = {FLOAT: "a Python float (float(...))", BOOL: "a bool", INT: "a Python int (int(...))",
                INT_ARRAY: "an integer numpy ndarray (np.int64)"}.get(promised, "a float64 numpy ndarray")
    cause = None
    if promised == ARRAY and kind.get("type") == "ndarray":
        cause = CAUSES["dtype"]
    elif promised == INT_ARRAY and kind.get("type") == "ndarray":
        cause = CAUSES["integer"]
    elif promised in (ARRAY, INT_ARRAY) and kind.get("type") in ("list", "tuple"):
        cause = CAUSES["list"]
    hint = f" ({cause})" if cause else ""
    return ProblemText(f"{what} returned {describe_kind(kind)}; expected {expected}{hint}",
                       cause=cause or f"returns {describe_kind(kind)} where {expected} is promised")


def changed_arguments(sent: dict, record: dict) -> list[int]:
    """Indices of the array arguments that came back (record["arguments"]) other than they were sent."""
    back = record.get("arguments")
    if not isinstance(back, list) or len(back) != len(sent["args"]):
        raise Rejected("the grader did not receive the arguments back, so this test could not be judged; run the "
                      "notebook from the top without changing the grader's code")
    changed = []
    for index, (before, after) in enumerate(zip(sent["args"], back, strict=True)):
        if isinstance(before, (list, np.ndarray)):
            before, after = np.asarray(before, dtype=np.float64), np.asarray(after, dtype=np.float64)
            if before.shape != after.shape or not np.array_equal(before, after, equal_nan=True):
                changed.append(index)
    return changed


def _function_problem(name, sent, record, promised, argument_names, value_tests_passed) -> str | None:
    if "missing" in record:
        return str(record["missing"])
    cause = None if value_tests_passed else getattr(value_tests_passed, "cause", None)   # what its value tests found
    pattern = bool(cause) and getattr(value_tests_passed, "pattern", False) or None
    if "error" in record:      # with values found wrong, one mistake behind both: their cause (one dashboard row)
        raised = raised_problem(f"{name} raised {record['error']}, so its return type could not be checked",
                                record["error"])
        return ProblemText(raised, cause=cause, pattern=pattern) if cause else raised
    if "kind" not in record:
        raise Rejected(f"the grader received no answer for {name}")
    problem = kind_problem(record["kind"], promised, name)
    changed = changed_arguments(sent, record) if not sent.get("attribute") else []
    if changed and problem is None:
        names = [argument_names[i] if i < len(argument_names) else f"argument {i}" for i in changed]
        problem = ProblemText(f"{name} changed its argument {', '.join(names)} in place: the caller's array must "
                              f"come back unchanged (likely cause: {CAUSES['in_place']})", cause=CAUSES["in_place"])
    if problem is None and not value_tests_passed:
        problem = ProblemText(f"{name} returned the promised type, but its contract counts once it passes its own "
                              f"tests" + (f", which found: {cause}" if cause else ""), cause=cause, pattern=pattern)
    elif problem is not None and cause:      # one mistake behind both (a float32 table): one cause, the dashboard's row
        problem = ProblemText(problem, cause=cause, pattern=pattern)
    return problem


def contracts_judge(promised: dict, argument_names: dict):
    """The judge of an assignment's contracts test: one case per function of `promised` (name -> promised
    return), judged on its call in inputs["calls"]; `verdicts` (name -> hidden.Verdict) from judge_all."""
    def judge(inputs, obs, verdicts=None):
        calls = inputs["calls"]
        verdicts = verdicts or {}
        return each_case(lambda name, record: _function_problem(
            name, calls[name], record, promised[name], argument_names.get(name, []), verdicts.get(name, True)),
            list(calls), [obs.get(name, {}) for name in calls],
            reproduce=lambda name, record: contract_reproduction(name, calls[name], inputs.get("stand_ins", {})))
    return judge


def contract_reproduction(name: str, c: dict, stand_ins: dict):
    """A contract's call as lines (probes.calls.contract_target's): a function called; or an instance built, stepped
    (forward, then backward, say), then its member called or read."""
    replaced = tuple(stand_ins.get(name, {}))
    if "member" not in c:
        return reproduction(step(name, *c["args"], **c["kwargs"]), stand_ins=replaced)
    lines: list[Line] = [step(name.split(".", 1)[0], *c["init"]["args"], assign="instance", **c["init"]["kwargs"])]
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
                      judge=contracts_judge({e.name: e.returns for e in checked},
                                            {e.name: list(e.arguments) for e in checked}), **fields)
