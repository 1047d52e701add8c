"""Hidden tests for the integration part: self-attention, and position information inside it."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from .base import as_array, attempt, check, first_mismatch, shape_problem, student_callable, to_plain, value_of

ATTENTION_FN = "self_attention"
WIRED_FN = "encode_and_attend"
PE_CLASS = "SinusoidalPositionalEncoding"

D_MODEL, D_K = 8, 6


def _weights(seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(scale=0.5, size=(D_MODEL, D_K)) for _ in range(3))


def _attention_cases():
    rng = np.random.default_rng(51)
    return {"X of shape (5, 8)": rng.normal(size=(5, D_MODEL)),
            "X of shape (3, 7, 8)": rng.normal(size=(3, 7, D_MODEL)),
            "large inputs (entries around 300)": 300 * rng.normal(size=(4, D_MODEL))}


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
    for (label, X), record in zip(_attention_cases().items(), obs["outputs"]):
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


@check("hidden_self_attention", points=3, bullets=("integration.attention",), judge=_judge_attention)
def probe_attention(ns):
    fn = student_callable(ns, ATTENTION_FN)
    return {"outputs": [attempt(fn, X, *_weights(52)) for X in _attention_cases().values()]}


# --- order sensitivity with PE, equivariance without, statistics of X + PE ---------------------

SEQ_LEN, BATCH = 6, 2
PERMUTATION = np.array([3, 0, 5, 1, 4, 2])


def _tokens():
    return np.random.default_rng(61).normal(size=(BATCH, SEQ_LEN, D_MODEL))


def _judge_wiring(obs):
    if "error" in obs:
        return [f"running {WIRED_FN} failed: {obs['error']}"]
    X, W = _tokens(), _weights(62)
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


@check("hidden_integration", points=3,
       bullets=("integration.permutation_sensitive", "integration.permutation_equivariant",
                "integration.additive_composition", "integration.forward_with_attention"), judge=_judge_wiring)
def probe_wiring(ns):
    fn, cls = student_callable(ns, WIRED_FN), student_callable(ns, PE_CLASS)
    X, W = _tokens(), _weights(62)
    try:
        encoder = cls(16, D_MODEL)
        big = np.random.default_rng(63).normal(size=(4, 64, D_MODEL))
        shifted = np.asarray(cls(64, D_MODEL).forward(big), dtype=np.float64)
        statistics = {"finite": bool(np.all(np.isfinite(shifted))),
                      "mean_shift": float(shifted.mean() - big.mean()),
                      "std_ratio": float(shifted.std() / big.std())}
    except BaseException as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"plain": attempt(fn, X, *W), "plain_permuted": attempt(fn, X[:, PERMUTATION], *W),
            "encoded": attempt(fn, X, *W, encoder=encoder),
            "encoded_permuted": attempt(fn, X[:, PERMUTATION], *W, encoder=encoder),
            "statistics": to_plain(statistics)}
