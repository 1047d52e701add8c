"""The hidden tests of what every function promises besides its values: return types, and inputs left alone
(this module's test for the core assignment; contracts_judge serves every assignment's).

The other tests see answers after the codec has made them float64 arrays and plain numbers, so
a list, a float32 table or a changed input would pass them; this one test charges those, once.
A function that raised or is missing is left to its own test (charging it here would count one
mistake twice), unless nothing returned at all.
"""
from __future__ import annotations

from .. import reference as ref
from ..probes.positional_encoding import probe_contracts
from .base import HiddenTest, limit_problems, normal

ASSIGNMENT = "positional_encoding"
ARRAY, FLOAT, BOOL = "float64 array", "float", "bool"
# Likely causes, worded once: the bonus notebook's visible checks give the same words (tests hold them together).
CAUSES = {
    "dtype": "computing or storing in float32 loses digits the tests need; keep everything float64",
    "list": "build the result with numpy, or wrap it in np.array(...)",
    "in_place": "`out = X; out += ...`, `X += ...` or `x[..., 0::2] = ...` writes into the caller's array; "
                "compute into a new array, `X + ...` or `np.empty(x.shape)`, or copy first",
}
STATS = {"position_norms": ARRAY, "mean": FLOAT, "variance": FLOAT, "min": FLOAT, "max": FLOAT, "bounded": BOOL}
# What the spec says each call returns; a tuple is a (value, value) pair, a dict maps keys to kinds.
PROMISED = {
    "sinusoidal_positional_encoding": ARRAY,
    "SinusoidalPositionalEncoding.forward": ARRAY,
    "SinusoidalPositionalEncoding.get_encoding": ARRAY,
    "LearnedPositionalEncoding.embedding": ARRAY,
    "LearnedPositionalEncoding.forward": ARRAY,
    "LearnedPositionalEncoding.backward": ARRAY,
    "LearnedPositionalEncoding.grad_embedding": ARRAY,
    "relative_position_matrix": (ARRAY, FLOAT),
    "dot_product_distance": ARRAY,
    "encoding_statistics": STATS,
    "self_attention": ARRAY,
}
ARGUMENT_NAMES = {"SinusoidalPositionalEncoding.forward": ["X"], "LearnedPositionalEncoding.forward": ["X"],
                  "LearnedPositionalEncoding.backward": ["grad_output"], "relative_position_matrix": ["pe"],
                  "dot_product_distance": ["pe"], "encoding_statistics": ["pe"],
                  "self_attention": ["X", "W_q", "W_k", "W_v"]}


def _contract_inputs():
    d_model, length = 4, 6
    X = normal(91, (2, 5, d_model))
    return {"max_seq_len": 8, "d_model": d_model, "length": length, "seed": 92, "X": X,
            "grad": normal(93, X.shape), "pe": ref.sinusoidal_positional_encoding(length, d_model),
            "W": [normal(94 + i, (d_model, 3)) for i in range(3)]}


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


TESTS = [
    HiddenTest(id="hidden_contracts", assignment=ASSIGNMENT, points=2, answer_cell="self_attention",
               title="return types and dtypes (float64 arrays, a tuple, a dict of floats and a bool), and the "
                     "caller's arrays left unchanged",
               inputs=_contract_inputs, probe=probe_contracts, judge=contracts_judge(PROMISED, ARGUMENT_NAMES)),
]
