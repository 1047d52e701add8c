"""Hidden tests of Part 3, Transformer-XL: its sinusoidal encodings of distances, the relative shift, and the
relative logits with u and v against the direct four-term sum (judged with the shift given by the grader, a stand-in
for the student's relative_shift, so a wrong shift costs its own test only); and the assignment's contracts test."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.contracts import contracts_test
from posenc_autograder.checks.hidden import HiddenTest, References, call, calling, normal
from posenc_autograder.checks.relative_positions import reference
from posenc_autograder.checks.relative_positions.common import ASSIGNMENT, values_judge
from posenc_autograder.checks.relative_positions.manifest import FUNCTIONS
from posenc_autograder.checks.relative_positions.stand_ins import shift, shift_stand_in
from posenc_autograder.probes.helpers import call_each

ref = References(reference)
ENCODINGS_FN, SHIFT_FN, LOGITS_FN = "xl_relative_encodings", "relative_shift", "xl_relative_logits"

ENCODING_CASES = [(7, 8), (1, 4), (20, 16), (5, 2), (33, 10)]


def _encoding_mistakes(k_len, d_model):
    right = ref.xl_relative_encodings(k_len, d_model)
    half = d_model // 2
    interleaved = np.empty_like(right)
    interleaved[:, 0::2], interleaved[:, 1::2] = right[:, :half], right[:, half:]
    return {"encodings_interleaved": interleaved, "encodings_ascending": right[::-1],
            "encodings_cos_first": np.concatenate([right[:, half:], right[:, :half]], axis=1)}


def _encoding_readings(k_len, d_model):
    return [(ref.xl_relative_encodings(k_len, d_model), lambda: _encoding_mistakes(k_len, d_model))]


# (q_len, k_len): no memory, memory of several lengths, a single query
SHIFT_CASES = [(4, 4), (3, 7), (6, 9), (1, 5), (8, 8)]


def _padding_trick(scores):
    """Transformer-XL's _rel_shift as its code does it (a column of zeros, a reshape), the keys after the query
    left as the trick leaves them."""
    q_len, k_len = scores.shape
    padded = np.concatenate([np.zeros((q_len, 1)), scores], axis=1).reshape(k_len + 1, q_len)
    return padded[1:].reshape(q_len, k_len)


def _shift_mistakes(scores):
    q_len, k_len = scores.shape
    rows, cols = np.arange(q_len)[:, None], np.arange(k_len)[None, :]
    source = np.clip(rows + (k_len - q_len) - cols, 0, k_len - 1)
    return {"shift_future_kept": _padding_trick(scores),
            "shift_reversed": np.where(reference.visible_mask(q_len, k_len),
                                       np.take_along_axis(scores, source, axis=1), 0.0)}


def _shift_readings(scores):
    return [(ref.relative_shift(scores), lambda: _shift_mistakes(scores))]


XL_CASES = [(4, 4, 8), (3, 7, 6), (5, 9, 4), (1, 6, 8)]
STEP = 1                         # the stand-in shift reads one column further


def _logits_inputs():
    cases = []
    for i, (q_len, k_len, d) in enumerate(XL_CASES):
        r = ref.xl_relative_encodings(k_len, 2 * d) @ normal(301 + i, (2 * d, d))     # R W_R, the projected R
        cases.append(call(normal(311 + i, (q_len, d)), normal(321 + i, (k_len, d)), r, normal(331 + i, d),
                          normal(341 + i, d)))
    inputs = calling(LOGITS_FN, logits=cases)
    inputs["stand_ins"] = {SHIFT_FN: shift_stand_in(STEP)}
    return inputs


def _logits_mistakes(q, k, r, u, v, shifting):
    mask = reference.visible_mask(len(q), len(k))
    return {"xl_uv_swapped": reference.xl_logits_with(q, k, r, v, u, shifting),
            "xl_no_biases": reference.xl_logits_with(q, k, r, 0 * u, 0 * v, shifting),
            "xl_not_shifted": np.where(mask, (q + u) @ k.T + (q + v) @ r.T, 0.0),
            "xl_future_kept": (q + u) @ k.T + shifting((q + v) @ r.T)}


def _judge_logits(inputs, obs):
    def readings(q, k, r, u, v):
        return [(reference.xl_logits_with(q, k, r, u, v, shifting),
                 lambda s=shifting: _logits_mistakes(q, k, r, u, v, s))
                for shifting in (reference.relative_shift, shift(inputs["stand_ins"][SHIFT_FN]))]
    return values_judge(LOGITS_FN, "logits", readings)(inputs, obs)


TESTS = [
    HiddenTest(id="hidden_xl_relative_encodings", subjects=(ENCODINGS_FN,), partial=True, assignment=ASSIGNMENT,
               bullets=("relpos.xl_encodings",), points=1, answer_cell="xl",
               title="Transformer-XL's sinusoidal encodings of distances for several lengths and widths",
               inputs=lambda: calling(ENCODINGS_FN, encodings=[call(*case) for case in ENCODING_CASES]),
               probe=call_each, judge=values_judge(ENCODINGS_FN, "encodings", _encoding_readings)),
    HiddenTest(id="hidden_relative_shift", subjects=(SHIFT_FN,), partial=True, assignment=ASSIGNMENT,
               bullets=("relpos.xl_shift",), points=2,
               answer_cell="xl",
               title="the relative shift without and with memory (non-square), keys after the query 0",
               inputs=lambda: calling(SHIFT_FN, shifts=[call(normal(351 + i, case)) for i, case in
                                                        enumerate(SHIFT_CASES)]),
               probe=call_each, judge=values_judge(SHIFT_FN, "shifts", _shift_readings)),
    HiddenTest(id="hidden_xl_relative_logits", subjects=(LOGITS_FN,), depends=(SHIFT_FN,), partial=True,
               assignment=ASSIGNMENT, bullets=("relpos.xl_logits",), points=2, answer_cell="xl",
               title="relative logits with u and v against the direct four-term sum, with memory, with the shift "
                     "given by the grader",
               inputs=_logits_inputs, probe=call_each, judge=_judge_logits),
    contracts_test(ASSIGNMENT, FUNCTIONS, id="hidden_relative_positions_contracts", bullets=("relpos.types",), points=2,
                   answer_cell="analysis",
                   title="return types and dtypes (integer arrays for indices and buckets, float64 arrays, an integer "
                         "count), and the caller's arrays left unchanged, for each function that passes its own tests"),
]
