"""Probes of the core assignment that need more than calling one function (see helpers.call_each).

Every input arrives in `data`, built by the hidden test's inputs() on the trusted side; nothing
here chooses a size, a seed or a value.
"""
from __future__ import annotations

import numpy as np

from .helpers import (attempt, attempt_contract, describe, guarded, kind_of, returns_float64, student_callable,
                      to_plain)


def _plain_attempts(fn, inputs):
    return [attempt(fn, np.asarray(X)) for X in inputs]


@guarded
def probe_pe_class(ns, data):
    cls = student_callable(ns, data["class"])
    with returns_float64(ns, data["function"]):
        obs = {"odd": attempt(cls, *data["odd"])}
        module = cls(data["max_seq_len"], data["d_model"])
        obs["forward"] = _plain_attempts(module.forward, data["inputs"])
        obs["encoding"] = attempt(module.get_encoding, data["encoding_length"])
        obs["too_long"] = attempt(module.forward, np.asarray(data["too_long"]))
    # The student's own table: the module is judged on top of it too, so a table mistake costs only its test.
    obs["own_table"] = _own(ns, data["function"], lambda fn: attempt(fn, data["max_seq_len"], data["d_model"]))
    return obs


def _own(ns, name, use):
    """use(the student's function `name`), or {'error': ...} when it is not defined."""
    return use(ns[name]) if name in ns else {"error": f"NameError: `{name}` is not defined"}


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
            values.append(float(np.sum(upstream * np.asarray(layer.forward(X.copy()), dtype=np.float64))))
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
    with returns_float64(ns, data["table"]):
        encoder = cls(data["encoder_length"], X.shape[-1])
        big = np.asarray(data["big"])
        shifted = np.asarray(cls(big.shape[1], X.shape[-1]).forward(big), dtype=np.float64)
    statistics = {"finite": bool(np.all(np.isfinite(shifted))),
                  "mean_shift": float(shifted.mean() - big.mean()),
                  "std_ratio": float(shifted.std() / big.std())}
    inputs = {"plain": (X, None), "plain_permuted": (X[:, perm], None), "encoded": (X, encoder),
              "encoded_permuted": (X[:, perm], encoder)}
    # The student's own parts composed by the probe: encode_and_attend is judged on top of them too.
    own = {key: _own(ns, data["attention"], lambda attention: attempt(
        lambda: attention(x.copy() if enc is None else enc.forward(x.copy()), *W))) for key, (x, enc) in inputs.items()}
    return {**{key: attempt(fn, x.copy(), *W, **({} if enc is None else {"encoder": enc}))
               for key, (x, enc) in inputs.items()},
            "own": own, "statistics": statistics}


def _contract_case(ns, build) -> dict:
    """One contract case: {'missing': why} for an undefined name, {'error': ...} if setting it up raised."""
    try:
        return build()
    except NameError as exc:
        return {"missing": str(exc)}
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - set-up raising is the student's exception
        return {"error": describe(exc)}


@guarded
def probe_contracts(ns, data):
    """What each function returns (type, dtype) and whether it changed the caller's arrays.

    Every call gets its own fresh copies of the inputs: they are the caller's arrays, kept by the probe."""
    n, d, length = data["max_seq_len"], data["d_model"], data["length"]
    fresh = {key: (lambda key=key: np.array(data[key])) for key in ("X", "grad", "pe")}
    weights = [np.array(w) for w in data["W"]]

    def learned():
        layer = student_callable(ns, "LearnedPositionalEncoding")(n, d, rng=np.random.default_rng(data["seed"]))
        layer.forward(fresh["X"]())
        return layer

    def after_backward(attribute):
        layer = learned()
        layer.backward(fresh["grad"]())
        return {"kind": kind_of(getattr(layer, attribute, None)), "changed": []}

    builds = {
        "sinusoidal_positional_encoding": lambda: attempt_contract(
            student_callable(ns, "sinusoidal_positional_encoding"), length, d),
        "SinusoidalPositionalEncoding.forward": lambda: attempt_contract(
            student_callable(ns, "SinusoidalPositionalEncoding")(n, d).forward, fresh["X"]()),
        "SinusoidalPositionalEncoding.get_encoding": lambda: attempt_contract(
            student_callable(ns, "SinusoidalPositionalEncoding")(n, d).get_encoding, length),
        "LearnedPositionalEncoding.embedding": lambda: {"kind": kind_of(learned().embedding), "changed": []},
        "LearnedPositionalEncoding.forward": lambda: attempt_contract(learned().forward, fresh["X"]()),
        "LearnedPositionalEncoding.backward": lambda: attempt_contract(learned().backward, fresh["grad"]()),
        "LearnedPositionalEncoding.grad_embedding": lambda: after_backward("grad_embedding"),
        "relative_position_matrix": lambda: attempt_contract(
            student_callable(ns, "relative_position_matrix"), fresh["pe"](), 1),
        "dot_product_distance": lambda: attempt_contract(student_callable(ns, "dot_product_distance"), fresh["pe"]()),
        "encoding_statistics": lambda: attempt_contract(student_callable(ns, "encoding_statistics"), fresh["pe"]()),
        "self_attention": lambda: attempt_contract(student_callable(ns, "self_attention"), fresh["X"](),
                                                   *[w.copy() for w in weights]),
    }
    return {name: _contract_case(ns, build) for name, build in builds.items()}
