"""Hidden tests of the bonus assignment: RoPE applied to queries and keys, ALiBi biases."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..probes.helpers import call_each
from .base import HiddenTest, call, call_label, calling, compare, each_case, expect_error, mismatch, normal

ASSIGNMENT = "rope_alibi"
FREQ_FN, ROPE_FN, SCORES_FN = "rope_frequencies", "apply_rope", "rope_scores"
SLOPES_FN, BIAS_FN = "alibi_slopes", "alibi_bias"


def _each(function, group, inputs, obs, problem):
    """problem(args, kwargs, record, label) for every call of a group."""
    return each_case(lambda c, r: problem(*c["args"], record=r, label=call_label(function, c), **c["kwargs"]),
                     inputs["groups"][group], obs[group])


def _matches(array, expected) -> bool:
    return array.shape == expected.shape and mismatch(array, expected, 1e-9, "") is None


# --- frequencies -------------------------------------------------------------------------------

def _frequency_problem(d, record, label, base=ref.DEFAULT_BASE):
    return compare(record, ref.angular_frequencies(d, base), label, 1e-12,
                   diagnose=lambda a: "the exponent uses i/d instead of 2i/d"
                   if _matches(a, np.exp(-np.arange(d // 2) / d * np.log(base))) else None)


def _judge_frequencies(inputs, obs):
    return _each(FREQ_FN, "values", inputs, obs, _frequency_problem) + \
        _each(FREQ_FN, "odd", inputs, obs, lambda *_, record, label: expect_error(
            record, "ValueError", label, "for an odd head dimension"))


# --- apply_rope --------------------------------------------------------------------------------

def _rotate(x, positions, base, clockwise=False, halves=False, shift=0):
    """Variants of RoPE used to recognise the usual mistakes."""
    d = x.shape[-1]
    angles = (np.asarray(positions, dtype=float) + shift)[:, None] * ref.angular_frequencies(d, base)[None, :]
    sin = -np.sin(angles) if clockwise else np.sin(angles)
    cos = np.cos(angles)
    a, b = (x[..., : d // 2], x[..., d // 2:]) if halves else (x[..., 0::2], x[..., 1::2])
    first, second = a * cos - b * sin, a * sin + b * cos
    if halves:
        return np.concatenate([first, second], axis=-1)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = first, second
    return out


def _rope_diagnosis(actual, x, positions, base):
    known = {
        "the rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos) is counter-clockwise":
            _rotate(x, positions, base, clockwise=True),
        ("your rotation pairs dimension i with i + d/2 (the \"rotate half\" layout): that is a legitimate RoPE "
         "convention, the one GPT-NeoX and Llama code uses, so your understanding is right; this exercise asks for "
         "the other one, adjacent pairs (2i, 2i+1) as in the RoFormer paper, so take x[..., 0::2] and x[..., 1::2]"):
            _rotate(x, positions, base, halves=True),
        "positions look shifted by one: use the positions you are given": _rotate(x, positions, base, shift=1),
        "the positions were ignored and 0, 1, 2, ... used instead": _rotate(x, np.arange(x.shape[-2]), base),
    }
    return next((explanation for explanation, expected in known.items() if _matches(actual, expected)), None)


def _rope_inputs():
    cases = [((5, 6), [0, 1, 2, 3, 4], 10000.0), ((7, 8), [9, 3, 14, 0, 1, 27, 5], 10000.0),
             ((2, 3, 4, 10), [4, 5, 6, 7], 10000.0), ((6, 12), [100, 101, 102, 103, 104, 105], 500.0)]
    return calling(ROPE_FN, outputs=[call(normal(71 + i, shape), positions, base=base)
                                     for i, (shape, positions, base) in enumerate(cases)])


def _rope_problem(x, positions, record, label, base):
    return compare(record, ref.apply_rope(x, np.array(positions), base), f"{label} with positions {positions[:4]}...",
                   1e-10, diagnose=lambda a: _rope_diagnosis(a, x, positions, base))


# --- scores depend on the distance only --------------------------------------------------------

def _scores_inputs():
    length, dim = 9, 16
    q, k = normal(81, (length, dim)), normal(82, (length, dim))
    q_pos, k_pos = np.arange(length), np.arange(length)[::-1]
    return calling(SCORES_FN, shifted=[call(q, k, (q_pos + s).tolist(), (k_pos + s).tolist()) for s in (0, 3, 250)])


def _scores_problem(q, k, q_pos, k_pos, record, label):
    expected = ref.apply_rope(q, np.array(q_pos)) @ ref.apply_rope(k, np.array(k_pos)).T
    problem = compare(record, expected, f"{SCORES_FN} with positions starting at {q_pos[0]} and {k_pos[-1]}", 1e-9)
    return problem and problem + " (the score must depend only on the distance n - m)"


# --- ALiBi -------------------------------------------------------------------------------------

def _slopes_problem(n, record, label):
    return compare(record, ref.alibi_slopes(n), label, 1e-12, diagnose=lambda a: (
        "for a head count that is not a power of two, take the slopes of the next lower power of two and add "
        "every other slope of the next higher one (Press et al.)")
        if _matches(a, 2.0 ** (-8.0 * np.arange(1, n + 1) / n)) else None)


def _bias_diagnosis(array, heads, length):
    expected = ref.alibi_bias(heads, length)
    signed = np.arange(length)[None, :] - np.arange(length)[:, None]
    slopes = ref.alibi_slopes(heads)[:, None, None]
    if _matches(array, -expected):
        return "the sign is flipped; the bias is a penalty, -slope * |i - j|"
    if _matches(array, -slopes * signed) or _matches(array, slopes * signed):
        return "the distance must be |i - j|, not the signed difference"
    return None


def _bias_problem(heads, length, record, label):
    return compare(record, ref.alibi_bias(heads, length), label, 1e-12,
                   diagnose=lambda a: _bias_diagnosis(a, heads, length))


def _judging(function, group, problem):
    return lambda inputs, obs: _each(function, group, inputs, obs, problem)


TESTS = [
    HiddenTest(id="hidden_rope_frequencies", partial=True, assignment=ASSIGNMENT, points=2, answer_cell="rope",
               title="frequencies for several head sizes and bases, ValueError for odd sizes",
               inputs=lambda: calling(FREQ_FN, values=[call(2, base=1e4), call(10, base=1e4), call(64, base=1e4),
                                                       call(16, base=500.0)], odd=[call(7)]),
               probe=call_each, judge=_judge_frequencies),
    HiddenTest(id="hidden_apply_rope", partial=True, assignment=ASSIGNMENT, points=4, answer_cell="rope",
               title="rotations of batched inputs at arbitrary positions and bases",
               inputs=_rope_inputs, probe=call_each, judge=_judging(ROPE_FN, "outputs", _rope_problem)),
    HiddenTest(id="hidden_rope_relative", partial=True, assignment=ASSIGNMENT, points=3, answer_cell="rope",
               title="scores that depend only on the distance between positions",
               inputs=_scores_inputs, probe=call_each, judge=_judging(SCORES_FN, "shifted", _scores_problem)),
    HiddenTest(id="hidden_alibi_slopes", partial=True, assignment=ASSIGNMENT, points=2, answer_cell="alibi",
               title="slopes for power-of-two and other head counts",
               inputs=lambda: calling(SLOPES_FN, slopes=[call(n) for n in (1, 2, 4, 8, 16, 6, 12)]),
               probe=call_each, judge=_judging(SLOPES_FN, "slopes", _slopes_problem)),
    HiddenTest(id="hidden_alibi_bias", partial=True, assignment=ASSIGNMENT, points=3, answer_cell="alibi",
               title="bias tensors for several head counts and lengths",
               inputs=lambda: calling(BIAS_FN, biases=[call(8, 10), call(6, 7), call(1, 1)]),
               probe=call_each, judge=_judging(BIAS_FN, "biases", _bias_problem)),
]
