"""Calls of relative_positions' student-facing API over the spec's domain (see positional_encoding's battery): every
function, both of T5's modes, several num_buckets and max_distance, distances below, at and far beyond it, square
and non-square shapes, memory for Transformer-XL."""
from __future__ import annotations

from typing import Callable

import numpy as np

from posenc_autograder.checks.positional_encoding.mutation_battery import normal


def battery() -> list[Callable[[dict], object]]:
    calls = []
    for q_len, k_len, m in ((4, 4, 1), (3, 9, 2), (8, 2, 3), (5, 5, 0), (2, 3, 9)):
        calls.append(lambda ns, a=(q_len, k_len, m): ns["relative_position_index"](*a))
    for seed, (q_len, k_len, d, m) in enumerate(((4, 6, 3, 2), (7, 3, 2, 1), (5, 5, 4, 6))):
        q, k, table = normal(20 + seed, q_len, d), normal(30 + seed, k_len, d), normal(40 + seed, 2 * m + 1, d)
        weights = np.abs(normal(50 + seed, q_len, k_len))
        calls.append(lambda ns, a=(q, k, table, m): ns["shaw_logits"](*a))
        calls.append(lambda ns, a=(weights, k, table, m): ns["shaw_output"](*a))
    n = np.concatenate([np.arange(-300, 301), [-5000, 5000, -1024, 1024, -1023, 1023]])
    for args in ((), (False,), (True, 64, 256), (False, 16, 32), (True, 8, 16), (False, 128, 1024), (True, 20, 20),
                 (False, 33, 50), (True, 10, 9)):
        calls.append(lambda ns, a=args: ns["t5_relative_bucket"](n.copy(), *a))
    calls.append(lambda ns: ns["t5_relative_bucket"](n[:606].reshape(-1, 3)[:, ::-1].copy(), False, 32, 128))
    for seed, (heads, q_len, k_len, bi, m, b) in enumerate(((3, 5, 8, True, 20, 16), (2, 9, 4, False, 8, 8),
                                                            (1, 1, 30, False, 128, 32), (2, 40, 40, True, 32, 12))):
        table, grad = normal(60 + seed, b, heads), normal(70 + seed, heads, q_len, k_len)
        calls.append(lambda ns, a=(table, q_len, k_len, bi, m): ns["t5_bias"](*a))
        calls.append(lambda ns, a=(grad, b, bi, m): ns["t5_bias_backward"](*a))
        calls.append(lambda ns, a=(q_len, k_len, bi, b, m): ns["t5_buckets_used"](*a))
    for args in ((512, 512, False), (512, 512, True), (300, 20, True, 16, 50), (3, 3)):
        calls.append(lambda ns, a=args: ns["t5_buckets_used"](*a))
    table, grad = normal(140, 32, 2), normal(141, 2, 30, 200)          # T5's defaults
    calls += [lambda ns: ns["t5_bias"](table, 30, 200), lambda ns: ns["t5_bias"](table, 200, 30, False),
              lambda ns: ns["t5_bias_backward"](grad, 32), lambda ns: ns["t5_bias_backward"](grad, 32, False),
              lambda ns: ns["t5_buckets_used"](150, 150, False)]
    for k_len, d in ((6, 4), (1, 2), (9, 10)):
        calls.append(lambda ns, a=(k_len, d): ns["xl_relative_encodings"](*a))
    for seed, (q_len, k_len, d) in enumerate(((3, 3, 4), (2, 6, 2), (4, 9, 6), (1, 4, 4))):
        calls.append(lambda ns, s=normal(80 + seed, q_len, k_len): ns["relative_shift"](s))
        q, k, r = normal(90 + seed, q_len, d), normal(100 + seed, k_len, d), normal(110 + seed, k_len, d)
        calls.append(lambda ns, a=(q, k, r, normal(120 + seed, d), normal(130 + seed, d)): ns["xl_relative_logits"](*a))
    return calls
