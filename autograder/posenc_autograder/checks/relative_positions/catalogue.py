"""The relative_positions assignment's catalogue: mistakes the hidden tests must catch and correct alternatives that
must keep full marks (see checks/catalogue.py).

Each mistake replaces one function of the solution; since each function is judged alone (the functions it calls
stood in for), it fails its own hidden test and its case of the contracts test only, with the points worked out by
hand from the cases below.
"""
from __future__ import annotations

from posenc_autograder.checks.catalogue import Mistake, contract_rule, stubs

INDEX = "def relative_position_index(q_len, k_len, max_distance):\n    n = np.arange(k_len)[None, :] - " \
        "np.arange(q_len)[:, None]\n    return {body}\n"
LOGITS = ("def shaw_logits(q, k, table_k, max_distance):\n"
          "    index = relative_position_index(len(q), len(k), max_distance)\n"
          "    relative = np.take_along_axis(q @ table_k.T, index, axis=1)\n    return {body}\n")
OUTPUT = ("def shaw_output(weights, v, table_v, max_distance):\n"
          "    index = relative_position_index(*weights.shape, max_distance)\n"
          "    per_row = np.zeros((weights.shape[0], len(table_v)))\n"
          "    np.add.at(per_row, (np.repeat(np.arange(weights.shape[0]), weights.shape[1]), index.ravel()), "
          "weights.ravel())\n    return {body}\n")
BUCKET = '''
def t5_relative_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    n = {sign}np.asarray(relative_position).astype(np.int64)
    buckets = np.zeros(n.shape, dtype=np.int64)
    if bidirectional:
        {halve}
        buckets += (n > 0) * num_buckets
        distance = np.abs(n)
    else:
        distance = {causal}
    max_exact = {max_exact}
    logs = np.log(np.maximum(distance, 1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + {rounding}(logs * (num_buckets - max_exact)).astype(np.int64)
    {cap}
    return buckets + np.where(distance < max_exact, distance, large)
'''


def bucket(sign="", halve="num_buckets //= 2", causal="-np.minimum(n, 0)", max_exact="num_buckets // 2",
           rounding="", cap="large = np.minimum(large, num_buckets - 1)"):
    return BUCKET.format(sign=sign, halve=halve, causal=causal, max_exact=max_exact, rounding=rounding, cap=cap)


BIAS = ("def t5_bias(table, q_len, k_len, bidirectional=True, max_distance=128):\n"
        "    n = {distance}\n"
        "    buckets = t5_relative_bucket(n, bidirectional, table.shape[0], max_distance)\n    return {body}\n")
FORWARD = "np.arange(k_len)[None, :] - np.arange(q_len)[:, None]"
BACKWARD = ("def t5_bias_backward(grad_bias, num_buckets, bidirectional=True, max_distance=128):\n"
            "    heads, q_len, k_len = grad_bias.shape\n"
            "    n = {distance}\n"
            "    buckets = t5_relative_bucket(n, bidirectional, num_buckets, max_distance)\n"
            "    grad = np.zeros((num_buckets, heads))\n    {body}\n    return grad\n")
ADD_AT = "np.add.at(grad, buckets.ravel(), grad_bias.reshape(heads, -1).T)"
ENCODINGS = ("def xl_relative_encodings(k_len, d_model):\n"
             "    w = 1.0 / 10000.0 ** (np.arange(0, d_model, 2) / d_model)\n"
             "    p = {positions}[:, None] * w[None, :]\n    {body}\n")
DESCENDING = "np.arange(k_len - 1, -1, -1.0)"
SHIFT = ("def relative_shift(scores):\n    q_len, k_len = scores.shape\n"
         "    padded = np.concatenate([np.zeros((q_len, 1)), scores], axis=1)\n"
         "    shifted = padded.reshape(k_len + 1, q_len)[1:].reshape(q_len, k_len)\n    {body}\n")
XL = ("def xl_relative_logits(q, k, r, u, v):\n"
      "    sees = np.arange(len(k))[None, :] <= np.arange(len(q))[:, None] + (len(k) - len(q))\n    return {body}\n")

# Points lost with partial credit: floor(2 * points * passed / cases) / 2 kept, plus the function's case of the
# contracts test (10 functions for 2 points: losing one of 10 keeps floor(2 * 2 * 9 / 10) / 2 = 1.5, so 0.5 lost).
# Cases: hidden_relative_position_index 7 (the fourth, max_distance 10 in 6 x 6, clips nothing; the fifth,
# max_distance 0, clips everything; the sixth and seventh have one query or one key); shaw_logits and shaw_output 4
# each; t5_relative_bucket 7 (the 2nd, 4th and 6th causal); t5_bias and t5_bias_backward 4 each (the 2nd and 4th
# causal; the 4th a single query); t5_buckets_used 6; xl_relative_encodings 5; relative_shift 5 (the 4th a single
# query, nothing after it); xl_relative_logits 4 (the 4th a single query).
MISTAKES = [
    Mistake("index: query minus key", INDEX.format(body="np.clip(-n, -max_distance, max_distance) + max_distance"),
            "hidden_relative_position_index", "key minus query", points_lost=2.5),   # max_distance 0 alone passes
    # right only with max_distance 0 (all zeros either way): 1 of 7 kept -> floor(4/7)/2 = 0 kept
    Mistake("index: not shifted by max_distance", INDEX.format(body="np.clip(n, -max_distance, max_distance)"),
            "hidden_relative_position_index", "add max_distance after clipping", points_lost=2.5),
    # right where nothing is clipped: the fourth case only -> floor(4/7)/2 = 0 kept
    Mistake("index: not clipped", INDEX.format(body="n + max_distance"),
            "hidden_relative_position_index", "must be clipped", points_lost=2.5),
    Mistake("index: float64 array", INDEX.format(body="np.clip(n, -max_distance, max_distance) + max_distance + 0.0"),
            "hidden_relative_positions_contracts", "expected an integer numpy ndarray", points_lost=0.5),
    Mistake("Shaw logits: no sqrt(d)", LOGITS.format(body="q @ k.T + relative"), "hidden_shaw_logits",
            "divided by sqrt(d)", points_lost=2.5),
    Mistake("Shaw logits: sqrt(d) on the content term only", LOGITS.format(body="q @ k.T / np.sqrt(q.shape[1]) + "
                                                                                "relative"),
            "hidden_shaw_logits", "divided by sqrt(d) too", points_lost=2.5),
    Mistake("Shaw output: values left out", OUTPUT.format(body="per_row @ table_v"), "hidden_shaw_output",
            "the values v_j are missing", points_lost=2.5),
    Mistake("Shaw output: a^V left out", OUTPUT.format(body="weights @ v"), "hidden_shaw_output",
            "the relative term a^V_ij is missing", points_lost=2.5),
    Mistake("T5 buckets: query minus key", bucket(sign="-"), "hidden_t5_relative_bucket", "key minus query",
            points_lost=3.5),
    Mistake("T5 buckets: rounded instead of truncated", bucket(rounding="np.round"), "hidden_t5_relative_bucket",
            "truncated toward zero", points_lost=3.5),
    Mistake("T5 buckets: not capped", bucket(cap=""), "hidden_t5_relative_bucket", "capped at the direction's",
            points_lost=3.5),
    # the causal cases pass: 3 of 7 -> floor(18/7)/2 = 1 kept
    Mistake("T5 buckets: num_buckets not halved", bucket(halve=""), "hidden_t5_relative_bucket",
            "each direction has half the buckets", points_lost=2.5),
    # the bidirectional cases pass: 4 of 7 -> floor(24/7)/2 = 1.5 kept
    Mistake("T5 buckets: causal distance as |n|", bucket(causal="np.abs(n)"), "hidden_t5_relative_bucket",
            "keys after the query all share bucket 0", points_lost=2.0),
    Mistake("T5 buckets: causal max_exact num_buckets // 4", bucket(
        max_exact="num_buckets // 2 if bidirectional else num_buckets // 4"),
            "hidden_t5_relative_bucket", "not num_buckets // 4", points_lost=1.5),
    # the causal cases with 32 and 128 buckets fail; 16 buckets and max_distance 32 happen to give the same buckets
    # (5 of 7 pass: floor(30/7)/2 = 2 kept)
    Mistake("T5 buckets: float64 array", bucket(cap="large = np.minimum(large, num_buckets - 1).astype(float)"),
            "hidden_relative_positions_contracts", "expected an integer numpy ndarray", points_lost=0.5),
    Mistake("T5 bias: query minus key", BIAS.format(distance="-(" + FORWARD + ")",
                                                    body="np.moveaxis(table[buckets], -1, 0)"),
            "hidden_t5_bias", "key minus query", points_lost=2.5),
    Mistake("T5 bias: heads last", BIAS.format(distance=FORWARD, body="table[buckets].astype(float)"),
            "hidden_t5_bias", "heads first", points_lost=2.5),
    Mistake("T5 backward: grad[buckets] += (repeats lost)", BACKWARD.format(
        distance=FORWARD, body="grad[buckets.ravel()] += grad_bias.reshape(heads, -1).T"),
            "hidden_t5_bias_backward", "does not accumulate repeated indices", points_lost=2.5),
    Mistake("T5 backward: mean per bucket", BACKWARD.format(
        distance=FORWARD, body=ADD_AT + "\n    grad /= np.maximum(np.bincount(buckets.ravel(), "
                                        "minlength=num_buckets), 1)[:, None]"),
            "hidden_t5_bias_backward", "not their mean", points_lost=2.5),
    Mistake("T5 backward: query minus key", BACKWARD.format(distance="-(" + FORWARD + ")", body=ADD_AT),
            "hidden_t5_bias_backward", "key minus query", points_lost=2.5),
    Mistake("XL encodings: sin and cos interleaved", ENCODINGS.format(
        positions=DESCENDING, body="out = np.empty((k_len, d_model))\n    out[:, 0::2], out[:, 1::2] = np.sin(p), "
                                   "np.cos(p)\n    return out"),
            "hidden_xl_relative_encodings", "yours interleaves them", points_lost=1.5),
    Mistake("XL encodings: distances ascending", ENCODINGS.format(
        positions="np.arange(k_len, dtype=float)", body="return np.concatenate([np.sin(p), np.cos(p)], axis=1)"),
            "hidden_xl_relative_encodings", "yours run upward", points_lost=1.5),   # one row (k_len 1) alone passes
    Mistake("relative shift: keys after the query kept", SHIFT.format(body="return shifted"),
            "hidden_relative_shift", "padding trick", points_lost=2.5),   # the single query alone passes
    Mistake("XL logits: u and v swapped", XL.format(
        body="np.where(sees, (q + v) @ k.T + relative_shift((q + u) @ r.T), 0.0)"),
            "hidden_xl_relative_logits", "u goes with the content term", points_lost=2.5),
    Mistake("XL logits: no u and v", XL.format(body="np.where(sees, q @ k.T + relative_shift(q @ r.T), 0.0)"),
            "hidden_xl_relative_logits", "the global vectors are missing", points_lost=2.5),
    Mistake("XL logits: not shifted", XL.format(body="np.where(sees, (q + u) @ k.T + (q + v) @ r.T, 0.0)"),
            "hidden_xl_relative_logits", "aligned by the relative shift", points_lost=2.0),
    # a single query with its memory reads encoding j for key j either way: 1 of 4 passes, 0.5 kept
    Mistake("analysis: num_buckets returned", "def t5_buckets_used(q_len, k_len, bidirectional=True, "
                                              "num_buckets=32, max_distance=128):\n    return int(num_buckets)\n",
            "hidden_t5_buckets_used", "not num_buckets", points_lost=1.5),
    # right only for 2,048 causal tokens, which use all 32 buckets: 1 of 6, nothing kept
    Mistake("analysis: distances counted", "def t5_buckets_used(q_len, k_len, bidirectional=True, num_buckets=32, "
                                           "max_distance=128):\n    return q_len + k_len - 1\n",
            "hidden_t5_buckets_used", "number of distinct distances", points_lost=1.5),
    Mistake("analysis: a float count", "_used = t5_buckets_used\n"
                                         "def t5_buckets_used(*args, **kwargs):\n"
                                         "    return np.float64(_used(*args, **kwargs))\n",
            "hidden_relative_positions_contracts", "expected an integer", points_lost=0.5),
]

UNFINISHED = [
    Mistake("stub: relative_position_index", stubs("relative_position_index"), "hidden_relative_position_index",
            "template stub", points_lost=2.5),          # the logits and the output run on the stand-in index
    Mistake("stub: t5_relative_bucket", stubs("t5_relative_bucket"), "hidden_t5_relative_bucket", "template stub",
            points_lost=3.5),
    Mistake("stub: relative_shift", stubs("relative_shift"), "hidden_relative_shift", "template stub",
            points_lost=2.5),
    Mistake("stub: Part 1 (Shaw)", stubs("relative_position_index", "shaw_logits", "shaw_output"),
            "hidden_shaw_logits", "template stub",
            also_fails=("hidden_relative_position_index", "hidden_shaw_output"), points_lost=7.0),
    # 2 + 2 + 2, and 3 of the 10 contracts: floor(4 * 7 / 10) / 2 = 1 kept, 1 lost
]

MISTAKES = contract_rule(MISTAKES + UNFINISHED, "hidden_relative_positions_contracts")

ALTERNATIVES = {
    "index with loops": '''
def relative_position_index(q_len, k_len, max_distance):
    out = np.zeros((q_len, k_len), dtype=int)
    for i in range(q_len):
        for j in range(k_len):
            out[i, j] = max(-max_distance, min(max_distance, j - i)) + max_distance
    return out
''',
    "Shaw with the (q_len, k_len, d) tensor": '''
def shaw_logits(q, k, table_k, max_distance):
    a = table_k[relative_position_index(len(q), len(k), max_distance)]          # (q_len, k_len, d)
    return np.einsum("id,ijd->ij", q, k[None, :, :] + a) / np.sqrt(q.shape[1])
''',
    "Shaw output by one-hot counts": '''
def shaw_output(weights, v, table_v, max_distance):
    index = relative_position_index(*weights.shape, max_distance)
    one_hot = index[:, :, None] == np.arange(len(table_v))[None, None, :]
    return weights @ v + np.einsum("ij,ijr->ir", weights, one_hot) @ table_v
''',
    "T5 buckets as Hugging Face's code, float32 logs": '''
import math
def t5_relative_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    relative_position = np.asarray(relative_position, dtype=np.int64)
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).astype(np.int64) * num_buckets
        relative_position = np.abs(relative_position)
    else:
        relative_position = -np.minimum(relative_position, np.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    with np.errstate(divide="ignore"):
        relative_position_if_large = max_exact + (
            np.log(relative_position.astype(np.float32) / max_exact) / np.float32(math.log(max_distance / max_exact))
            * (num_buckets - max_exact)).astype(np.int64)
    relative_position_if_large = np.minimum(relative_position_if_large, num_buckets - 1)
    return relative_buckets + np.where(is_small, relative_position, relative_position_if_large)
''',
    "T5 backward with bincount per head": '''
def t5_bias_backward(grad_bias, num_buckets, bidirectional=True, max_distance=128):
    heads, q_len, k_len = grad_bias.shape
    n = np.arange(k_len)[None, :] - np.arange(q_len)[:, None]
    b = t5_relative_bucket(n, bidirectional, num_buckets, max_distance).ravel()
    return np.stack([np.bincount(b, weights=grad_bias[h].ravel(), minlength=num_buckets) for h in range(heads)],
                    axis=1)
''',
    "relative shift by indexing": '''
def relative_shift(scores):
    q_len, k_len = scores.shape
    out = np.zeros((q_len, k_len))
    for i in range(q_len):
        for j in range(i + k_len - q_len + 1):
            out[i, j] = scores[i, j + q_len - 1 - i]
    return out
''',
    "XL logits as the four terms": '''
def xl_relative_logits(q, k, r, u, v):
    sees = np.arange(len(k))[None, :] <= np.arange(len(q))[:, None] + (len(k) - len(q))
    a, c = q @ k.T, (u @ k.T)[None, :]
    b, d = relative_shift(q @ r.T), relative_shift(np.broadcast_to(v @ r.T, (len(q), len(r))).copy())
    return np.where(sees, a + b + c + d, 0.0)
''',
}
