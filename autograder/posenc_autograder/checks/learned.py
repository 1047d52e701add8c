"""Hidden tests for LearnedPositionalEncoding: initialisation, forward, and the backward pass."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from .base import (as_array, attempt, check, first_mismatch, raises, shape_problem,
                   student_callable, to_plain, value_of)

CLASS = "LearnedPositionalEncoding"
EPSILON = 1e-5
GRADIENT_REL_TOLERANCE = 1e-5


def _make(ns, max_seq_len, d_model, seed):
    return student_callable(ns, CLASS)(max_seq_len, d_model, rng=np.random.default_rng(seed))


def _inputs(seed, shape):
    return np.random.default_rng(seed).normal(size=shape)


def _set_table(layer, table):
    layer.embedding = table.copy()


def relative_error(analytic: np.ndarray, numeric: np.ndarray) -> float:
    """CS231n-style max |a - n| / max(|a|, |n|), with a floor so exact zeros compare as equal."""
    return float(np.max(np.abs(analytic - numeric) / np.maximum(np.maximum(np.abs(analytic), np.abs(numeric)), 1e-8)))


# --- initialisation ----------------------------------------------------------------------------

INIT_SHAPE = (1500, 48)


def _judge_init(obs):
    what = f"{CLASS}{INIT_SHAPE}.embedding"
    if "error" in obs:
        return [f"{CLASS}(1500, 48, rng=...) raised {obs['error']}"]
    table, problem = as_array(obs["table"], what)
    if problem or (problem := shape_problem(table, INIT_SHAPE, what)):
        return [problem]
    problems = []
    mean, std = float(table.mean()), float(table.std())
    if abs(mean) > 5e-4 or abs(std - ref.LEARNED_INIT_STD) > 5e-4:
        hint = ""
        if abs(std - ref.LEARNED_INIT_STD ** 2) < 1e-4:
            hint = " (0.02 is the standard deviation, not the variance)"
        elif abs(std - 1.0) < 0.05:
            hint = " (the table is not scaled by 0.02)"
        elif abs(std - ref.LEARNED_INIT_STD / np.sqrt(3)) < 5e-4 or table.min() >= 0:
            hint = " (draw from a normal distribution, N(0, 0.02^2))"
        problems.append(f"{what} has mean {mean:.3g} and standard deviation {std:.4g}; "
                        f"expected about 0 and 0.02{hint}")
    if not np.array_equal(table, np.asarray(obs["same_seed"])):
        problems.append("two layers built with generators of the same seed got different tables: draw the "
                        "table from the `rng` argument")
    elif np.array_equal(table, np.asarray(obs["other_seed"])):
        problems.append("layers built with different seeds got the same table: draw it from the `rng` argument")
    return problems


@check("hidden_learned_init", points=2, bullets=("learned.init",), judge=_judge_init)
def probe_init(ns):
    try:
        tables = [_make(ns, *INIT_SHAPE, seed).embedding for seed in (11, 11, 12)]
        return {"table": to_plain(tables[0]), "same_seed": to_plain(tables[1]), "other_seed": to_plain(tables[2])}
    except BaseException as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}


# --- forward -----------------------------------------------------------------------------------

FORWARD_MAX, FORWARD_WIDTH = 600, 8
FORWARD_CASES = [(1, 1), (4, 16), (16, 128), (2, 512), (5, 600)]


def _forward_table():
    return np.random.default_rng(5).normal(size=(FORWARD_MAX, FORWARD_WIDTH))


def _judge_forward(obs):
    if "error" in obs:
        return [f"building {CLASS}({FORWARD_MAX}, {FORWARD_WIDTH}) failed: {obs['error']}"]
    table = _forward_table()
    problems = []
    for (batch, seq_len), record in zip(FORWARD_CASES, obs["forward"]):
        what = f"forward(X) with X of shape ({batch}, {seq_len}, {FORWARD_WIDTH})"
        value, problem = value_of(record, what)
        if problem is None:
            out, problem = as_array(value, what)
            expected = _inputs(seq_len, (batch, seq_len, FORWARD_WIDTH)) + table[None, :seq_len]
            problem = problem or shape_problem(out, expected.shape, what) or first_mismatch(out, expected, 1e-12, what)
        if problem:
            problems.append(problem)
    if obs["too_long"] != "ValueError":
        got = "returned normally" if obs["too_long"] is None else f"raised {obs['too_long']}"
        problems.append(f"forward with L = {FORWARD_MAX + 1} > max_seq_len = {FORWARD_MAX} must raise "
                        f"ValueError, but it {got}")
    return problems


@check("hidden_learned_forward", points=2,
       bullets=("shape.learned_forward", "shape.batch_sizes", "shape.sequence_lengths", "learned.too_long"),
       judge=_judge_forward)
def probe_forward(ns):
    try:
        layer = _make(ns, FORWARD_MAX, FORWARD_WIDTH, 3)
        _set_table(layer, _forward_table())
    except BaseException as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"forward": [attempt(layer.forward, _inputs(L, (B, L, FORWARD_WIDTH))) for B, L in FORWARD_CASES],
            "too_long": raises(layer.forward, np.zeros((1, FORWARD_MAX + 1, FORWARD_WIDTH)))}


# --- backward: gradient check ------------------------------------------------------------------

GRAD_MAX, GRAD_WIDTH, GRAD_BATCH, GRAD_LEN = 11, 6, 3, 7


def _grad_problem(grad, batch_grads, what="grad_embedding"):
    """Compare an observed grad_embedding with the batch sum; name the usual mistakes."""
    expected = np.zeros((GRAD_MAX, GRAD_WIDTH))
    expected[: batch_grads.shape[1]] = batch_grads.sum(axis=0)
    if grad.shape == (batch_grads.shape[1], GRAD_WIDTH):
        return (f"{what} has shape {grad.shape}; it must cover the whole table, shape "
                f"({GRAD_MAX}, {GRAD_WIDTH}), with zero rows for positions that were not used")
    problem = shape_problem(grad, expected.shape, what) or first_mismatch(grad, expected, 1e-10, what)
    if problem is None:
        return None
    used = batch_grads.shape[1]
    known = {
        "grad_embedding looks averaged over the batch rather than summed: every batch element adds the same "
        "table row, so their gradients add up": batch_grads.mean(axis=0),
        "grad_embedding uses only the first batch element; sum the gradient over the batch": batch_grads[0],
        "grad_embedding uses only the last batch element; sum the gradient over the batch": batch_grads[-1],
    }
    for explanation, rows in known.items():
        if np.allclose(grad[:used], rows, atol=1e-10):
            return f"{problem}. Likely cause: {explanation}."
    return problem


def _judge_backward(obs):
    if "error" in obs:
        return [f"forward/backward failed: {obs['error']}"]
    upstream = _inputs(2, (GRAD_BATCH, GRAD_LEN, GRAD_WIDTH))
    problems = []
    value, problem = value_of(obs["input_grad"], "backward(grad_output)")
    if problem is None:
        input_grad, problem = as_array(value, "the input gradient returned by backward")
        problem = problem or shape_problem(input_grad, upstream.shape, "the input gradient") or \
            first_mismatch(input_grad, upstream, 1e-12, "the input gradient returned by backward "
                           "(it should be grad_output passed through unchanged)")
    if problem:
        problems.append(problem)
    grad, problem = as_array(obs["grad_embedding"], "grad_embedding")
    problem = problem or _grad_problem(grad, upstream)
    if problem:
        problems.append(problem)
    else:
        numeric, problem = as_array(obs["numeric"], "the numerical gradient")
        error = relative_error(grad, numeric) if problem is None and numeric.shape == grad.shape else np.inf
        if not error < GRADIENT_REL_TOLERANCE:
            problems.append(f"central differences (eps = {EPSILON:g}) on your forward pass disagree with your "
                            f"grad_embedding: relative error {error:.3g} >= {GRADIENT_REL_TOLERANCE:g}. Does forward "
                            f"use self.embedding as it is at call time?")
    return problems


def _numerical_gradient(layer, X, upstream):
    """d/dE of sum(upstream * forward(X)) by central differences on every table entry."""
    table = np.array(layer.embedding, dtype=np.float64)
    numeric = np.zeros_like(table)
    for index in np.ndindex(*table.shape):
        values = []
        for sign in (+1, -1):
            shifted = table.copy()
            shifted[index] += sign * EPSILON
            _set_table(layer, shifted)
            values.append(float(np.sum(upstream * np.asarray(layer.forward(X), dtype=np.float64))))
        numeric[index] = (values[0] - values[1]) / (2 * EPSILON)
    _set_table(layer, table)
    return numeric


@check("hidden_learned_backward", points=4, bullets=("learned.gradient_check",), judge=_judge_backward)
def probe_backward(ns):
    try:
        layer = _make(ns, GRAD_MAX, GRAD_WIDTH, 4)
        X = _inputs(1, (GRAD_BATCH, GRAD_LEN, GRAD_WIDTH))
        upstream = _inputs(2, X.shape)
        layer.forward(X)
        input_grad = attempt(layer.backward, upstream)
        grad = to_plain(getattr(layer, "grad_embedding", None))
        numeric = _numerical_gradient(layer, X, upstream)
    except BaseException as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"input_grad": input_grad, "grad_embedding": grad, "numeric": to_plain(numeric)}


# --- backward: batch accumulation and unused positions -----------------------------------------

def _judge_accumulation(obs):
    if "error" in obs:
        return [f"forward/backward failed: {obs['error']}"]
    problems = []
    single, problem = as_array(obs["single"], "grad_embedding")
    batch4, problem2 = as_array(obs["batch4"], "grad_embedding")
    if problem or problem2:
        return [problem or problem2]
    row = _inputs(8, (1, 5, GRAD_WIDTH))
    problem = _grad_problem(single, row) or _grad_problem(batch4, np.repeat(row, 4, axis=0))
    if problem:
        ratio = np.linalg.norm(batch4) / max(np.linalg.norm(single), 1e-300)
        problems.append(f"with 4 identical batch elements grad_embedding should be 4x the single-element one; "
                        f"the ratio of norms is {ratio:.4g}. {problem}")
    shorter, problem = as_array(obs["after_shorter"], "grad_embedding")
    expected = np.zeros((GRAD_MAX, GRAD_WIDTH))
    expected[:3] = _inputs(9, (2, 3, GRAD_WIDTH)).sum(axis=0)
    if problem is None and shorter.shape == expected.shape and np.abs(shorter[3:]).max() > 0:
        problems.append("after a backward pass on L = 3 positions, rows 3 and beyond of grad_embedding are not "
                        "zero: positions that were not used get zero gradient (it looks like gradients from an "
                        "earlier call are kept; start from zeros in every backward)")
    elif problem is None:
        problem = shape_problem(shorter, expected.shape, "grad_embedding") or \
            first_mismatch(shorter, expected, 1e-10, "grad_embedding after a pass with L = 3")
    if problem:
        problems.append(problem)
    return problems


@check("hidden_learned_accumulation", points=2,
       bullets=("learned.batch_accumulation", "learned.unused_positions_zero"), judge=_judge_accumulation)
def probe_accumulation(ns):
    try:
        layer = _make(ns, GRAD_MAX, GRAD_WIDTH, 6)
        row = _inputs(8, (1, 5, GRAD_WIDTH))
        layer.forward(np.zeros((1, 5, GRAD_WIDTH)))
        layer.backward(row)
        single = to_plain(layer.grad_embedding)
        layer.forward(np.zeros((4, 5, GRAD_WIDTH)))
        layer.backward(np.repeat(row, 4, axis=0))
        batch4 = to_plain(layer.grad_embedding)
        layer.forward(np.zeros((2, 3, GRAD_WIDTH)))
        layer.backward(_inputs(9, (2, 3, GRAD_WIDTH)))
        shorter = to_plain(layer.grad_embedding)
    except BaseException as exc:  # noqa: BLE001
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"single": single, "batch4": batch4, "after_shorter": shorter}
