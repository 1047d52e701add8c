"""The hidden test of what every function promises besides its values: return types, and inputs left alone.

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
        hint = " (computing or storing in float32 loses digits the tests need; keep everything float64)"
    elif promised == ARRAY and kind.get("type") in ("list", "tuple"):
        hint = " (build the result with numpy, or wrap it in np.array(...))"
    return f"{what} returned {describe_kind(kind)}; expected {expected}{hint}"


def _returned(obs) -> dict:
    """The cases whose call returned; an empty dict when every one raised or is missing."""
    return {name: record for name, record in obs.items() if name in PROMISED and "kind" in record}


def _judge_types(inputs, obs):
    returned = _returned(obs)
    problems = [p for name, record in returned.items() if (p := kind_problem(record["kind"], PROMISED[name], name))]
    return limit_problems(problems, 3)


def _judge_unchanged(inputs, obs):
    problems = []
    for name, record in obs.items():
        changed = [ARGUMENT_NAMES.get(name, [])[i] if i < len(ARGUMENT_NAMES.get(name, [])) else f"argument {i}"
                   for i in record.get("changed", [])]
        if changed:
            problems.append(f"{name} changed its argument {', '.join(changed)} in place: the caller's array must "
                            f"come back unchanged (likely cause: `out = X; out += ...` or `X += ...` writes into the "
                            f"caller's array; compute `X + ...` into a new array, or copy first)")
    return limit_problems(problems, 3)


def _contracts_judge(inputs, obs):
    if not _returned(obs):
        return ["none of the functions returned a value, so their return types and inputs could not be checked"]
    return _judge_types(inputs, obs) + _judge_unchanged(inputs, obs)


TESTS = [
    HiddenTest(id="hidden_contracts", assignment=ASSIGNMENT, points=2, answer_cell="self_attention",
               title="return types and dtypes (float64 arrays, a tuple, a dict of floats and a bool), and the "
                     "caller's arrays left unchanged",
               inputs=_contract_inputs, probe=probe_contracts, judge=_contracts_judge),
]
