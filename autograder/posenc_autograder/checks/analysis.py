"""Hidden tests for relative_position_matrix, dot_product_distance and encoding_statistics."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..diagnosis import diagnose_rotation
from ..probes import positional_encoding as probes
from ..probes.positional_encoding import DOT_FN, NOISY_OFFSET, ROTATION_FN, SECOND_WINDOW_OFFSET, STATS_FN
from ..probes.positional_encoding import ROTATION_OFFSETS as OFFSETS
from .base import as_array, first_mismatch, register, shape_problem, value_of

ROTATION_WIDTH = 12
WINDOW = (23, 90)                 # first position, length: deliberately not starting at 0
SECOND_WINDOW = (140, 60)


def _window(first, length, d_model=ROTATION_WIDTH):
    return ref.sinusoidal_positional_encoding(length, d_model, first_position=first)


def _noisy_window():
    return _window(*WINDOW) + 1e-3 * np.random.default_rng(21).normal(size=(WINDOW[1], ROTATION_WIDTH))


def _rotation_record(record, what):
    """(M, error) from an attempt record, or a problem sentence."""
    value, problem = value_of(record, what)
    if problem:
        return None, None, problem
    if not isinstance(value, list) or len(value) != 2:
        return None, None, f"{what} should return a pair (M, error), got {type(value).__name__}"
    M, problem = as_array(value[0], f"M from {what}")
    if problem:
        return None, None, problem
    try:
        error = float(value[1])
    except (TypeError, ValueError):
        return None, None, f"the error returned by {what} should be a number, got {type(value[1]).__name__}"
    return M, error, None


def _judge_rotation(obs):
    problems = []
    for offset, record in zip(OFFSETS, obs["offsets"]):
        what = f"{ROTATION_FN}(pe, {offset}) on positions {WINDOW[0]}..{sum(WINDOW) - 1}"
        M, error, problem = _rotation_record(record, what)
        if problem is None:
            exact = ref.rotation_matrix_for_offset(ROTATION_WIDTH, offset)
            problem = shape_problem(M, exact.shape, f"M from {what}") or \
                first_mismatch(M, exact, 1e-9, f"M from {what}")
            if problem:
                diagnosis = diagnose_rotation(M, ROTATION_WIDTH, offset)
                problem += f". Likely cause: {diagnosis}." if diagnosis else ""
            elif not (0.0 <= error < 1e-10):
                problem = f"{what} reports a reconstruction error of {error:.3g}; it should be below 1e-10"
        if problem:
            problems.append(problem)
            break
    what = f"{ROTATION_FN} on positions {SECOND_WINDOW[0]}..{sum(SECOND_WINDOW) - 1}"
    M, _, problem = _rotation_record(obs["second_window"], what)
    if problem is None:
        problem = first_mismatch(M, ref.rotation_matrix_for_offset(ROTATION_WIDTH, SECOND_WINDOW_OFFSET), 1e-9,
                                 f"M_{SECOND_WINDOW_OFFSET} from {what} (M_k must not depend on which positions are used)")
    if problem:
        problems.append(problem)
    what = f"{ROTATION_FN}(noisy_pe, {NOISY_OFFSET})"
    M, error, problem = _rotation_record(obs["noisy"], what)
    if problem is None and M.shape == (ROTATION_WIDTH, ROTATION_WIDTH):
        actual = ref.reconstruction_error(M, _noisy_window(), NOISY_OFFSET)
        if not abs(error - actual) <= 1e-9 + 1e-6 * actual:
            problem = (f"on a slightly noisy table, {what} reports error {error:.6g}, but the largest "
                       f"||M @ pe[p] - pe[p + {NOISY_OFFSET}]||_2 over valid positions p for the M it returned is "
                       f"{actual:.6g}: the error must be measured, not assumed")
    if problem:
        problems.append(problem)
    return problems


# --- dot products ------------------------------------------------------------------------------

DOT_RANDOM_SHAPE = (9, 5)
DOT_PE_CASE = (70, 18)


def _dot_random_input():
    return np.random.default_rng(31).normal(size=DOT_RANDOM_SHAPE)


def _judge_dot(obs):
    problems = []
    pe = _dot_random_input()
    what = f"{DOT_FN} on a {DOT_RANDOM_SHAPE} array"
    value, problem = value_of(obs["random"], what)
    if problem is None:
        D, problem = as_array(value, what)
        if problem is None and D.shape == (pe.shape[1],) * 2:
            problem = f"{what} has shape {D.shape}: that is PE^T PE (dimension by dimension); D = PE PE^T is L x L"
        problem = problem or shape_problem(D, (len(pe),) * 2, what) or first_mismatch(D, pe @ pe.T, 1e-10, what)
        if problem and D is not None and D.shape == (len(pe),) * 2:
            norms = np.linalg.norm(pe, axis=1)
            if np.allclose(D, pe @ pe.T / np.outer(norms, norms), atol=1e-9):
                problem += ". It looks normalised (cosine similarity); return the raw dot products."
    if problem:
        problems.append(problem)
    seq_len, d_model = DOT_PE_CASE
    what = f"{DOT_FN} on a sinusoidal table ({seq_len}, {d_model})"
    value, problem = value_of(obs["sinusoidal"], what)
    if problem is None:
        D, problem = as_array(value, what)
        problem = problem or shape_problem(D, (seq_len, seq_len), what)
    if problem is None:
        if not np.allclose(D, D.T, atol=1e-12):
            problem = f"{what} is not symmetric"
        elif not np.allclose(np.diag(D), d_model / 2, atol=1e-9):
            problem = f"the diagonal of {what} should be d_model/2 = {d_model / 2:g}"
        else:
            drift = max(np.ptp(np.diag(D, k)) for k in range(1, seq_len - 10))
            if drift > 1e-9:
                problem = f"{what} should be constant along each diagonal (Toeplitz); it varies by {drift:.3g}"
    if problem:
        problems.append(problem)
    return problems


# --- statistics --------------------------------------------------------------------------------

STATS_KEYS = ("position_norms", "mean", "variance", "min", "max", "bounded")


def _stats_inputs():
    unbounded = np.random.default_rng(41).normal(scale=0.9, size=(13, 6))
    return {"a sinusoidal table (40, 16)": ref.sinusoidal_positional_encoding(40, 16),
            "an array with entries beyond [-1, 1]": unbounded,
            "an array bounded by exactly 1": np.array([[1.0, -1.0], [0.5, 0.0]])}


def _judge_stats(obs):
    problems = []
    for (label, pe), record in zip(_stats_inputs().items(), obs["results"]):
        what = f"{STATS_FN} on {label}"
        value, problem = value_of(record, what)
        if problem is None and not isinstance(value, dict):
            problem = f"{what} should return a dict, got {type(value).__name__}"
        if problem is None and (missing := [k for k in STATS_KEYS if k not in value]):
            problem = f"{what} is missing the keys {missing}"
        if problem is None:
            problem = _stats_problem(value, ref.encoding_statistics(pe), pe, what)
        if problem:
            problems.append(problem)
    return problems


def _stats_problem(actual, expected, pe, what):
    norms, problem = as_array(actual["position_norms"], f"position_norms from {what}")
    problem = problem or shape_problem(norms, expected["position_norms"].shape, f"position_norms from {what}")
    if problem is None and norms.shape == expected["position_norms"].shape:
        problem = first_mismatch(norms, expected["position_norms"], 1e-10, f"position_norms from {what}")
        if problem and np.allclose(norms, expected["position_norms"] ** 2):
            problem += " (these look like squared norms)"
    if problem:
        return problem
    for key in ("mean", "variance", "min", "max"):
        try:
            got = float(actual[key])
        except (TypeError, ValueError):
            return f"{key} from {what} should be a float"
        if not abs(got - expected[key]) <= 1e-10:
            hint = " (use the population variance over all entries, ddof=0)" \
                if key == "variance" and abs(got - pe.var(ddof=1)) < 1e-10 else ""
            return f"{key} from {what} is {got:.10g}, expected {expected[key]:.10g}{hint}"
    if bool(actual["bounded"]) is not expected["bounded"] or not isinstance(actual["bounded"], bool):
        return f"bounded from {what} should be the bool {expected['bounded']} (every |PE| <= 1)"
    return None


def _rotation_inputs():
    return {"window": _window(*WINDOW), "second_window": _window(*SECOND_WINDOW), "noisy": _noisy_window()}


def _dot_inputs():
    return {"random": _dot_random_input(), "sinusoidal": ref.sinusoidal_positional_encoding(*DOT_PE_CASE)}


def _stats_arrays():
    return {"arrays": list(_stats_inputs().values())}


register("hidden_relative_position", points=4, probe=probes.probe_rotation, judge=_judge_rotation,
         inputs=_rotation_inputs,
         bullets=("relative.linear_map", "relative.multiple_offsets", "relative.offset_only"))
register("hidden_dot_product", points=2, probe=probes.probe_dot, judge=_judge_dot, inputs=_dot_inputs,
         bullets=("dot.symmetry", "dot.self", "dot.distance_dependent"))
register("hidden_encoding_statistics", points=2, probe=probes.probe_stats, judge=_judge_stats,
         inputs=_stats_arrays, bullets=("unique.bounded", "unique.norms"))
