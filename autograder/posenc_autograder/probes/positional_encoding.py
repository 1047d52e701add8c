"""Probes of the core assignment that need more than calling one function (see helpers.call_each).

Every input arrives in `data`, built by the hidden test's inputs() on the trusted side; nothing
here chooses a size, a seed or a value.
"""
from __future__ import annotations

import numpy as np

from .helpers import AddingEncoder, attempt, guarded, standing_in, student_callable, to_plain


def _plain_attempts(fn, inputs):
    return [attempt(fn, np.asarray(X)) for X in inputs]


@guarded
def probe_pe_class(ns, data):
    """The module judged alone: the table function it may call is a stand-in (a table sent as data)."""
    cls = student_callable(ns, data["class"])
    with standing_in(ns, data["stand_ins"]):
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


@guarded
def probe_learned_backward(ns, data):
    """What backward returned and the grad_embedding it left, after one forward pass: the trusted side
    compares them with the exact gradient of sum(upstream * forward(X))."""
    layer = _learned(ns, data, data["seed"])
    layer.forward(np.asarray(data["X"]))
    input_grad = attempt(layer.backward, np.asarray(data["upstream"]))
    return {"input_grad": input_grad, "grad_embedding": attempt(lambda: layer.grad_embedding)}


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
    """encode_and_attend judged alone: self_attention is a stand-in (a fixed random projection) and the
    encoder an AddingEncoder (rows of a table sent as data), both known to the trusted side."""
    fn = student_callable(ns, data["function"])
    X, W, perm = np.asarray(data["X"]), [np.asarray(w) for w in data["W"]], np.asarray(data["permutation"])
    encoder = AddingEncoder(data["encoder_table"])
    inputs = {"plain": (X, None), "plain_permuted": (X[:, perm], None), "encoded": (X, encoder),
              "encoded_permuted": (X[:, perm], encoder)}
    with standing_in(ns, data["stand_ins"]):
        return {key: attempt(fn, x.copy(), *W, **({} if enc is None else {"encoder": enc}))
                for key, (x, enc) in inputs.items()}
