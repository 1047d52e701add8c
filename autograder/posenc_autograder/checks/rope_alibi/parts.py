"""Hidden tests of the bonus assignment: RoPE applied to queries and keys, ALiBi biases.

Each function is judged alone: a function built on an earlier one (apply_rope on rope_frequencies,
rope_scores on apply_rope, alibi_bias on alibi_slopes) runs with that one replaced by a stand-in the
trusted side knows (probes.helpers.standing_in), so one mistake costs its own test; types, dtypes and
changed arguments are the contracts test's alone.
"""
from __future__ import annotations

import itertools

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.comparison import against_any, compare, expect_error, extended
from posenc_autograder.checks.contracts import contracts_test
from posenc_autograder.checks.diagnosis import diagnose_float32_relative, frequency_mistakes, known_mistakes, matches
from posenc_autograder.checks.hidden import HiddenTest, References, call, calling, each_call, judging_all, normal
from posenc_autograder.checks.manifest import lookup_answer, lookup_stand_in
from posenc_autograder.checks.rope_alibi import reference, stand_ins
from posenc_autograder.checks.rope_alibi.manifest import FUNCTIONS
from posenc_autograder.checks.rope_alibi.stand_ins import shift_stand_in
from posenc_autograder.probes.helpers import call_each

ref = References(reference)        # sizes and settings asked for again: computed once, read-only

ASSIGNMENT = "rope_alibi"
FREQ_FN, ROPE_FN, SCORES_FN = "rope_frequencies", "apply_rope", "rope_scores"
SLOPES_FN, BIAS_FN = "alibi_slopes", "alibi_bias"

# The known mistakes' diagnoses. The notebook's visible checks give the same words inline (a downloaded
# notebook needs nothing but numpy); tests/test_checks_rope_alibi.py holds the two to each other.
DIAGNOSES = {
    "exponent": "the exponent uses i/d instead of 2i/d",
    "clockwise": "the rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos) is counter-clockwise",
    "halves": "your rotation pairs dimension i with i + d/2 (the \"rotate half\" layout): that is a legitimate RoPE "
              "convention, the one GPT-NeoX and Hugging Face code use, so your understanding is right; "
              "this exercise asks for the other one, adjacent pairs (2i, 2i+1) as in the RoFormer paper: an even "
              "column with the odd one after it",
    "halves_pair_angles": "your rotation pairs dimension i with i + d/2 (rotate half) but takes the angles of "
                          "adjacent pairs, each repeated (theta_0, theta_0, theta_1, theta_1, ...): the two layouts "
                          "were mixed, so a pair's two columns turn by different angles; this exercise uses adjacent "
                          "pairs (2i, 2i+1), x[..., 0::2] and x[..., 1::2], each turned by its own angle",
    "shifted": "positions look shifted by one: use the positions you are given",
    "ignored": "the positions were ignored and 0, 1, 2, ... used instead",
    "scaled": "the scores are divided by sqrt(head_dim): rope_scores returns the plain dot products, with no scaling",
    "naive_slopes": "for a head count that is not a power of two, take the slopes of the next lower power of two and "
                    "add every other slope of the next higher one (Press et al.)",
    "slopes_from_zero": "the heads are numbered h = 1 .. n_heads, so the first slope is 2^(-8/n_heads), not 1",
    "bias_sign": "the sign is flipped; the bias is a penalty, -slope * |i - j|",
    "signed_distance": "the distance must be |i - j|, not the signed difference",
    "causal_only": "only the causal half (j <= i) has a bias: ALiBi here is -slope * |i - j| for every pair i, j",
    "key_index": "your bias is slope * j, the key's index, as in Press et al.'s code and BLOOM: under a causal mask "
                 "it differs from -slope * (i - j) by a constant in each row, which softmax ignores, so your "
                 "understanding is right; this exercise asks for the bias itself, -slope * |i - j|, for every pair",
    "doubled_exponent": "the exponent is doubled: pair i turns at base^(-4i/d) instead of base^(-2i/d) (2i/d taken of "
                        "an index that already steps by 2, or the 2 applied twice)",
    "spacing": "the exponents are spaced by 1/(d/2 - 1), as in tensor2tensor and fairseq (the last frequency is "
               "exactly 1/base): a legitimate convention, so your understanding is right; this exercise asks for "
               "RoFormer's base^(-2i/d), whose last frequency is base^(-(d-2)/d)",
}


# --- frequencies -------------------------------------------------------------------------------

def _frequency_problem(d, record, label, base=ref.DEFAULT_BASE):
    expected = ref.angular_frequencies(d, base)
    return compare(record, expected, label, 1e-12, diagnose=lambda a: next(
        (DIAGNOSES[key] for key in known_mistakes(a, expected, frequency_mistakes(d, base))), None))


_judge_frequencies = judging_all(
    each_call(FREQ_FN, "values", _frequency_problem),
    each_call(FREQ_FN, "odd", lambda *_, record, label: expect_error(record, "ValueError", label,
                                                                      "for an odd head dimension")))


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


def _halves_with_pair_angles(x, positions, base, theta=None):
    """Rotate-half pairing (i, i + d/2) with the interleaved layout's angles, each repeated per pair."""
    d = x.shape[-1]
    theta = ref.angular_frequencies(d, base) if theta is None else theta
    angles = np.repeat(np.asarray(positions, dtype=float)[:, None] * theta[None, :], 2, axis=-1)
    rotated = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], axis=-1)
    return x * np.cos(angles) + rotated * np.sin(angles)


def _rope_diagnosis(actual, x, positions, base, theta):
    known = {
        DIAGNOSES["halves_pair_angles"]: _halves_with_pair_angles(x, positions, base, theta),
        DIAGNOSES["clockwise"]: _rotate(x, positions, base, clockwise=True, theta=theta),
        DIAGNOSES["halves"]: _rotate(x, positions, base, halves=True, theta=theta),
        DIAGNOSES["shifted"]: _rotate(x, positions, base, shift=1, theta=theta),
        DIAGNOSES["ignored"]: _rotate(x, np.arange(x.shape[-2]), base, theta=theta),
    }
    return next((explanation for explanation, expected in known.items() if matches(actual, expected)), None)


ROPE_CASES = [((5, 6), [0, 1, 2, 3, 4], 10000.0), ((7, 8), [9, 3, 14, 0, 1, 27, 5], 10000.0),
              ((2, 3, 4, 10), [4, 5, 6, 7], 10000.0), ((6, 12), [100, 101, 102, 103, 104, 105], 500.0)]


def _random_frequencies(head_dim):
    """Stand-in frequencies: positive, unrelated to any base (so `return x` or a fixed angle cannot fit)."""
    return variants.rng(75 + int(head_dim)).uniform(0.05, 1.5, size=int(head_dim) // 2)


def _rope_inputs():
    inputs = calling(ROPE_FN, outputs=[call(normal(71 + i, shape), positions, base=base)
                                       for i, (shape, positions, base) in enumerate(ROPE_CASES)])
    inputs["stand_ins"] = {FREQ_FN: lookup_stand_in(
        ("head_dim", "base"), {(shape[-1], base): _random_frequencies(shape[-1]) for shape, _, base in ROPE_CASES},
        defaults={"base": ref.DEFAULT_BASE}, odd_error=True)}
    return inputs


def _judge_rope(inputs, obs):
    def problem(x, positions, record, label, base):
        def against(theta):
            return compare(record, _rotate(x, positions, base, theta=theta),
                           label, 1e-10,
                           diagnose=lambda a: _rope_diagnosis(a, x, positions, base, theta))
        return against_any(against, ref.angular_frequencies(x.shape[-1], base),
                           lookup_answer(inputs["stand_ins"][FREQ_FN], x.shape[-1], base))
    return each_call(ROPE_FN, "outputs", problem)(inputs, obs)


# --- scores depend on the distance only --------------------------------------------------------

def _scores_inputs():
    length, dim = 9, 16
    q, k = normal(81, (length, dim)), normal(82, (length, dim))
    q_pos, k_pos = np.arange(length), np.arange(length)[::-1]
    inputs = calling(SCORES_FN, shifted=[call(q, k, (q_pos + s).tolist(), (k_pos + s).tolist()) for s in (0, 3, 250)])
    inputs["stand_ins"] = {ROPE_FN: shift_stand_in(normal(83, dim) / 100)}
    return inputs


def stand_in_rope(x, positions, vector):
    """What the probe's stand-in for apply_rope returns (the same function: stand_ins.shift)."""
    return stand_ins.shift({"vector": vector})(x, positions)


def _run(positions) -> str:
    """Positions as the student would read them: '3 to 11', '11 down to 3', or the list when not a run."""
    positions = [int(p) for p in positions]
    if len(positions) > 2 and all(b - a == 1 for a, b in itertools.pairwise(positions)):
        return f"{positions[0]} to {positions[-1]}"
    if len(positions) > 2 and all(a - b == 1 for a, b in itertools.pairwise(positions)):
        return f"{positions[0]} down to {positions[-1]}"
    return str(positions)


def _judge_scores(inputs, obs):
    vector = inputs["stand_ins"][ROPE_FN]["vector"]

    def problem(q, k, q_pos, k_pos, record, label):
        def against(rotate):
            expected = rotate(q, q_pos) @ rotate(k, k_pos).T
            scaled = expected / np.sqrt(q.shape[-1])
            return compare(record, expected, f"{SCORES_FN} with query positions {_run(q_pos)} and key positions "
                                             f"{_run(k_pos)}",
                           1e-9, diagnose=lambda a: DIAGNOSES["scaled"] if matches(a, scaled) else None)
        said = against_any(against, lambda x, p: ref.apply_rope(x, np.array(p)),
                           lambda x, p: stand_in_rope(x, p, vector))
        return said and extended(said, " (the score must depend only on the distance n - m)")
    return each_call(SCORES_FN, "shifted", problem)(inputs, obs)


# --- ALiBi -------------------------------------------------------------------------------------

def _slopes_problem(n, record, label):
    known = {DIAGNOSES["naive_slopes"]: 2.0 ** (-8.0 * np.arange(1, n + 1) / n),
             DIAGNOSES["slopes_from_zero"]: 2.0 ** (-8.0 * np.arange(n) / n)}
    expected = ref.alibi_slopes(n)
    return compare(record, expected, label, 1e-12,
                   diagnose=lambda a: next(iter(known_mistakes(a, expected, known)), None)
                   or diagnose_float32_relative(a, expected))


def _bias_diagnosis(array, slopes, length):
    distance = np.arange(length)[None, :] - np.arange(length)[:, None]           # j - i
    slopes = slopes[:, None, None]
    expected = -slopes * np.abs(distance)
    if matches(array, -expected):
        return DIAGNOSES["bias_sign"]
    if matches(array, slopes * distance) or matches(array, -slopes * distance):
        return DIAGNOSES["signed_distance"]
    if matches(array, np.tril(expected)):
        return DIAGNOSES["causal_only"]
    if matches(array, np.broadcast_to(slopes * np.arange(length), expected.shape)):
        return DIAGNOSES["key_index"]
    return None


BIAS_CASES = [(8, 10), (6, 7), (1, 1)]


def _bias_inputs():
    inputs = calling(BIAS_FN, biases=[call(*case) for case in BIAS_CASES])
    inputs["stand_ins"] = {SLOPES_FN: lookup_stand_in(
        ("n_heads",), {(heads,): variants.rng(85 + heads).uniform(0.05, 1.0, size=heads) for heads, _ in BIAS_CASES})}
    return inputs


def _judge_bias(inputs, obs):
    def problem(heads, length, record, label):
        def against(slopes):
            distance = np.abs(np.arange(length)[:, None] - np.arange(length)[None, :])
            return compare(record, 0.0 - slopes[:, None, None] * distance, label, 1e-12,
                           diagnose=lambda a: _bias_diagnosis(a, slopes, length))
        return against_any(against, ref.alibi_slopes(heads), lookup_answer(inputs["stand_ins"][SLOPES_FN], heads))
    return each_call(BIAS_FN, "biases", problem)(inputs, obs)


TESTS = [
    HiddenTest(id="hidden_rope_frequencies", partial=True, assignment=ASSIGNMENT, points=2, answer_cell="rope",
               title="frequencies for several head sizes and bases, ValueError for odd sizes", subjects=(FREQ_FN,),
               inputs=lambda: calling(FREQ_FN, values=[call(2, base=1e4), call(10, base=1e4), call(64, base=1e4),
                                                       call(16, base=500.0)], odd=[call(7)]),
               probe=call_each, judge=_judge_frequencies),
    HiddenTest(id="hidden_apply_rope", partial=True, assignment=ASSIGNMENT, points=4, answer_cell="rope",
               title="rotations of batched inputs at arbitrary positions and bases, with frequencies given by the "
                     "grader", subjects=(ROPE_FN,), depends=(FREQ_FN,),
               inputs=_rope_inputs, probe=call_each, judge=_judge_rope),
    HiddenTest(id="hidden_rope_relative", partial=True, assignment=ASSIGNMENT, points=3, answer_cell="rope",
               title="scores of rotated queries and keys at shifted positions, with a rotation given by the grader",
               subjects=(SCORES_FN,), depends=(ROPE_FN,),
               inputs=_scores_inputs, probe=call_each, judge=_judge_scores),
    HiddenTest(id="hidden_alibi_slopes", partial=True, assignment=ASSIGNMENT, points=2, answer_cell="alibi",
               title="slopes for power-of-two and other head counts", subjects=(SLOPES_FN,),
               inputs=lambda: calling(SLOPES_FN, slopes=[call(n) for n in (1, 2, 4, 8, 16, 6, 12)]),
               probe=call_each, judge=each_call(SLOPES_FN, "slopes", _slopes_problem)),
    HiddenTest(id="hidden_alibi_bias", partial=True, assignment=ASSIGNMENT, points=3, answer_cell="alibi",
               title="bias tensors for several head counts and lengths, with slopes given by the grader",
               subjects=(BIAS_FN,), depends=(SLOPES_FN,),
               inputs=_bias_inputs, probe=call_each, judge=_judge_bias),
    contracts_test(ASSIGNMENT, FUNCTIONS, id="hidden_rope_alibi_contracts", points=2, answer_cell="alibi",
                   title="return types and dtypes (float64 numpy arrays), and the caller's arrays left unchanged, "
                         "for each function that passes its own tests"),
]
