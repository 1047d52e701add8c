"""The relative_positions assignment's student functions: names, arguments, promised returns, answer cells
(see checks/manifest.py). relative_position_index and t5_relative_bucket are a fixed interface: held-out checks call
them by these names and signatures."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.base import call, normal
from posenc_autograder.checks.manifest import ARRAY, INT, INT_ARRAY, StudentFunction
from posenc_autograder.checks.relative_positions.stand_ins import bucket_stand_in, index_stand_in, shift_stand_in

SHAW = (4, 6, 2)                 # the contracts test's q_len, k_len, max_distance
D, HEADS, BUCKETS = 4, 3, 8


def _index():
    q_len, k_len, m = SHAW
    return {"relative_position_index": index_stand_in(
        {SHAW: (np.arange(q_len * k_len).reshape(q_len, k_len) * 7) % (2 * m + 1)})}


def _bucket():
    return {"t5_relative_bucket": bucket_stand_in(5, 3)}


FUNCTIONS = (
    StudentFunction("relative_position_index", ("q_len", "k_len", "max_distance"), INT_ARRAY, cell="shaw",
                    contract=lambda: call(*SHAW)),
    StudentFunction("shaw_logits", ("q", "k", "table_k", "max_distance"), ARRAY, cell="shaw",
                    contract=lambda: call(normal(601, (4, D)), normal(602, (6, D)), normal(603, (5, D)), 2),
                    stand_ins=_index),
    StudentFunction("shaw_output", ("weights", "v", "table_v", "max_distance"), ARRAY, cell="shaw",
                    contract=lambda: call(np.abs(normal(604, (4, 6))), normal(605, (6, D)), normal(606, (5, D)), 2),
                    stand_ins=_index),
    StudentFunction("t5_relative_bucket", ("relative_position", "bidirectional", "num_buckets", "max_distance"),
                    INT_ARRAY, cell="t5",
                    contract=lambda: call((np.arange(-6, 6).reshape(3, 4) * 5).tolist(), True, BUCKETS, 20)),
    StudentFunction("t5_bias", ("table", "q_len", "k_len", "bidirectional", "max_distance"), ARRAY, cell="t5",
                    contract=lambda: call(normal(607, (BUCKETS, HEADS)), 4, 6, False, 20), stand_ins=_bucket),
    StudentFunction("t5_bias_backward", ("grad_bias", "num_buckets", "bidirectional", "max_distance"), ARRAY,
                    cell="t5", contract=lambda: call(normal(608, (HEADS, 4, 6)), BUCKETS, True, 20),
                    stand_ins=_bucket),
    StudentFunction("xl_relative_encodings", ("k_len", "d_model"), ARRAY, cell="xl", contract=lambda: call(6, D)),
    StudentFunction("relative_shift", ("scores",), ARRAY, cell="xl", contract=lambda: call(normal(609, (4, 6)))),
    StudentFunction("xl_relative_logits", ("q", "k", "r", "u", "v"), ARRAY, cell="xl",
                    contract=lambda: call(normal(610, (4, D)), normal(611, (6, D)), normal(612, (6, D)),
                                          normal(613, D), normal(614, D)),
                    stand_ins=lambda: {"relative_shift": shift_stand_in(1)}),
    StudentFunction("t5_buckets_used", ("q_len", "k_len", "bidirectional", "num_buckets", "max_distance"), INT,
                    cell="analysis", contract=lambda: call(10, 12, True, BUCKETS, 20), stand_ins=_bucket),
)
