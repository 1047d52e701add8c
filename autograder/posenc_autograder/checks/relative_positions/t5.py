"""Hidden tests of Part 2, T5's relative buckets, its per-head bias and the bias's backward pass, and of Part 4, the
analysis question (how many buckets a layer uses). The bias, its gradient and the count are judged with buckets
given by the grader (a stand-in for the student's t5_relative_bucket), so a wrong bucketing costs its own test."""
from __future__ import annotations

import math

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.hidden import HiddenTest, References, call, calling, normal, remembered
from posenc_autograder.checks.relative_positions import reference
from posenc_autograder.checks.relative_positions.common import ASSIGNMENT, values_judge
from posenc_autograder.checks.relative_positions.stand_ins import bucket, bucket_stand_in
from posenc_autograder.probes.helpers import call_each

ref = References(reference)
BUCKET_FN, BIAS_FN, BACKWARD_FN, USED_FN = "t5_relative_bucket", "t5_bias", "t5_bias_backward", "t5_buckets_used"


# --- the buckets --------------------------------------------------------------------------------------

def _bucket_rule(relative_position, bidirectional=True, num_buckets=32, max_distance=128, *, direction=1,
                 rounding=np.trunc, cap=True, halve=True, causal_abs=False, causal_exact=None):
    """T5's rule with each of its choices exposed, so that every catalogued mistake is one changed choice."""
    n = direction * np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros(n.shape, dtype=np.int64)
    if bidirectional:
        if halve:
            num_buckets //= 2
        buckets += (n > 0) * num_buckets
        distance = np.abs(n)
    else:
        distance = np.abs(n) if causal_abs else -np.minimum(n, 0)
    max_exact = num_buckets // 2 if bidirectional or causal_exact is None else causal_exact
    scaled = np.log(np.maximum(distance, 1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + rounding(scaled * (num_buckets - max_exact)).astype(np.int64)
    if cap:
        large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(distance < max_exact, distance, large)


def _bucket_mistakes(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    args = (relative_position, bidirectional, num_buckets, max_distance)
    return {"bucket_direction": _bucket_rule(*args, direction=-1),
            "bucket_rounded": _bucket_rule(*args, rounding=np.round),
            "bucket_not_capped": _bucket_rule(*args, cap=False),
            "bucket_not_halved": _bucket_rule(*args, halve=False),
            "bucket_causal_abs": _bucket_rule(*args, causal_abs=True),
            "bucket_causal_quarter": _bucket_rule(*args, causal_exact=num_buckets // 4)}


def _distances(seed, low, high, shape, max_distance=128):
    """Relative positions drawn per student, shuffled (the answer cannot be read off an arange): every integer of
    [low, high] near 0 and around +-max_distance that fits, the rest random in [low, high]."""
    rng = variants.rng(seed)
    size = int(np.prod(shape))
    chosen = [n for n in range(-40, 41)] + [s * (max_distance + o) for s in (-1, 1) for o in (-2, -1, 0, 1, 2)]
    chosen = [n for n in dict.fromkeys(chosen) if low <= n <= high][:size]
    drawn = np.concatenate([np.array(chosen, dtype=np.int64), rng.integers(low, high + 1, size - len(chosen))])
    return rng.permutation(drawn).reshape(shape)


def _bucket_inputs():
    """Both directions, both modes, several num_buckets and max_distance, distances below, at and far beyond
    max_distance, shapes of one, two and three axes."""
    cases = [call(_distances(201, -300, 300, (601,)).tolist()),                                 # T5's defaults
             call(_distances(202, -400, 50, (15, 30)).tolist(), False),                         # causal, defaults
             call(_distances(203, -1000, 1000, (7, 9, 11), 256).tolist(), True, 64, 256),
             call(_distances(204, -100, 60, (161,), 32).tolist(), False, 16, 32),
             call(_distances(205, -17, 17, (5, 7), 16).tolist(), True, 8, 16),                  # at max_distance
             call(_distances(206, -5000, 5, (40, 50), 1024).tolist(), bidirectional=False, num_buckets=128,
                  max_distance=1024),
             call(_distances(207, -60, 60, (121,), 20).tolist(), num_buckets=20, max_distance=20)]
    return calling(BUCKET_FN, buckets=cases)


def _bucket_readings(relative_position, *args, **kwargs):
    return [(ref.t5_relative_bucket(relative_position, *args, **kwargs),
             lambda: _bucket_mistakes(relative_position, *args, **kwargs))]


# --- the bias and its backward pass ----------------------------------------------------------------------

# (heads, q_len, k_len, bidirectional, max_distance, num_buckets): both modes, non-square, T5's defaults with keys far
# beyond max_distance (the third), a single query (whose keys all share bucket 0 when causal)
BIAS_CASES = [(4, 6, 9, True, 20, 16), (2, 10, 4, False, 8, 8), (3, 12, 150, True, 128, 32), (1, 1, 40, False, 128, 32)]
# The stand-in's buckets: (2 * n + 3 (+ 1 when causal)) mod num_buckets, half the buckets at most, so that many pairs
# share one and a count of num_buckets is never what it answers.
STAND_IN = (2, 3)


def _stand_in_buckets(q_len, k_len, bidirectional, num_buckets, max_distance):
    return bucket(bucket_stand_in(*STAND_IN))(reference.t5_distances(q_len, k_len), bidirectional, num_buckets,
                                               max_distance)


def _true_buckets(q_len, k_len, bidirectional, num_buckets, max_distance):
    return ref.t5_relative_bucket(ref.t5_distances(q_len, k_len), bidirectional, num_buckets, max_distance)


def _buckets_either(q_len, k_len, bidirectional, num_buckets, max_distance):
    """The reference's buckets and the stand-in's, each with the buckets of the reversed distance i - j."""
    args = (q_len, k_len, bidirectional, num_buckets, max_distance)
    return [(_true_buckets(*args), _true_buckets(k_len, q_len, *args[2:]).T),
            (_stand_in_buckets(*args), _stand_in_buckets(k_len, q_len, *args[2:]).T)]


def _settings(bidirectional, max_distance) -> dict:
    """The keyword arguments of a case: T5's defaults left out, so that the defaults are exercised too."""
    return {**({} if bidirectional else {"bidirectional": False}),
            **({} if max_distance == 128 else {"max_distance": max_distance})}


def _bias_inputs():
    inputs = calling(BIAS_FN, biases=[call(normal(211 + i, (b, h)), q, k, **_settings(bi, m))
                                      for i, (h, q, k, bi, m, b) in enumerate(BIAS_CASES)])
    inputs["stand_ins"] = {BUCKET_FN: bucket_stand_in(*STAND_IN)}
    return inputs


def _judge_bias(inputs, obs):
    def readings(table, q_len, k_len, bidirectional=True, max_distance=128):
        def mistakes(right, reversed_):
            return {"bias_reversed": reference.bias_from_buckets(table, reversed_),
                    "bias_heads_last": np.moveaxis(reference.bias_from_buckets(table, right), 0, -1)}
        return [(reference.bias_from_buckets(table, right), lambda r=right, w=wrong: mistakes(r, w))
                for right, wrong in _buckets_either(q_len, k_len, bidirectional, len(table), max_distance)]
    return values_judge(BIAS_FN, "biases", readings)(inputs, obs)


def _backward_inputs():
    inputs = calling(BACKWARD_FN, gradients=[call(normal(221 + i, (h, q, k)), b, **_settings(bi, m))
                                             for i, (h, q, k, bi, m, b) in enumerate(BIAS_CASES)])
    inputs["stand_ins"] = {BUCKET_FN: bucket_stand_in(*STAND_IN)}
    return inputs


def _assigned(grad_bias, buckets, num_buckets):
    """What `grad[buckets] += ...` leaves: each bucket's row gets the last of its pairs only."""
    heads = grad_bias.shape[0]
    grad = np.zeros((num_buckets, heads))
    grad[buckets.ravel()] += grad_bias.reshape(heads, -1).T
    return grad


def _judge_backward(inputs, obs):
    def readings(grad_bias, num_buckets, bidirectional=True, max_distance=128):
        _, q_len, k_len = grad_bias.shape

        def mistakes(right, reversed_):
            total = reference.scatter_into_buckets(grad_bias, right, num_buckets)
            counts = np.bincount(right.ravel(), minlength=num_buckets)[:, None]
            return {"backward_assign": _assigned(grad_bias, right, num_buckets),
                    "backward_mean": total / np.maximum(counts, 1),
                    "backward_reversed": reference.scatter_into_buckets(grad_bias, reversed_, num_buckets)}
        return [(reference.scatter_into_buckets(grad_bias, right, num_buckets),
                 lambda r=right, w=wrong: mistakes(r, w))
                for right, wrong in _buckets_either(q_len, k_len, bidirectional, num_buckets, max_distance)]
    return values_judge(BACKWARD_FN, "gradients", readings)(inputs, obs)


# --- Part 4: how many buckets a layer uses ------------------------------------------------------------------

# (q_len, k_len, bidirectional, num_buckets, max_distance): long and short layers, both modes, settings where every
# bucket is reached and where some never are; a single pair. None is the notebook's own example.
USED_CASES = [(2048, 2048, False, 32, 128), (1024, 1024, True, 32, 128), (64, 64, True, 32, 128),
              (100, 300, True, 16, 50), (40, 40, False, 64, 512), (1, 1, False, 32, 128)]


@remembered
def _stand_in_buckets_used(q_len, k_len, bidirectional, num_buckets, max_distance) -> int:
    """The count a layer gets with the grader's stand-in buckets, kept by its settings as the reference's are: like
    the reference's, the buckets of each distance once (the stand-in too buckets a distance alone)."""
    return int(np.unique(bucket(bucket_stand_in(*STAND_IN))(reference.pair_distances(q_len, k_len), bidirectional,
                                                             num_buckets, max_distance)).size)


def _used_readings(q_len, k_len, bidirectional=True, num_buckets=32, max_distance=128):
    args = (q_len, k_len, bidirectional, num_buckets, max_distance)
    stand_in = _stand_in_buckets_used(*args)
    wrong = {"used_all": float(num_buckets), "used_distances": float(q_len + k_len - 1)}
    return [(float(ref.t5_buckets_used(*args)), lambda: wrong), (float(stand_in), lambda: wrong)]


def _used_inputs():
    inputs = calling(USED_FN, counts=[call(q, k, **_settings(bi, m), **({} if b == 32 else {"num_buckets": b}))
                                      for q, k, bi, b, m in USED_CASES])
    inputs["stand_ins"] = {BUCKET_FN: bucket_stand_in(*STAND_IN)}
    return inputs


TESTS = [
    HiddenTest(id="hidden_t5_relative_bucket", subjects=(BUCKET_FN,), partial=True, assignment=ASSIGNMENT,
               bullets=("relpos.t5_buckets",), points=3,
               answer_cell="t5",
               title="T5's buckets of keys before and after the query, bidirectional and causal, several num_buckets "
                     "and max_distance, distances below, at and far beyond max_distance, arrays of 1 to 3 axes",
               inputs=_bucket_inputs, probe=call_each, judge=values_judge(BUCKET_FN, "buckets", _bucket_readings)),
    HiddenTest(id="hidden_t5_bias", subjects=(BIAS_FN,), depends=(BUCKET_FN,), partial=True, assignment=ASSIGNMENT,
               bullets=("relpos.t5_bias",), points=2, answer_cell="t5",
               title="per-head biases (heads, q_len, k_len) of both modes and non-square shapes, with buckets given "
                     "by the grader",
               inputs=_bias_inputs, probe=call_each, judge=_judge_bias),
    HiddenTest(id="hidden_t5_bias_backward", subjects=(BACKWARD_FN,), depends=(BUCKET_FN,), partial=True,
               assignment=ASSIGNMENT, bullets=("relpos.t5_backward",), points=2, answer_cell="t5",
               title="the table's gradient, every pair sharing a bucket added, with buckets given by the grader",
               inputs=_backward_inputs, probe=call_each, judge=_judge_backward),
    HiddenTest(id="hidden_t5_buckets_used", subjects=(USED_FN,), depends=(BUCKET_FN,), partial=True,
               assignment=ASSIGNMENT, bullets=("relpos.analysis",), points=1, answer_cell="analysis",
               title="the analysis: how many buckets layers of several lengths and settings use",
               inputs=_used_inputs, probe=call_each, judge=values_judge(USED_FN, "counts", _used_readings)),
]
