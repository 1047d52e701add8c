"""Hidden tests of the bonus assignment: RoPE applied to queries and keys, ALiBi biases.

A function built on an earlier one (apply_rope on rope_frequencies, rope_scores on apply_rope,
alibi_bias on alibi_slopes) is judged on the student's own earlier answers too, so that one
mistake costs its own test; types, dtypes and changed arguments are the contracts test's alone.
"""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks import reference as ref
from posenc_autograder.probes.calls import call_each_with_parts, contract_each
from posenc_autograder.probes.helpers import call_each
from posenc_autograder.checks.base import (HiddenTest, call, call_label, calling, compare, each_case, expect_error, mismatch, normal,
                   on_either, own_array)
from posenc_autograder.checks.contracts import ARRAY, contracts_judge

ASSIGNMENT = "rope_alibi"
FREQ_FN, ROPE_FN, SCORES_FN = "rope_frequencies", "apply_rope", "rope_scores"
SLOPES_FN, BIAS_FN = "alibi_slopes", "alibi_bias"

# The known mistakes' diagnoses. The notebook's visible checks give the same words inline (a downloaded
# notebook needs nothing but numpy); tests/test_checks_rope_alibi.py holds the two to each other.
DIAGNOSES = {
    "exponent": "the exponent uses i/d instead of 2i/d",
    "clockwise": "the rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos) is counter-clockwise",
    "halves": "your rotation pairs dimension i with i + d/2 (the \"rotate half\" layout): that is a legitimate RoPE "
              "convention, the one GPT-NeoX and Hugging Face code use, so your understanding is right; this exercise asks "
              "for the other one, adjacent pairs (2i, 2i+1) as in the RoFormer paper, so take x[..., 0::2] and "
              "x[..., 1::2]",
    "shifted": "positions look shifted by one: use the positions you are given",
    "ignored": "the positions were ignored and 0, 1, 2, ... used instead",
    "scaled": "the scores are divided by sqrt(head_dim): rope_scores returns the plain dot products, with no scaling",
    "naive_slopes": "for a head count that is not a power of two, take the slopes of the next lower power of two and "
                    "add every other slope of the next higher one (Press et al.)",
    "slopes_from_zero": "the heads are numbered h = 1 .. n_heads, so the first slope is 2^(-8/n_heads), not 1",
    "bias_sign": "the sign is flipped; the bias is a penalty, -slope * |i - j|",
    "signed_distance": "the distance must be |i - j|, not the signed difference",
    "causal_only": "only the causal half (j <= i) has a bias: ALiBi here is -slope * |i - j| for every pair i, j",
}


def _each(function, group, inputs, obs, problem):
    """problem(args, kwargs, record, label, own) for every call of a group; `own` maps each part (see
    _with_parts) to the student's own earlier answer for that call."""
    labels = sorted(inputs.get("parts", {}))
    own = [_part_records(inputs, obs, label, group) for label in labels]
    return each_case(lambda c, r, *mine: problem(*c["args"], record=r, label=call_label(function, c),
                                                 own=dict(zip(labels, mine)), **c["kwargs"]),
                     inputs["groups"][group], obs[group], *own)


def _with_parts(inputs: dict, **parts: dict) -> dict:
    """inputs of call_each_with_parts: the calls, and per part label a calling() of an earlier function
    with one call per case of the same group."""
    return {**inputs, "parts": parts}


def _part_records(inputs, obs, label, group) -> list:
    """The records of the student's own earlier function for a group; 'not recorded' when it is missing."""
    records = obs.get("parts", {}).get(label, {})
    records = records.get(group) if isinstance(records, dict) else None
    count = len(inputs["groups"][group])
    return records if isinstance(records, list) and len(records) == count else [{"error": "not recorded"}] * count


def _matches(array, expected) -> bool:
    return array.shape == expected.shape and mismatch(array, expected, 1e-9, "") is None


# --- frequencies -------------------------------------------------------------------------------

def _frequency_problem(d, record, label, own, base=ref.DEFAULT_BASE):
    return compare(record, ref.angular_frequencies(d, base), label, 1e-12,
                   diagnose=lambda a: DIAGNOSES["exponent"]
                   if _matches(a, np.exp(-np.arange(d // 2) / d * np.log(base))) else None)


def _judge_frequencies(inputs, obs):
    return _each(FREQ_FN, "values", inputs, obs, _frequency_problem) + \
        _each(FREQ_FN, "odd", inputs, obs, lambda *_, record, label, own: expect_error(
            record, "ValueError", label, "for an odd head dimension"))


# --- apply_rope --------------------------------------------------------------------------------

def _rotate(x, positions, base, clockwise=False, halves=False, shift=0, theta=None):
    """Variants of RoPE used to recognise the usual mistakes (theta: frequencies other than the reference's)."""
    d = x.shape[-1]
    theta = ref.angular_frequencies(d, base) if theta is None else theta
    angles = (np.asarray(positions, dtype=float) + shift)[:, None] * theta[None, :]
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
        DIAGNOSES["clockwise"]: _rotate(x, positions, base, clockwise=True),
        DIAGNOSES["halves"]: _rotate(x, positions, base, halves=True),
        DIAGNOSES["shifted"]: _rotate(x, positions, base, shift=1),
        DIAGNOSES["ignored"]: _rotate(x, np.arange(x.shape[-2]), base),
    }
    return next((explanation for explanation, expected in known.items() if _matches(actual, expected)), None)


ROPE_CASES = [((5, 6), [0, 1, 2, 3, 4], 10000.0), ((7, 8), [9, 3, 14, 0, 1, 27, 5], 10000.0),
              ((2, 3, 4, 10), [4, 5, 6, 7], 10000.0), ((6, 12), [100, 101, 102, 103, 104, 105], 500.0)]


def _rope_inputs():
    return _with_parts(calling(ROPE_FN, outputs=[call(normal(71 + i, shape), positions, base=base)
                                                 for i, (shape, positions, base) in enumerate(ROPE_CASES)]),
                       theta=calling(FREQ_FN, outputs=[call(shape[-1], base) for shape, _, base in ROPE_CASES]))


def _rope_problem(x, positions, record, label, own, base):
    theta = own_array(own["theta"], FREQ_FN)
    mine = _rotate(x, positions, base, theta=theta) if theta is not None and theta.shape == (x.shape[-1] // 2,) \
        else None
    return on_either(lambda expected: compare(record, expected, f"{label} with positions {positions[:4]}...", 1e-10,
                                              diagnose=lambda a: _rope_diagnosis(a, x, positions, base)),
                     ref.apply_rope(x, np.array(positions), base), mine)


# --- scores depend on the distance only --------------------------------------------------------

def _scores_inputs():
    length, dim = 9, 16
    q, k = normal(81, (length, dim)), normal(82, (length, dim))
    q_pos, k_pos = np.arange(length), np.arange(length)[::-1]
    calls = [call(q, k, (q_pos + s).tolist(), (k_pos + s).tolist()) for s in (0, 3, 250)]
    return _with_parts(calling(SCORES_FN, shifted=calls),
                       **{f"rotated_{side}": calling(ROPE_FN, shifted=[call(c["args"][i], c["args"][i + 2])
                                                                       for c in calls])
                          for i, side in enumerate(("q", "k"))})


def _scores_problem(q, k, q_pos, k_pos, record, label, own):
    expected = ref.apply_rope(q, np.array(q_pos)) @ ref.apply_rope(k, np.array(k_pos)).T
    rotated_q, rotated_k = own_array(own["rotated_q"], ROPE_FN), own_array(own["rotated_k"], ROPE_FN)
    mine = rotated_q @ rotated_k.T if rotated_q is not None and rotated_k is not None and \
        (rotated_q.shape, rotated_k.shape) == (q.shape, k.shape) else None
    scaled = expected / np.sqrt(q.shape[-1])
    problem = on_either(lambda e: compare(record, e, f"{SCORES_FN} with positions starting at {q_pos[0]} and "
                                                     f"{k_pos[-1]}", 1e-9,
                                          diagnose=lambda a: DIAGNOSES["scaled"] if _matches(a, scaled) else None),
                        expected, mine)
    return problem and problem + " (the score must depend only on the distance n - m)"


# --- ALiBi -------------------------------------------------------------------------------------

def _slopes_problem(n, record, label, own):
    known = {DIAGNOSES["naive_slopes"]: 2.0 ** (-8.0 * np.arange(1, n + 1) / n),
             DIAGNOSES["slopes_from_zero"]: 2.0 ** (-8.0 * np.arange(n) / n)}
    return compare(record, ref.alibi_slopes(n), label, 1e-12,
                   diagnose=lambda a: next((why for why, wrong in known.items() if _matches(a, wrong)), None))


def _bias_diagnosis(array, heads, length):
    expected = ref.alibi_bias(heads, length)
    signed = np.arange(length)[None, :] - np.arange(length)[:, None]
    slopes = ref.alibi_slopes(heads)[:, None, None]
    if _matches(array, -expected):
        return DIAGNOSES["bias_sign"]
    if _matches(array, -slopes * signed) or _matches(array, slopes * signed):
        return DIAGNOSES["signed_distance"]
    if _matches(array, np.tril(expected)):
        return DIAGNOSES["causal_only"]
    return None


BIAS_CASES = [(8, 10), (6, 7), (1, 1)]


def _bias_inputs():
    return _with_parts(calling(BIAS_FN, biases=[call(*case) for case in BIAS_CASES]),
                       slopes=calling(SLOPES_FN, biases=[call(heads) for heads, _ in BIAS_CASES]))


def _bias_problem(heads, length, record, label, own):
    slopes = own_array(own["slopes"], SLOPES_FN)
    distance = np.abs(np.arange(length)[:, None] - np.arange(length)[None, :])
    mine = 0.0 - slopes[:, None, None] * distance if slopes is not None and slopes.shape == (heads,) else None
    return on_either(lambda expected: compare(record, expected, label, 1e-12,
                                              diagnose=lambda a: _bias_diagnosis(a, heads, length)),
                     ref.alibi_bias(heads, length), mine)


# --- contracts: return types and dtypes, the caller's arrays left unchanged -----------------------

PROMISED = {FREQ_FN: ARRAY, ROPE_FN: ARRAY, SCORES_FN: ARRAY, SLOPES_FN: ARRAY, BIAS_FN: ARRAY}
ARGUMENT_NAMES = {ROPE_FN: ["x", "positions"], SCORES_FN: ["q", "k", "q_positions", "k_positions"]}


def _contract_inputs():
    x, q, k = normal(61, (2, 5, 8)), normal(62, (4, 8)), normal(63, (6, 8))
    return {"calls": {FREQ_FN: call(8), ROPE_FN: call(x, [3, 9, 4, 12, 7]),
                      SCORES_FN: call(q, k, [5, 6, 7, 8], [2, 0, 11, 3, 4, 1]), SLOPES_FN: call(12),
                      BIAS_FN: call(6, 5)}}


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
               inputs=_rope_inputs, probe=call_each_with_parts, judge=_judging(ROPE_FN, "outputs", _rope_problem)),
    HiddenTest(id="hidden_rope_relative", partial=True, assignment=ASSIGNMENT, points=3, answer_cell="rope",
               title="scores that depend only on the distance between positions",
               inputs=_scores_inputs, probe=call_each_with_parts,
               judge=_judging(SCORES_FN, "shifted", _scores_problem)),
    HiddenTest(id="hidden_alibi_slopes", partial=True, assignment=ASSIGNMENT, points=2, answer_cell="alibi",
               title="slopes for power-of-two and other head counts",
               inputs=lambda: calling(SLOPES_FN, slopes=[call(n) for n in (1, 2, 4, 8, 16, 6, 12)]),
               probe=call_each, judge=_judging(SLOPES_FN, "slopes", _slopes_problem)),
    HiddenTest(id="hidden_alibi_bias", partial=True, assignment=ASSIGNMENT, points=3, answer_cell="alibi",
               title="bias tensors for several head counts and lengths",
               inputs=_bias_inputs, probe=call_each_with_parts, judge=_judging(BIAS_FN, "biases", _bias_problem)),
    HiddenTest(id="hidden_rope_alibi_contracts", assignment=ASSIGNMENT, points=2, answer_cell="alibi",
               title="return types and dtypes (float64 numpy arrays), and the caller's arrays left unchanged",
               inputs=_contract_inputs, probe=contract_each, judge=contracts_judge(PROMISED, ARGUMENT_NAMES)),
]
