"""Hidden tests for relative_position_matrix, dot_product_distance and encoding_statistics."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.comparison import (
    Rejected,
    as_array,
    compare,
    mismatch,
    number,
    observed_array,
    problems_of,
    require_shape,
    value_of,
)
from posenc_autograder.checks.hidden import HiddenTest, References, call, calling, each_call, each_case, normal
from posenc_autograder.checks.positional_encoding import reference
from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_rotation
from posenc_autograder.checks.reproduction import called, reproducing
from posenc_autograder.probes.helpers import call_each

ref = References(reference)        # sizes and settings asked for again: computed once, read-only

ASSIGNMENT = "positional_encoding"
ROTATION_FN, DOT_FN, STATS_FN = "relative_position_matrix", "dot_product_distance", "encoding_statistics"


# --- M_k ---------------------------------------------------------------------------------------

def _window(first, length, d_model=12):
    return ref.sinusoidal_positional_encoding(length, d_model, first_position=first)


def _rotation_inputs():
    window = _window(23, 90)                      # deliberately not starting at position 0
    noisy = window + 1e-3 * normal(21, window.shape)
    return calling(ROTATION_FN, offsets=[call(window, k) for k in (1, 5, 10, 50, 3, 17, 0)],
                   second_window=[call(_window(140, 60), 7)], noisy=[call(noisy, 4)])


def _rotation(record, what):
    """(M, error) returned by relative_position_matrix; Rejected when it is not such a pair."""
    value = value_of(record, what)
    if not isinstance(value, list) or len(value) != 2:
        raise Rejected(f"{what} should return a pair (M, error), got {type(value).__name__}")
    return as_array(value[0], f"M from {what}"), number(value[1], f"the error returned by {what}")


def _rotation_label(c):
    pe, offset = c["args"]
    return f"{ROTATION_FN}(pe, {offset}) on a table of {len(pe)} positions"


def _exact_rotation(c):
    pe, offset = c["args"]
    return ref.rotation_matrix_for_offset(pe.shape[1], offset)


def _offset_problem(c, record):
    what = _rotation_label(c)
    M, error = _rotation(record, what)
    pe, offset = c["args"]
    problem = compare({"value": M}, _exact_rotation(c), f"M from {what}", 1e-9,
                      diagnose=lambda M: diagnose_rotation(M, pe.shape[1], offset))
    if problem is None and not 0.0 <= error < 1e-10:
        problem = f"{what} reports a reconstruction error of {error:.3g}; it should be below 1e-10"
    return problem


def _judge_rotation(inputs, obs):
    groups = inputs["groups"]
    [second], [noisy] = groups["second_window"], groups["noisy"]

    def second_window_problem():
        M, _ = _rotation(obs["second_window"][0], _rotation_label(second))
        return compare({"value": M}, _exact_rotation(second), f"M from {_rotation_label(second)} "
                       f"(M_k must not depend on which positions are used)", 1e-9)

    def measured_error_problem():
        what = _rotation_label(noisy)
        M, error = _rotation(obs["noisy"][0], what)
        pe, offset = noisy["args"]
        actual = ref.reconstruction_error(require_shape(M, (pe.shape[1],) * 2, f"M from {what}"), pe, offset)
        if not abs(error - actual) <= 1e-9 + 1e-6 * actual:
            return (f"on a slightly noisy table, {what} reports error {error:.6g}, but the largest "
                    f"||M @ pe[p] - pe[p + {offset}]||_2 over valid positions p for the M it returned is "
                    f"{actual:.6g}: the error must be measured, not assumed")
        return None

    return each_case(_offset_problem, groups["offsets"], obs["offsets"], function=ROTATION_FN) + \
        problems_of(reproducing(second_window_problem, called(ROTATION_FN, second)),
                    reproducing(measured_error_problem, called(ROTATION_FN, noisy)))


# --- dot products ------------------------------------------------------------------------------

def _dot_inputs():
    return calling(DOT_FN, random=[call(normal(31, (9, 5)))],
                   sinusoidal=[call(ref.sinusoidal_positional_encoding(70, 18))])


def _random_dot_problem(pe, record):
    what = f"{DOT_FN} on a {pe.shape} array"

    def diagnose(D):
        if D.shape == (pe.shape[1],) * 2:
            return "that is PE^T PE (dimension by dimension); D = PE PE^T is L x L"
        norms = np.linalg.norm(pe, axis=1)
        if D.shape == (len(pe),) * 2 and mismatch(D, pe @ pe.T / np.outer(norms, norms), 1e-9, "") is None:
            return "it looks normalised (cosine similarity); return the raw dot products"
        return None
    return compare(record, pe @ pe.T, what, 1e-10, diagnose)


def _sinusoidal_dot_problem(pe, record):
    seq_len, d_model = pe.shape
    what = f"{DOT_FN} on a sinusoidal table {pe.shape}"
    D = observed_array(record, what, (seq_len, seq_len))
    if mismatch(D, D.T, 1e-12, "") is not None:
        return f"{what} is not symmetric"
    if mismatch(np.diag(D), np.full(seq_len, d_model / 2), 1e-9, "") is not None:
        return f"the diagonal of {what} should be d_model/2 = {d_model / 2:g}"
    drift = max(np.ptp(np.diag(D, k)) for k in range(1, seq_len - 10))
    if not drift <= 1e-9:
        return f"{what} should be constant along each diagonal (Toeplitz); it varies by {drift:.3g}"
    return None


def _judge_dot(inputs, obs):
    [random], [sinusoidal] = inputs["groups"]["random"], inputs["groups"]["sinusoidal"]
    return problems_of(reproducing(lambda: _random_dot_problem(random["args"][0], obs["random"][0]),
                                   called(DOT_FN, random)),
                       reproducing(lambda: _sinusoidal_dot_problem(sinusoidal["args"][0], obs["sinusoidal"][0]),
                                   called(DOT_FN, sinusoidal)))


# --- statistics --------------------------------------------------------------------------------

STATS_KEYS = ("position_norms", "mean", "variance", "min", "max", "bounded")


def _stats_inputs():
    return calling(STATS_FN, arrays=[call(ref.sinusoidal_positional_encoding(40, 16)),
                                     call(normal(41, (13, 6)) * 0.9),          # entries beyond [-1, 1]
                                     call(np.array([[1.0, -1.0], [0.5, 0.0]])),   # bounded by exactly 1
                                     call(np.array([[1.5, 0.25], [-0.5, 0.0]]))])  # beyond 1 on one side only


def _stats_problem(pe, record):
    what = f"{STATS_FN} on an array of shape {pe.shape}"
    actual = value_of(record, what)
    if not isinstance(actual, dict):
        return f"{what} should return a dict, got {type(actual).__name__}"
    if missing := [k for k in STATS_KEYS if k not in actual]:
        return f"{what} is missing the keys {missing}"
    expected = ref.encoding_statistics(pe)
    norms = as_array(actual["position_norms"], f"position_norms from {what}")
    problem = compare({"value": norms}, expected["position_norms"], f"position_norms from {what}", 1e-10,
                      diagnose=lambda n: "these look like squared norms" if n.shape == expected["position_norms"].shape
                      and mismatch(n, expected["position_norms"] ** 2, 1e-10, "") is None else None)
    if problem:
        return problem
    for key in ("mean", "variance", "min", "max"):
        got = number(actual[key], f"{key} from {what}")
        if not abs(got - expected[key]) <= 1e-10:
            hint = " (use the population variance over all entries, ddof=0)" \
                if key == "variance" and abs(got - pe.var(ddof=1)) < 1e-10 else ""
            return f"{key} from {what} is {got:.10g}, expected {expected[key]:.10g}{hint}"
    if not isinstance(actual["bounded"], bool) or actual["bounded"] is not expected["bounded"]:
        return f"bounded from {what} should be the bool {expected['bounded']} (every |PE| <= 1)"
    return None


_judge_stats = each_call(STATS_FN, "arrays", lambda pe, record, label: _stats_problem(pe, record))


TESTS = [
    HiddenTest(id="hidden_relative_position", assignment=ASSIGNMENT, points=4, answer_cell=ROTATION_FN,
               subjects=(ROTATION_FN,),
               title="M_k for k = 1, 5, 10, 50 and others on a window that does not start at 0, error < 1e-10, "
                     "independence from the window, a measured error",
               bullets=("relative.linear_map", "relative.multiple_offsets", "relative.offset_only"),
               inputs=_rotation_inputs, probe=call_each, judge=_judge_rotation),
    HiddenTest(id="hidden_dot_product", assignment=ASSIGNMENT, points=2, answer_cell="dot_product_and_statistics",
               subjects=(DOT_FN,),
               title="dot products of arbitrary arrays, symmetry, diagonal d/2, Toeplitz structure",
               bullets=("dot.symmetry", "dot.self", "dot.distance_dependent"),
               inputs=_dot_inputs, probe=call_each, judge=_judge_dot),
    HiddenTest(id="hidden_encoding_statistics", partial=True, assignment=ASSIGNMENT, points=2,
               subjects=(STATS_FN,),
               answer_cell="dot_product_and_statistics",
               title="every statistic on sinusoidal and non-sinusoidal arrays, including unbounded ones",
               bullets=("unique.bounded", "unique.norms"),
               inputs=_stats_inputs, probe=call_each, judge=_judge_stats),
]
