"""The relative_positions assignment's student functions: names, arguments, promised returns, answer cells
(see checks/manifest.py). relative_position_index and t5_relative_bucket are a fixed interface: held-out checks call
them by these names and signatures."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.hidden import call, normal
from posenc_autograder.checks.manifest import ARRAY, INT, INT_ARRAY, StudentFunction
from posenc_autograder.checks.relative_positions.stand_ins import bucket_stand_in, index_stand_in, shift_stand_in

# This assignment's "test cases to cover" (the specification does not cover it): the test plan maps each to the
# hidden tests that grade it (authoring.spec_bullets.all_spec_bullets finds them here).
SECTION = "Relative positions"
SPEC_BULLETS = {
    "relpos.shaw_index": (SECTION, "Shaw's clipped index for square and non-square shapes, distances below, at and "
                                   "beyond max_distance"),
    "relpos.shaw_attention": (SECTION, "Shaw's logits with a^K and outputs with a^V match the direct formula"),
    "relpos.t5_buckets": (SECTION, "T5's buckets as Hugging Face's _relative_position_bucket: keys before and after "
                                   "the query, bidirectional and causal, several num_buckets and max_distance"),
    "relpos.t5_bias": (SECTION, "T5's per-head bias (heads, q_len, k_len) from a (num_buckets, heads) table"),
    "relpos.t5_backward": (SECTION, "The bias's backward pass adds the gradient of every pair sharing a bucket"),
    "relpos.xl_encodings": (SECTION, "Transformer-XL's sinusoidal encodings of distances, its layout"),
    "relpos.xl_shift": (SECTION, "The relative shift aligns distances with keys, with memory; 0 after the query"),
    "relpos.xl_logits": (SECTION, "Transformer-XL's logits with u and v match the direct four-term sum"),
    "relpos.analysis": (SECTION, "How many buckets a layer uses, for several lengths and settings"),
    "relpos.types": (SECTION, "Integer indices and buckets, float64 arrays, an integer count; arguments unchanged"),
}

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
