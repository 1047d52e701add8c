"""Hidden tests for LearnedPositionalEncoding: initialisation, forward, and the backward pass."""
from __future__ import annotations

import re

import numpy as np

from posenc_autograder.checks.comparison import (
    ProblemText,
    Rejected,
    as_array,
    compare,
    expect_error,
    fields_of,
    mismatch,
    observed_array,
    problems_of,
    raised_problem,
    require_shape,
    value_of,
    with_cause,
)
from posenc_autograder.checks.diagnosis import either, known_mistakes
from posenc_autograder.checks.hidden import HiddenTest, each_case, normal
from posenc_autograder.checks.positional_encoding import reference as ref
from posenc_autograder.checks.reproduction import reading, reproduced, reproducing, reproduction, setting, step
from posenc_autograder.probes.positional_encoding import (
    probe_learned_accumulation,
    probe_learned_backward,
    probe_learned_forward,
    probe_learned_init,
)
from posenc_autograder.results import Step

ASSIGNMENT = "positional_encoding"
CLASS = "LearnedPositionalEncoding"


def _layer(max_seq_len, d_model, **more):
    return {"class": CLASS, "max_seq_len": max_seq_len, "d_model": d_model, **more}


def _built(inputs) -> str:
    return f"{CLASS}({inputs['max_seq_len']}, {inputs['d_model']})"


def _layer_line(inputs, seed: int | None) -> Step:
    """`layer = LearnedPositionalEncoding(L, d, rng=np.random.default_rng(seed))`, as the probe builds it."""
    rng = {} if seed is None else {"rng": {"default_rng": int(seed)}}
    return step(CLASS, inputs["max_seq_len"], inputs["d_model"], assign="layer", **rng)


def _all_of(problems: list, found) -> list:
    return [reproduced(p, found) for p in problems]


# --- initialisation ----------------------------------------------------------------------------

def _judge_init(inputs, obs):
    what = f"{_built(inputs)}.embedding"
    seeded = reproduction(_layer_line(inputs, inputs["seeds"][0]), reading("layer.embedding"))
    if "error" in obs:
        return [reproduced(raised_problem(f"{_built(inputs)} with rng=... raised {obs['error']}", obs["error"]),
                           seeded)]
    try:
        table, same_seed, other_seed = (require_shape(as_array(t, what), (inputs["max_seq_len"], inputs["d_model"]),
                                                      what) for t in obs["tables"])
    except Rejected as problem:
        return [reproduced(problem.args[0], seeded)]
    problems = []
    mean, std = float(table.mean()), float(table.std())
    if not (abs(mean) <= 5e-4 and abs(std - ref.LEARNED_INIT_STD) <= 5e-4):
        hint = ""
        if abs(std - ref.LEARNED_INIT_STD ** 2) < 1e-4:
            hint = " (0.02 is the standard deviation, not the variance)"
        elif abs(std - 1.0) < 0.05:
            hint = " (the table is not scaled by 0.02)"
        elif abs(std - ref.LEARNED_INIT_STD / np.sqrt(3)) < 5e-4 or table.min() >= 0:
            hint = " (draw from a normal distribution, N(0, 0.02^2))"
        problems.append(f"{what} has mean {mean:.3g} and standard deviation {std:.4g}; "
                        f"expected about 0 and 0.02{hint}")
    if not np.array_equal(table, same_seed):
        problems.append("two layers built with generators of the same seed got different tables: draw the "
                        "table from the `rng` argument")
    elif np.array_equal(table, other_seed):
        problems.append("layers built with different seeds got the same table: draw it from the `rng` argument")
    problems = _all_of(problems, seeded)
    problems += problems_of(reproducing(lambda: observed_array(obs["without_rng"], f"{_built(inputs)}.embedding "
                                                               f"without rng", table.shape),
                                        reproduction(_layer_line(inputs, None), reading("layer.embedding"))))
    return [p for p in problems if p is not None]


# --- forward -----------------------------------------------------------------------------------

def _forward_inputs():
    max_seq_len, d_model = 600, 8
    return _layer(max_seq_len, d_model, seed=3, table=normal(5, (max_seq_len, d_model)),
                  inputs=[normal(L, (B, L, d_model)) for B, L in [(1, 1), (4, 16), (16, 128), (2, 512), (5, 600)]],
                  too_long=np.zeros((1, max_seq_len + 1, d_model)))


ROWS_FROM_ONE = ("position p reads row p + 1 of the table (an off-by-one: the rows are read from 1); position 0 "
                 "is row 0, so forward adds embedding[:L]")


def _forward_cause(actual, X, table) -> str | None:
    """The usual wrong forward named (known_mistakes: right or silent): the table's rows read from 1. A sequence as
    long as the table has no row L to read, so it raises instead."""
    L = X.shape[1]
    wrong = {ROWS_FROM_ONE: X + table[None, 1:L + 1]} if L < len(table) else {}
    return either(known_mistakes(actual, X + table[None, :L], wrong))


def _judge_forward(inputs, obs):
    table, max_seq_len = inputs["table"], inputs["max_seq_len"]

    def of_layer(*lines):
        return reproduction(_layer_line(inputs, inputs["seed"]), setting("layer.embedding", table), *lines)
    if "error" in obs:
        return [reproduced(raised_problem(f"building {_built(inputs)} failed: {obs['error']}", obs["error"]),
                           reproduction(_layer_line(inputs, inputs["seed"])))]
    return each_case(lambda X, r: compare(r, X + table[None, :X.shape[1]], f"forward(X) with X of shape {X.shape}",
                                          1e-12, lambda actual: _forward_cause(actual, X, table)),
                     inputs["inputs"], obs["forward"],
                     reproduce=lambda X, r: of_layer(step("layer.forward", X))) + problems_of(
        reproducing(lambda: expect_error(obs["too_long"], "ValueError", f"forward with L = {max_seq_len + 1}",
                                         f"when L > max_seq_len = {max_seq_len}"),
                    of_layer(step("layer.forward", inputs["too_long"]))))


# --- backward: gradient check ------------------------------------------------------------------

SUMMED_OVER_POSITIONS = ("the gradient was summed over the positions (axis 1) instead of over the batch (axis 0): "
                         "the sum has one row per batch element, and grad_embedding needs one per position, each "
                         "the sum over the batch of that position's rows of grad_output")


def _failed_pass(error: str, upstreams, lead: str = "forward/backward failed:") -> ProblemText:
    """A forward/backward pass that raised; a ValueError about an array of shape (B, d_model) for a batch of B
    sequences of L != B positions is the gradient summed over the positions instead of the batch."""
    problem = raised_problem(f"{lead} {error}", error)
    if error.startswith("ValueError") and any(
            upstream.shape[0] != upstream.shape[1]
            and re.search(rf"\(\s*{upstream.shape[0]}\s*,\s*{upstream.shape[2]}\s*\)", error)
            for upstream in upstreams):
        return with_cause(problem, SUMMED_OVER_POSITIONS)
    return problem


def _grad_problem(grad, upstream, table_shape, what="grad_embedding"):
    """Compare an observed grad_embedding with the batch sum of upstream; name the usual mistakes."""
    used = upstream.shape[1]
    expected = np.zeros(table_shape)
    expected[:used] = upstream.sum(axis=0)
    if grad.shape == (used, table_shape[1]) and used != table_shape[0]:
        return (f"{what} has shape {grad.shape}; it must cover the whole table, shape "
                f"{tuple(table_shape)}, with zero rows for positions that were not used")
    try:
        problem = mismatch(require_shape(grad, expected.shape, what), expected, 1e-10, what)
    except Rejected as shape_problem:
        return str(shape_problem)
    if problem is None:
        return None
    known = {
        "grad_embedding looks averaged over the batch rather than summed: every batch element adds the same "
        "table row, so their gradients add up": upstream.mean(axis=0),
        "grad_embedding uses only the first batch element; sum the gradient over the batch": upstream[0],
        "grad_embedding uses only the last batch element; sum the gradient over the batch": upstream[-1],
    }
    if upstream.shape[0] in (1, used):          # a sum over the positions that still fits the rows it is stored in
        known[SUMMED_OVER_POSITIONS] = np.broadcast_to(upstream.sum(axis=1), (used, table_shape[1]))
    fitting = [explanation for explanation, rows in known.items() if mismatch(grad[:used], rows, 1e-10, "") is None]
    explanation = either(fitting)                                  # identical rows: several fit alike
    return with_cause(problem, explanation) if explanation else problem


def _backward_inputs():
    X = normal(1, (3, 7, 6))
    return _layer(11, 6, seed=4, X=X, upstream=normal(2, X.shape))


def _judge_backward(inputs, obs):
    """grad_embedding against the exact gradient of sum(upstream * forward(X)) with respect to the table (the
    upstream rows summed over the batch), computed here; the input gradient is upstream itself."""
    upstream, table_shape = inputs["upstream"], (inputs["max_seq_len"], inputs["d_model"])
    passes = (_layer_line(inputs, inputs["seed"]), step("layer.forward", inputs["X"]))
    returned = reproduction(*passes, step("layer.backward", upstream))
    stored = reproduction(*passes, step("layer.backward", upstream), reading("layer.grad_embedding"))
    if "error" in obs:
        return [reproduced(_failed_pass(obs["error"], [upstream]), stored)]
    if "error" in obs["input_grad"]:             # backward raised: grad_embedding was never computed
        return [reproduced(_failed_pass(obs["input_grad"]["error"], [upstream], "backward(grad_output) raised"),
                           returned)]
    problems = problems_of(reproducing(lambda: compare(obs["input_grad"], upstream, "the input gradient returned by "
                                                       "backward (it should be grad_output passed through unchanged)",
                                                       1e-12), returned))
    try:
        grad = as_array(value_of(obs["grad_embedding"], "reading grad_embedding"), "grad_embedding")
    except Rejected as problem:
        return problems + [reproduced(problem.args[0], stored)]
    problem = _grad_problem(grad, upstream, table_shape)
    return problems + ([reproduced(problem, stored)] if problem else [])


# --- backward: batch accumulation and unused positions -----------------------------------------

def _accumulation_inputs():
    d_model = 6
    row, shorter = normal(8, (1, 5, d_model)), normal(9, (2, 3, d_model))
    passes = [(np.zeros(row.shape), row), (np.zeros((4, 5, d_model)), np.repeat(row, 4, axis=0)),
              (np.zeros(shorter.shape), shorter)]
    return _layer(11, d_model, seed=6, passes=passes)


def _judge_accumulation(inputs, obs):
    def after(passes: int):
        """The layer built, the first `passes` (forward, backward) passes, then grad_embedding read."""
        lines = [_layer_line(inputs, inputs["seed"])]
        for X, upstream in inputs["passes"][:passes]:
            lines += [step("layer.forward", X), step("layer.backward", upstream)]
        return reproduction(*lines, reading("layer.grad_embedding"))
    if "error" in obs:
        return [reproduced(_failed_pass(obs["error"], [upstream for _, upstream in inputs["passes"]]),
                           after(len(inputs["passes"])))]
    table_shape = (inputs["max_seq_len"], inputs["d_model"])
    try:
        single, batch4, shorter = (as_array(g, "grad_embedding") for g in obs["grads"])
    except Rejected as problem:
        return [reproduced(problem.args[0], after(len(inputs["passes"])))]
    (_, row), (_, rows), (_, short_upstream) = inputs["passes"]
    problems = []
    problem = _grad_problem(single, row, table_shape)
    failed_pass = 1 if problem else 2
    problem = problem or _grad_problem(batch4, rows, table_shape)
    if problem:
        ratio = np.linalg.norm(batch4) / max(np.linalg.norm(single), 1e-300)
        problems.append(reproduced(ProblemText(f"with {len(rows)} identical batch elements grad_embedding should be "
                                               f"{len(rows)}x the single-element one; the ratio of norms is "
                                               f"{ratio:.4g}. {str.__str__(problem)}", **fields_of(problem)),
                                   after(failed_pass)))
    used = short_upstream.shape[1]
    if shorter.shape == table_shape and not np.all(shorter[used:] == 0):
        problem = (f"after a backward pass on L = {used} positions, rows {used} and beyond of grad_embedding are not "
                   f"zero: positions that were not used get zero gradient (it looks like gradients from an earlier "
                   f"call are kept; start from zeros in every backward)")
    else:
        problem = _grad_problem(shorter, short_upstream, table_shape, f"grad_embedding after a pass with L = {used}")
    return problems + ([reproduced(problem, after(3))] if problem else [])


TESTS = [
    HiddenTest(id="hidden_learned_init", assignment=ASSIGNMENT, points=2, answer_cell=CLASS,
               subjects=(f"{CLASS}.embedding",),
               title="mean and standard deviation of the initial table, use of rng", bullets=("learned.init",),
               inputs=lambda: _layer(1500, 48, seeds=[11, 11, 12]), probe=probe_learned_init, judge=_judge_init),
    HiddenTest(id="hidden_learned_forward", assignment=ASSIGNMENT, points=2, answer_cell=CLASS,
               subjects=(f"{CLASS}.forward",),
               title="forward shapes and values for several batch sizes and lengths, ValueError for L > max_seq_len",
               bullets=("shape.learned_forward", "shape.batch_sizes", "shape.sequence_lengths", "learned.too_long"),
               inputs=_forward_inputs, probe=probe_learned_forward, judge=_judge_forward),
    HiddenTest(id="hidden_learned_backward", assignment=ASSIGNMENT, points=4, answer_cell=CLASS,
               subjects=(f"{CLASS}.backward", f"{CLASS}.grad_embedding"),
               title="grad_embedding against the exact gradient (the batch sum of the upstream rows) and the "
                     "input gradient",
               bullets=("learned.gradient_check",),
               inputs=_backward_inputs, probe=probe_learned_backward, judge=_judge_backward),
    HiddenTest(id="hidden_learned_accumulation", assignment=ASSIGNMENT, points=2, answer_cell=CLASS,
               subjects=(f"{CLASS}.grad_embedding",),
               title="summing over the batch (4 identical elements give 4x) and zero rows for unused positions",
               bullets=("learned.batch_accumulation", "learned.unused_positions_zero"),
               inputs=_accumulation_inputs, probe=probe_learned_accumulation, judge=_judge_accumulation),
]
