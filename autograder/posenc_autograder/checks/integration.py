"""Hidden tests for the integration part: self-attention, and position information inside it."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..probes import positional_encoding as probes
from ..probes.positional_encoding import ATTENTION_FN, D_K, D_MODEL, WIRED_FN, attention_cases, tokens
from ..probes.positional_encoding import attention_weights as _weights
from .base import as_array, first_mismatch, register, shape_problem, value_of

PERMUTATION = np.array(probes.PERMUTATION)


def _attention_diagnosis(out, X, W):
    Q, K, V = X @ W[0], X @ W[1], X @ W[2]
    scores = Q @ np.swapaxes(K, -1, -2)
    known = {
        "the scores are not divided by sqrt(d_k)": ref.softmax(scores) @ V,
        "the scores are divided by sqrt(d_model) instead of sqrt(d_k), the width of Q and K":
            ref.softmax(scores / np.sqrt(D_MODEL)) @ V,
        "softmax normalises over the queries (axis -2) instead of over the keys (axis -1)":
            ref.softmax(scores / np.sqrt(D_K), axis=-2) @ V,
    }
    for explanation, expected in known.items():
        if out.shape == expected.shape and np.allclose(out, expected, atol=1e-9):
            return explanation
    return None


def _judge_attention(obs):
    W = _weights(52)
    problems = []
    for (label, X), record in zip(attention_cases().items(), obs["outputs"]):
        what = f"{ATTENTION_FN} on {label}"
        value, problem = value_of(record, what)
        if problem is None:
            out, problem = as_array(value, what)
            expected = ref.self_attention(X, *W)
            problem = problem or shape_problem(out, expected.shape, what) or first_mismatch(out, expected, 1e-9, what)
            if problem and "large" in label and not np.all(np.isfinite(out)):
                problem += ". exp overflows: subtract each row's maximum score before exponentiating"
            elif problem and out is not None and (diagnosis := _attention_diagnosis(out, X, W)):
                problem += f". Likely cause: {diagnosis}."
        if problem:
            problems.append(problem)
    return problems


# --- order sensitivity with PE, equivariance without, statistics of X + PE ---------------------

def _judge_wiring(obs):
    if "error" in obs:
        return [f"running {WIRED_FN} failed: {obs['error']}"]
    X, W = tokens(), _weights(62)
    encoder = ref.SinusoidalPositionalEncoding(16, D_MODEL)
    problems = []
    cases = {
        "without an encoder": (obs["plain"], ref.self_attention(X, *W)),
        "without an encoder, tokens permuted": (obs["plain_permuted"], ref.self_attention(X[:, PERMUTATION], *W)),
        "with a SinusoidalPositionalEncoding": (obs["encoded"], ref.self_attention(encoder.forward(X), *W)),
        "with a SinusoidalPositionalEncoding, tokens permuted":
            (obs["encoded_permuted"], ref.self_attention(encoder.forward(X[:, PERMUTATION]), *W)),
    }
    for label, (record, expected) in cases.items():
        what = f"{WIRED_FN} {label}"
        value, problem = value_of(record, what)
        if problem is None:
            out, problem = as_array(value, what)
            problem = problem or shape_problem(out, expected.shape, what) or first_mismatch(out, expected, 1e-9, what)
        if problem:
            problems.append(problem)
    if problems:
        return problems[:2]
    plain, plain_perm = (np.asarray(obs[k]["value"]) for k in ("plain", "plain_permuted"))
    if not np.allclose(plain_perm, plain[:, PERMUTATION], atol=1e-12):
        problems.append("without positional encoding, permuting the tokens must permute the outputs the same way")
    encoded, encoded_perm = (np.asarray(obs[k]["value"]) for k in ("encoded", "encoded_permuted"))
    if np.allclose(encoded_perm, encoded[:, PERMUTATION], atol=1e-6):
        problems.append("with positional encoding, permuting the tokens should change the outputs beyond a permutation")
    stats = obs["statistics"]
    if not (stats["finite"] and abs(stats["mean_shift"]) < 0.6 and 0.8 < stats["std_ratio"] < 1.6):
        problems.append(f"X + PE for X ~ N(0, 1) should stay finite with a modest change of statistics; measured "
                        f"mean shift {stats['mean_shift']:.3g}, std ratio {stats['std_ratio']:.3g}")
    return problems


register("hidden_self_attention", points=3, probe=probes.probe_attention, judge=_judge_attention,
         bullets=("integration.attention",))
register("hidden_integration", points=3, probe=probes.probe_wiring, judge=_judge_wiring,
         bullets=("integration.permutation_sensitive", "integration.permutation_equivariant",
                  "integration.additive_composition", "integration.forward_with_attention"))
