"""Probes of the bonus assignment (RoPE and ALiBi)."""
from __future__ import annotations

import numpy as np

from .helpers import attempt, normal, raises, student_callable

FREQ_FN, ROPE_FN, SCORES_FN = "rope_frequencies", "apply_rope", "rope_scores"
SLOPES_FN, BIAS_FN = "alibi_slopes", "alibi_bias"

FREQUENCY_CASES = [(2, 10000.0), (10, 10000.0), (64, 10000.0), (16, 500.0)]
ROPE_CASES = [  # (seed, shape, positions, base)
    (71, (5, 6), [0, 1, 2, 3, 4], 10000.0),
    (72, (7, 8), [9, 3, 14, 0, 1, 27, 5], 10000.0),
    (73, (2, 3, 4, 10), [4, 5, 6, 7], 10000.0),
    (74, (6, 12), [100, 101, 102, 103, 104, 105], 500.0),
]
SCORE_DIM, SCORE_LEN, SCORE_SHIFTS = 16, 9, [0, 3, 250]
HEAD_COUNTS = [1, 2, 4, 8, 16, 6, 12]
BIAS_CASES = [(8, 10), (6, 7), (1, 1)]


def rope_inputs(seed, shape):
    return normal(seed, shape)


def probe_frequencies(ns, data):
    fn = student_callable(ns, FREQ_FN)
    return {"values": [attempt(fn, d, base=b) for d, b in FREQUENCY_CASES], "odd": raises(fn, 7)}


def probe_apply_rope(ns, data):
    fn = student_callable(ns, ROPE_FN)
    return {"outputs": [attempt(fn, rope_inputs(seed, shape), np.array(pos), base=base)
                        for seed, shape, pos, base in ROPE_CASES]}


def probe_scores(ns, data):
    fn = student_callable(ns, SCORES_FN)
    q, k = normal(81, (SCORE_LEN, SCORE_DIM)), normal(82, (SCORE_LEN, SCORE_DIM))
    q_pos, k_pos = np.arange(SCORE_LEN), np.arange(SCORE_LEN)[::-1].copy()
    return {"shifted": [attempt(fn, q, k, q_pos + s, k_pos + s) for s in SCORE_SHIFTS]}


def probe_slopes(ns, data):
    fn = student_callable(ns, SLOPES_FN)
    return {"slopes": [attempt(fn, n) for n in HEAD_COUNTS]}


def probe_bias(ns, data):
    fn = student_callable(ns, BIAS_FN)
    return {"biases": [attempt(fn, h, L) for h, L in BIAS_CASES]}
