"""Hidden tests for LearnedPositionalEncoding: initialisation, forward, and the backward pass."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..probes import positional_encoding as probes
from ..probes.helpers import normal
from ..probes.positional_encoding import (EPSILON, FORWARD_CASES, FORWARD_MAX, FORWARD_WIDTH, GRAD_BATCH, GRAD_LEN,
                                          GRAD_MAX, GRAD_WIDTH, INIT_SHAPE, forward_table)
from ..probes.positional_encoding import LEARNED_CLASS as CLASS
from .base import as_array, compare_observed, first_mismatch, register, shape_problem, value_of

GRADIENT_REL_TOLERANCE = 1e-5


def relative_error(analytic: np.ndarray, numeric: np.ndarray) -> float:
    """CS231n-style max |a - n| / max(|a|, |n|), with a floor so exact zeros compare as equal."""
    return float(np.max(np.abs(analytic - numeric) / np.maximum(np.maximum(np.abs(analytic), np.abs(numeric)), 1e-8)))


# --- initialisation ----------------------------------------------------------------------------

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


# --- forward -----------------------------------------------------------------------------------

def _judge_forward(obs):
    if "error" in obs:
        return [f"building {CLASS}({FORWARD_MAX}, {FORWARD_WIDTH}) failed: {obs['error']}"]
    table = forward_table()
    problems = []
    for (batch, seq_len), record in zip(FORWARD_CASES, obs["forward"]):
        what = f"forward(X) with X of shape ({batch}, {seq_len}, {FORWARD_WIDTH})"
        expected = normal(seq_len, (batch, seq_len, FORWARD_WIDTH)) + table[None, :seq_len]
        _, problem = compare_observed(record, expected, what, 1e-12)
        if problem:
            problems.append(problem)
    if obs["too_long"] != "ValueError":
        got = "returned normally" if obs["too_long"] is None else f"raised {obs['too_long']}"
        problems.append(f"forward with L = {FORWARD_MAX + 1} > max_seq_len = {FORWARD_MAX} must raise "
                        f"ValueError, but it {got}")
    return problems


# --- backward: gradient check ------------------------------------------------------------------

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
    upstream = normal(2, (GRAD_BATCH, GRAD_LEN, GRAD_WIDTH))
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


# --- backward: batch accumulation and unused positions -----------------------------------------

def _judge_accumulation(obs):
    if "error" in obs:
        return [f"forward/backward failed: {obs['error']}"]
    problems = []
    single, problem = as_array(obs["single"], "grad_embedding")
    batch4, problem2 = as_array(obs["batch4"], "grad_embedding")
    if problem or problem2:
        return [problem or problem2]
    row = normal(8, (1, 5, GRAD_WIDTH))
    problem = _grad_problem(single, row) or _grad_problem(batch4, np.repeat(row, 4, axis=0))
    if problem:
        ratio = np.linalg.norm(batch4) / max(np.linalg.norm(single), 1e-300)
        problems.append(f"with 4 identical batch elements grad_embedding should be 4x the single-element one; "
                        f"the ratio of norms is {ratio:.4g}. {problem}")
    shorter, problem = as_array(obs["after_shorter"], "grad_embedding")
    expected = np.zeros((GRAD_MAX, GRAD_WIDTH))
    expected[:3] = normal(9, (2, 3, GRAD_WIDTH)).sum(axis=0)
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


register("hidden_learned_init", points=2, probe=probes.probe_learned_init, judge=_judge_init,
         bullets=("learned.init",))
register("hidden_learned_forward", points=2, probe=probes.probe_learned_forward, judge=_judge_forward,
         bullets=("shape.learned_forward", "shape.batch_sizes", "shape.sequence_lengths", "learned.too_long"))
register("hidden_learned_backward", points=4, probe=probes.probe_learned_backward, judge=_judge_backward,
         bullets=("learned.gradient_check",))
register("hidden_learned_accumulation", points=2, probe=probes.probe_learned_accumulation,
         judge=_judge_accumulation, bullets=("learned.batch_accumulation", "learned.unused_positions_zero"))
