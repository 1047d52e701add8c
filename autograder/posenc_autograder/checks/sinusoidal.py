"""Hidden tests for sinusoidal_positional_encoding and SinusoidalPositionalEncoding."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..diagnosis import diagnose_pe_table
from ..probes import positional_encoding as probes
from ..probes.positional_encoding import (CLASS_BATCHES, CLASS_MAX_LEN, CLASS_WIDTH, FREQUENCY_CASE, ODD_WIDTHS,
                                          PE_CLASS, PE_FN, SHAPE_CASES, STABILITY_CASES, UNIQUE_CASE,
                                          VALUE_CASES, class_inputs)
from .base import as_array, compare_observed, first_mismatch, register, shape_problem, value_of


def _table_problems(obs: dict, seq_len: int, d_model: int, atol: float = 1e-9) -> list[str]:
    """Problems with one observed table, with a diagnosis of the known mistakes."""
    what = f"{PE_FN}({seq_len}, {d_model})"
    value, problem = value_of(obs, what)
    if problem:
        return [problem]
    table, problem = as_array(value, what)
    if problem:
        return [problem]
    expected = ref.sinusoidal_positional_encoding(seq_len, d_model)
    problem = shape_problem(table, expected.shape, what) or first_mismatch(table, expected, atol, what)
    if problem is None:
        return []
    diagnosis = diagnose_pe_table(table, seq_len, d_model)
    return [problem + (f". Likely cause: {diagnosis}." if diagnosis else "")]


# --- shapes and the odd-width error -----------------------------------------------------------

def _judge_shapes(obs):
    problems = []
    for (seq_len, d_model), record in zip(SHAPE_CASES, obs["tables"]):
        what = f"{PE_FN}({seq_len}, {d_model})"
        value, problem = value_of(record, what)
        if problem is None:
            table, problem = as_array(value, what)
            problem = problem or shape_problem(table, (seq_len, d_model), what)
        if problem:
            problems.append(problem)
    for d_model, raised in zip(ODD_WIDTHS, obs["odd"]):
        if raised != "ValueError":
            got = "returned normally" if raised is None else f"raised {raised}"
            problems.append(f"{PE_FN}(10, {d_model}) must raise ValueError for an odd d_model, but it {got}")
    return problems


# --- known values ------------------------------------------------------------------------------

def _judge_values(obs):
    problems = []
    for (seq_len, d_model), record in zip(VALUE_CASES, obs["tables"]):
        problems += _table_problems(record, seq_len, d_model)
    return problems[:1] if problems else []


# --- uniqueness, bounds, determinism, norms ----------------------------------------------------

def _judge_unique(obs):
    seq_len, d_model = UNIQUE_CASE
    what = f"{PE_FN}({seq_len}, {d_model})"
    first, problem = value_of(obs["first"], what)
    if problem:
        return [problem]
    second, problem = value_of(obs["second"], what)
    if problem:
        return [problem]
    table, problem = as_array(first, what)
    if problem or (problem := shape_problem(table, (seq_len, d_model), what)):
        return [problem]
    problems = []
    squared = (table ** 2).sum(axis=1)
    distances = squared[:, None] + squared[None, :] - 2 * table @ table.T
    np.fill_diagonal(distances, np.inf)
    if distances.min() <= 1e-12:
        i, j = np.unravel_index(int(np.argmin(distances)), distances.shape)
        problems.append(f"rows {i} and {j} of {what} are identical: every position needs its own vector")
    if np.abs(table).max() > 1.0:
        problems.append(f"{what} has an entry of magnitude {np.abs(table).max():.6g}; sin and cos stay within [-1, 1]")
    if not np.array_equal(table, np.asarray(second)):
        problems.append(f"two calls of {what} returned different tables: the function must be deterministic")
    norms = np.linalg.norm(table, axis=1)
    target = np.sqrt(d_model / 2)
    if np.abs(norms - target).max() > 1e-9:
        p = int(np.argmax(np.abs(norms - target)))
        problems.append(f"row {p} of {what} has norm {norms[p]:.10g}; every row should have norm "
                        f"sqrt(d_model/2) = {target:.10g} because each (sin, cos) pair contributes 1")
    return problems


# --- numerical stability -----------------------------------------------------------------------

def _judge_stability(obs):
    problems = []
    for (seq_len, d_model), record in zip(STABILITY_CASES, obs["tables"]):
        problems += _table_problems(record, seq_len, d_model, atol=1e-8)
    return problems


# --- frequency structure -----------------------------------------------------------------------

def _measured_wavelength(sin_column: np.ndarray, cos_column: np.ndarray) -> float:
    """Wavelength read off a (sin, cos) column pair through the unwrapped phase's slope."""
    phase = np.unwrap(np.arctan2(sin_column, cos_column))
    slope = np.polyfit(np.arange(len(phase)), phase, 1)[0]
    return float(2 * np.pi / slope) if slope > 0 else float("inf")


def _judge_frequency(obs):
    seq_len, d_model = FREQUENCY_CASE
    what = f"{PE_FN}({seq_len}, {d_model})"
    value, problem = value_of(obs["table"], what)
    if problem:
        return [problem]
    table, problem = as_array(value, what)
    if problem or (problem := shape_problem(table, FREQUENCY_CASE, what)):
        return [problem]
    problems = []
    fast, slow = table[:, 0].var(), table[:, d_model - 2].var()
    if not fast > 20 * slow:
        problems.append(f"column 0 should oscillate fast and column d-2 barely move, but their variances over "
                        f"positions are {fast:.4g} and {slow:.4g}")
    expected = 2 * np.pi / ref.angular_frequencies(d_model)
    for pair, label in ((0, "first"), (d_model // 2 - 1, "last")):
        measured = _measured_wavelength(table[:, 2 * pair], table[:, 2 * pair + 1])
        if not abs(measured - expected[pair]) <= 1e-3 * expected[pair]:
            problems.append(f"the {label} (sin, cos) pair has wavelength {measured:.6g} positions; expected "
                            f"2*pi*10000^(2i/d) = {expected[pair]:.6g}")
    return problems


# --- the SinusoidalPositionalEncoding class ----------------------------------------------------

def _judge_class(obs):
    if "error" in obs:
        return [f"building or using {PE_CLASS}({CLASS_MAX_LEN}, {CLASS_WIDTH}) failed: {obs['error']}"]
    table = ref.sinusoidal_positional_encoding(CLASS_MAX_LEN, CLASS_WIDTH)
    problems = []
    for (batch, seq_len), record in zip(CLASS_BATCHES, obs["forward"]):
        what = f"forward(X) with X of shape ({batch}, {seq_len}, {CLASS_WIDTH})"
        expected = class_inputs(batch, seq_len) + table[None, :seq_len]
        out, problem = compare_observed(record, expected, what, 1e-9)
        if problem and out is not None and out.shape == expected.shape and \
                np.allclose(out, table[None, :seq_len].repeat(batch, 0)):
            problem += ": it returns the encoding alone; forward must return X + PE[:L]"
        if problem:
            problems.append(problem)
    value, problem = value_of(obs["encoding"], "get_encoding(45)")
    if problem is None:
        encoding, problem = as_array(value, "get_encoding(45)")
        problem = problem or shape_problem(encoding, (45, CLASS_WIDTH), "get_encoding(45)") or \
            first_mismatch(encoding, table[:45], 1e-9, "get_encoding(45)")
    if problem:
        problems.append(problem)
    if obs["too_long"] != "ValueError":
        got = "returned normally" if obs["too_long"] is None else f"raised {obs['too_long']}"
        problems.append(f"forward with L = {CLASS_MAX_LEN + 1} > max_seq_len = {CLASS_MAX_LEN} must raise "
                        f"ValueError, but it {got}")
    if obs["odd"] != "ValueError":
        problems.append(f"{PE_CLASS}(16, 7) must raise ValueError for an odd d_model")
    return problems


register("hidden_pe_shapes", points=2, probe=probes.probe_pe_shapes, judge=_judge_shapes,
         bullets=("shape.sinusoidal", "shape.odd_d_model"))
register("hidden_pe_values", points=4, probe=probes.probe_pe_values, judge=_judge_values,
         bullets=("values.position_zero", "values.small_example"))
register("hidden_pe_unique_bounded", points=3, probe=probes.probe_pe_unique, judge=_judge_unique,
         bullets=("unique.rows", "unique.bounded", "unique.deterministic", "unique.norms"))
register("hidden_pe_stability", points=2, probe=probes.probe_pe_stability, judge=_judge_stability,
         bullets=("stability.long_sequence", "stability.wide_model", "stability.log_space"))
register("hidden_pe_frequency", points=2, probe=probes.probe_pe_frequency, judge=_judge_frequency,
         bullets=("frequency.low_fast", "frequency.high_slow", "frequency.first_wavelength",
                  "frequency.last_wavelength"))
register("hidden_pe_class", points=3, probe=probes.probe_pe_class, judge=_judge_class,
         bullets=("shape.batched_forward", "shape.batch_sizes", "shape.sequence_lengths"))
