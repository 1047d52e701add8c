"""Judging what every function promises besides its values: return types, and inputs left alone
(each assignment's contracts test is built with contracts_judge).

The other tests see answers after the codec has made them float64 arrays and plain numbers, so
a list, a float32 table or a changed input would pass them; this one test charges those, once.
A function that raised or is missing is left to its own test (charging it here would count one
mistake twice), unless nothing returned at all.
"""
from __future__ import annotations

from posenc_autograder.checks.base import limit_problems

ARRAY, FLOAT, BOOL = "float64 array", "float", "bool"
# Likely causes, worded once: the bonus notebook's visible checks give the same words (tests hold them together).
CAUSES = {
    "dtype": "computing or storing in float32 loses digits the tests need; keep everything float64",
    "list": "build the result with numpy, or wrap it in np.array(...)",
    "in_place": "`out = X; out += ...`, `X += ...` or `x[..., 0::2] = ...` writes into the caller's array; "
                "compute into a new array, `X + ...` or `np.empty(x.shape)`, or copy first",
}


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
    if isinstance(promised, tuple):
        items = kind.get("items") or []
        if kind.get("type") == "tuple" and len(items) == len(promised):
            return next((p for p in (kind_problem(k, e, f"item {i} of {what}")
                                     for i, (k, e) in enumerate(zip(items, promised))) if p), None)
        return f"{what} returned {describe_kind(kind)}; expected a tuple (M, error)"
    if isinstance(promised, dict):
        items = kind.get("items") or {}
        if kind.get("type") != "dict":
            return f"{what} returned {describe_kind(kind)}; expected a dict"
        return next((p for p in (kind_problem(items[key], expected, f"{what}['{key}']")
                                 for key, expected in promised.items() if key in items) if p), None)
    expected = {FLOAT: "a Python float (float(...))", BOOL: "a bool"}.get(promised, "a float64 numpy ndarray")
    hint = ""
    if promised == ARRAY and kind.get("type") == "ndarray":
        hint = f" ({CAUSES['dtype']})"
    elif promised == ARRAY and kind.get("type") in ("list", "tuple"):
        hint = f" ({CAUSES['list']})"
    return f"{what} returned {describe_kind(kind)}; expected {expected}{hint}"


def _returned(obs, promised) -> dict:
    """The cases whose call returned; an empty dict when every one raised or is missing."""
    return {name: record for name, record in obs.items() if name in promised and "kind" in record}


def _judge_types(returned, promised):
    problems = [p for name, record in returned.items() if (p := kind_problem(record["kind"], promised[name], name))]
    return limit_problems(problems, 3)


def _judge_unchanged(obs, argument_names):
    problems = []
    for name, record in obs.items():
        names = argument_names.get(name, [])
        changed = [names[i] if i < len(names) else f"argument {i}" for i in record.get("changed", [])]
        if changed:
            problems.append(f"{name} changed its argument {', '.join(changed)} in place: the caller's array must "
                            f"come back unchanged (likely cause: {CAUSES['in_place']})")
    return limit_problems(problems, 3)


def contracts_judge(promised: dict, argument_names: dict):
    """The judge of an assignment's contracts test: what each call returned against `promised`, and the
    arguments (named by `argument_names`) that it changed in place."""
    def judge(inputs, obs):
        if lost := [name for name in promised if name not in obs]:       # every call records something
            return [f"the grader received no answer for {', '.join(lost)}, so this test could not be judged; run "
                    f"the notebook from the top without changing the grader's code"]
        returned = _returned(obs, promised)
        if not returned:
            return ["none of the functions returned a value, so their return types and inputs could not be checked"]
        return _judge_types(returned, promised) + _judge_unchanged(obs, argument_names)
    return judge
