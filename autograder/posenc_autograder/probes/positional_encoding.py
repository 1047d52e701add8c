"""Probes of the core assignment that need more than calling one function (see helpers.call_each).

Every input arrives in `data`, built by the hidden test's inputs() on the trusted side; nothing
here chooses a size, a seed or a value.
"""
from __future__ import annotations

import numpy as np

from .helpers import attempt, guarded, student_callable, to_plain


def _plain_attempts(fn, inputs):
    return [attempt(fn, np.asarray(X)) for X in inputs]


@guarded
def probe_pe_class(ns, data):
    cls = student_callable(ns, data["class"])
    obs = {"odd": attempt(cls, *data["odd"])}
    module = cls(data["max_seq_len"], data["d_model"])
    obs["forward"] = _plain_attempts(module.forward, data["inputs"])
    obs["encoding"] = attempt(module.get_encoding, data["encoding_length"])
    obs["too_long"] = attempt(module.forward, np.asarray(data["too_long"]))
    return obs


def _learned(ns, data, seed):
    cls = student_callable(ns, data["class"])
    return cls(data["max_seq_len"], data["d_model"], rng=np.random.default_rng(seed))


@guarded
def probe_learned_init(ns, data):
    cls = student_callable(ns, data["class"])
    return {"tables": [to_plain(_learned(ns, data, seed).embedding) for seed in data["seeds"]],
            "without_rng": attempt(lambda: cls(data["max_seq_len"], data["d_model"]).embedding)}


@guarded
def probe_learned_forward(ns, data):
    layer = _learned(ns, data, data["seed"])
    layer.embedding = np.array(data["table"])
    return {"forward": _plain_attempts(layer.forward, data["inputs"]),
            "too_long": attempt(layer.forward, np.asarray(data["too_long"]))}


def numerical_gradient(layer, X, upstream, epsilon):
    """d/dE of sum(upstream * forward(X)) by central differences on every table entry."""
    table = np.array(layer.embedding, dtype=np.float64)
    numeric = np.zeros_like(table)
    for index in np.ndindex(*table.shape):
        values = []
        for sign in (+1, -1):
            shifted = table.copy()
            shifted[index] += sign * epsilon
            layer.embedding = shifted
            values.append(float(np.sum(upstream * np.asarray(layer.forward(X), dtype=np.float64))))
        numeric[index] = (values[0] - values[1]) / (2 * epsilon)
    layer.embedding = table
    return numeric


@guarded
def probe_learned_backward(ns, data):
    layer = _learned(ns, data, data["seed"])
    X, upstream = np.asarray(data["X"]), np.asarray(data["upstream"])
    layer.forward(X)
    input_grad = attempt(layer.backward, upstream)
    grad = to_plain(getattr(layer, "grad_embedding", None))
    return {"input_grad": input_grad, "grad_embedding": grad,
            "numeric": to_plain(numerical_gradient(layer, X, upstream, data["epsilon"]))}


@guarded
def probe_learned_accumulation(ns, data):
    """grad_embedding after each (forward input, upstream gradient) pass, in order, on one layer."""
    layer = _learned(ns, data, data["seed"])
    grads = []
    for X, upstream in data["passes"]:
        layer.forward(np.asarray(X))
        layer.backward(np.asarray(upstream))
        grads.append(to_plain(layer.grad_embedding))
    return {"grads": grads}


@guarded
def probe_wiring(ns, data):
    fn, cls = student_callable(ns, data["function"]), student_callable(ns, data["class"])
    X, W, perm = np.asarray(data["X"]), [np.asarray(w) for w in data["W"]], np.asarray(data["permutation"])
    encoder = cls(data["encoder_length"], X.shape[-1])
    big = np.asarray(data["big"])
    shifted = np.asarray(cls(big.shape[1], X.shape[-1]).forward(big), dtype=np.float64)
    statistics = {"finite": bool(np.all(np.isfinite(shifted))),
                  "mean_shift": float(shifted.mean() - big.mean()),
                  "std_ratio": float(shifted.std() / big.std())}
    return {"plain": attempt(fn, X, *W), "plain_permuted": attempt(fn, X[:, perm], *W),
            "encoded": attempt(fn, X, *W, encoder=encoder),
            "encoded_permuted": attempt(fn, X[:, perm], *W, encoder=encoder),
            "statistics": statistics}
