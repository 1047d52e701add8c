"""What the relative_positions judges share: the assignment's name, the known mistakes' diagnoses (the notebook's
visible checks give the same words inline; tests/checks/test_checks_relative_positions.py holds the two together) and
the judge of one group of calls. No hidden test here."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from posenc_autograder.checks.comparison import against_any, compare
from posenc_autograder.checks.diagnosis import known_mistakes
from posenc_autograder.checks.hidden import each_call

ASSIGNMENT = "relative_positions"

DIAGNOSES = {
    # Shaw et al.
    "index_reversed": "the distance is key minus query, j - i: yours is i - j (the table's rows run from "
                      "-max_distance to +max_distance as the key moves right of the query)",
    "index_not_shifted": "add max_distance after clipping, so the index runs from 0 to 2 * max_distance (a row "
                         "of the table), not from -max_distance",
    "index_not_clipped": "distances beyond max_distance must be clipped to it: every key farther than "
                         "max_distance shares the table's first or last row",
    "shaw_no_sqrt": "the logits are divided by sqrt(d), the relative term with the content term",
    "shaw_sqrt_content_only": "the relative term q_i . a^K_ij is divided by sqrt(d) too: the whole logit is",
    "shaw_no_values": "the output is sum_j w_ij (v_j + a^V_ij): the values v_j are missing",
    "shaw_no_table": "the output is sum_j w_ij (v_j + a^V_ij): the relative term a^V_ij is missing",
    # T5
    "bucket_direction": "relative_position is key minus query: keys after the query (positive) go to the upper "
                        "half of the buckets when bidirectional, and all share bucket 0 when causal",
    "bucket_rounded": "the log-spaced bucket is truncated toward zero (int(...), as T5's .to(torch.long)), not "
                      "rounded",
    "bucket_not_capped": "buckets beyond max_distance are capped at the direction's last bucket, "
                         "num_buckets // 2 - 1 (bidirectional) or num_buckets - 1 (causal)",
    "bucket_not_halved": "when bidirectional, each direction has half the buckets: num_buckets // 2, keys after "
                         "the query offset by it",
    "bucket_causal_abs": "in the causal case keys after the query all share bucket 0 (T5 takes -min(n, 0)), not "
                         "the bucket of their distance",
    "bucket_causal_quarter": "in the causal case all num_buckets serve one direction: exact buckets for distances "
                             "below num_buckets // 2, not num_buckets // 4",
    "bias_reversed": "the bucket of each pair is that of key minus query, j - i: yours uses i - j",
    "bias_heads_last": "the bias is (heads, q_len, k_len), heads first: move the table's last axis to the front "
                       "(np.moveaxis(..., -1, 0))",
    "backward_assign": "`grad[buckets] += ...` adds one pair per bucket only (numpy's fancy-index assignment does not "
                       "accumulate repeated indices): use np.add.at or np.bincount, so every pair sharing a bucket "
                       "counts",
    "backward_mean": "the gradient of a shared bucket is the sum over its pairs, not their mean",
    "backward_reversed": "the gradient goes to the bucket of key minus query, j - i: yours uses i - j",
    # Transformer-XL
    "encodings_interleaved": "Transformer-XL concatenates all the sines, then all the cosines "
                             "(torch.cat([sin, cos], -1)): yours interleaves them",
    "encodings_ascending": "row c encodes the distance k_len - 1 - c (Transformer-XL's pos_seq runs from k_len - 1 "
                           "down to 0): yours run upward",
    "encodings_cos_first": "the sines come first, then the cosines",
    "shift_future_kept": "the padding trick leaves values from the next row after the query: entries for keys "
                         "after the query (j > i + k_len - q_len) are 0",
    "shift_reversed": "column c of scores holds the distance k_len - 1 - c (the encodings run from the farthest "
                      "distance down to 0), so out[i, j] = scores[i, j + q_len - 1 - i]",
    "xl_uv_swapped": "u goes with the content term, (q_i + u) . k_j, and v with the position term, (q_i + v) . r",
    "xl_no_biases": "the global vectors are missing: (q_i + u) . k_j + (q_i + v) . r_(i-j), four terms",
    "xl_not_shifted": "the position term must be aligned by the relative shift: (q + v) @ r.T pairs query i with "
                      "encoding c, not with key c",
    "xl_future_kept": "entries for keys after the query (j > i + k_len - q_len) are 0",
    # the analysis question
    "used_all": "count the buckets the pairs actually use (np.unique of the buckets of every j - i), not "
                "num_buckets",
    "used_distances": "that is the number of distinct distances, q_len + k_len - 1: several distances share a bucket",
}


def diagnose_with(known: Callable[[], dict], expected):
    """compare's diagnose(): the first named mistake the answer matches (and the right answer does not); the
    mistakes are worked out only for a wrong answer."""
    return lambda actual: next((DIAGNOSES[key] for key in known_mistakes(actual, expected, known())), None)


def values_judge(function: str, group: str, readings: Callable[..., list], atol: float = 1e-10):
    """The judge of one group of calls. readings(*args, **kwargs) lists the right answers the call may give, each
    with its known wrong answers: [(expected, mistakes)], mistakes() -> {diagnosis key: wrong answer}: the
    reference's, and the same built on the probe's stand-ins (a subject may or may not call the function they
    replace). The answer passes when it is one of them; else the problem that names a cause."""
    def problem(*args, record, label, **kwargs):
        def against(reading):
            expected, mistakes = reading
            expected = np.asarray(expected, dtype=np.float64)
            return compare(record, expected, label, atol * max(1.0, float(np.max(np.abs(expected), initial=0))),
                           diagnose=diagnose_with(mistakes, expected))
        return against_any(against, *readings(*args, **kwargs))
    return each_call(function, group, problem)
