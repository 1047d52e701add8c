"""Trusted reference of the relative_positions assignment: Shaw et al.'s clipped relative representations, T5's
relative buckets and per-head bias with its backward pass, Transformer-XL's relative logits and relative shift.
A leaf like every assignment's reference: numpy and the standard library only.

Distances are key minus query, j - i, as in Shaw et al. and T5 (Hugging Face's memory_position - context_position);
Transformer-XL indexes its encodings by the query-to-key distance i - j, which is never negative under its mask.
"""
from __future__ import annotations

import math

import numpy as np


def relative_position_index(q_len: int, k_len: int, max_distance: int) -> np.ndarray:
    """Shaw et al.'s clipped index: clip(j - i, -max_distance, max_distance) + max_distance, shape (q_len, k_len),
    a row of the (2 * max_distance + 1)-row tables a^K and a^V."""
    distance = np.arange(k_len)[None, :] - np.arange(q_len)[:, None]
    return np.clip(distance, -max_distance, max_distance) + max_distance


def shaw_logits(q: np.ndarray, k: np.ndarray, table_k: np.ndarray, max_distance: int) -> np.ndarray:
    """e_ij = q_i . (k_j + a^K_ij) / sqrt(d): q (q_len, d), k (k_len, d), table_k (2 * max_distance + 1, d).
    The relative term is q @ table_k.T (q_len, 2m + 1) read at each pair's index: no (q_len, k_len, d) tensor."""
    return shaw_logits_at(q, k, table_k, relative_position_index(len(q), len(k), max_distance))


def shaw_logits_at(q, k, table_k, index) -> np.ndarray:
    """shaw_logits with the table rows `index` (q_len, k_len) given."""
    relative = np.take_along_axis(q @ table_k.T, np.asarray(index, dtype=np.int64), axis=1)
    return (q @ k.T + relative) / np.sqrt(q.shape[-1])


def shaw_output(weights: np.ndarray, v: np.ndarray, table_v: np.ndarray, max_distance: int) -> np.ndarray:
    """z_i = sum_j w_ij (v_j + a^V_ij): weights (q_len, k_len), v (k_len, d), table_v (2 * max_distance + 1, d).
    Each row's weights are summed per index first (q_len, 2m + 1), then multiplied by the table."""
    q_len, k_len = weights.shape
    return shaw_output_at(weights, v, table_v, relative_position_index(q_len, k_len, max_distance))


def shaw_output_at(weights, v, table_v, index) -> np.ndarray:
    """shaw_output with the table rows `index` (q_len, k_len) given."""
    q_len, k_len = weights.shape
    per_index = np.zeros((q_len, len(table_v)))
    np.add.at(per_index, (np.repeat(np.arange(q_len), k_len), np.asarray(index, dtype=np.int64).ravel()),
              weights.ravel())
    return weights @ v + per_index @ table_v


def t5_relative_bucket(relative_position, bidirectional: bool = True, num_buckets: int = 32,
                       max_distance: int = 128) -> np.ndarray:
    """T5's bucket of each relative position (key minus query), as Hugging Face's _relative_position_bucket.

    Bidirectional: half the buckets per direction, keys after the query in the upper half. Causal: keys after the
    query share bucket 0. Of a direction's n buckets, distances below n // 2 get their own; larger ones are
    log-spaced up to max_distance (truncated toward zero) and capped at the direction's last bucket."""
    relative_position = np.asarray(relative_position, dtype=np.int64)
    buckets = np.zeros(relative_position.shape, dtype=np.int64)
    if bidirectional:
        num_buckets //= 2
        buckets += (relative_position > 0) * num_buckets
        distance = np.abs(relative_position)
    else:
        distance = -np.minimum(relative_position, 0)
    max_exact = num_buckets // 2
    is_small = distance < max_exact
    scaled = np.log(np.maximum(distance, 1) / max_exact) / math.log(max_distance / max_exact)
    large = max_exact + (scaled * (num_buckets - max_exact)).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(is_small, distance, large)


def t5_distances(q_len: int, k_len: int) -> np.ndarray:
    """key_position - query_position for every pair, shape (q_len, k_len)."""
    return np.arange(k_len)[None, :] - np.arange(q_len)[:, None]


def t5_bias(table: np.ndarray, q_len: int, k_len: int, bidirectional: bool = True,
            max_distance: int = 128) -> np.ndarray:
    """bias[h, i, j] = table[bucket(j - i), h]: table (num_buckets, heads) -> (heads, q_len, k_len)."""
    return bias_from_buckets(table, t5_relative_bucket(t5_distances(q_len, k_len), bidirectional, len(table),
                                                       max_distance))


def bias_from_buckets(table, buckets) -> np.ndarray:
    """(heads, q_len, k_len): each pair's bucket row of the table, heads first."""
    return np.moveaxis(np.asarray(table, dtype=np.float64)[np.asarray(buckets, dtype=np.int64)], -1, 0)


def t5_bias_backward(grad_bias: np.ndarray, num_buckets: int, bidirectional: bool = True,
                     max_distance: int = 128) -> np.ndarray:
    """The gradient of the table, (num_buckets, heads), given that of the bias, (heads, q_len, k_len): every pair's
    gradient added into its bucket's row (a scatter-add; pairs sharing a bucket all count)."""
    _, q_len, k_len = grad_bias.shape
    return scatter_into_buckets(grad_bias, t5_relative_bucket(t5_distances(q_len, k_len), bidirectional,
                                                              num_buckets, max_distance), num_buckets)


def scatter_into_buckets(grad_bias, buckets, num_buckets: int) -> np.ndarray:
    """(num_buckets, heads): grad_bias[h, i, j] added into row buckets[i, j] (np.add.at counts repeats)."""
    heads = grad_bias.shape[0]
    grad = np.zeros((num_buckets, heads))
    np.add.at(grad, np.asarray(buckets, dtype=np.int64).ravel(),
              np.asarray(grad_bias, dtype=np.float64).reshape(heads, -1).T)
    return grad


def pair_distances(q_len: int, k_len: int) -> np.ndarray:
    """Each key_position - query_position a q_len x k_len attention holds, once: -(q_len - 1) .. k_len - 1."""
    return np.arange(1 - q_len, k_len)


def t5_buckets_used(q_len: int, k_len: int, bidirectional: bool = True, num_buckets: int = 32,
                    max_distance: int = 128) -> int:
    """How many distinct buckets the pairs of a q_len x k_len attention use (the analysis question). A pair's
    bucket depends on its distance alone, so the distances' buckets are the pairs': q_len + k_len - 1 values where
    every pair made q_len * k_len (a 2048 x 2048 layer's np.unique took ~0.3 CPU-s)."""
    return int(np.unique(t5_relative_bucket(pair_distances(q_len, k_len), bidirectional, num_buckets,
                                            max_distance)).size)


def visible_mask(q_len: int, k_len: int) -> np.ndarray:
    """(q_len, k_len): True where query i may see key j, j <= i + k_len - q_len (the memory comes first)."""
    return np.arange(k_len)[None, :] <= np.arange(q_len)[:, None] + (k_len - q_len)


def xl_relative_encodings(k_len: int, d_model: int) -> np.ndarray:
    """Transformer-XL's sinusoidal encodings of the distances k_len - 1, ..., 1, 0 (row c: distance k_len - 1 - c),
    laid out as its code does: the sines of every frequency, then the cosines, inv_freq = 10000^(-2i/d)."""
    inv_freq = np.exp(-np.arange(0, d_model, 2) / d_model * math.log(10000.0))
    angles = np.arange(k_len - 1, -1, -1, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)


def relative_shift(scores: np.ndarray) -> np.ndarray:
    """Transformer-XL's relative shift: scores[i, c] pairs query i with the encoding of distance k_len - 1 - c; the
    result pairs it with key j, out[i, j] = scores[i, j + q_len - 1 - i], for the keys it may see (j <= i + k_len -
    q_len, memory first) and 0 for the keys after it."""
    q_len, k_len = scores.shape
    rows, cols = np.arange(q_len)[:, None], np.arange(k_len)[None, :]
    source = np.clip(cols + q_len - 1 - rows, 0, k_len - 1)
    return np.where(visible_mask(q_len, k_len), np.take_along_axis(np.asarray(scores, dtype=np.float64), source,
                                                                    axis=1), 0.0)


def xl_relative_logits(q: np.ndarray, k: np.ndarray, r: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Transformer-XL's logits (q_len, k_len): (q_i + u) . k_j + (q_i + v) . r_(i - j), the four terms (a) q.k,
    (b) q.r, (c) u.k, (d) v.r, with r (k_len, d) the projected encodings of distances k_len - 1 .. 0; 0 for the keys
    after the query. The second product is computed against every encoding, then aligned by the relative shift."""
    return xl_logits_with(q, k, r, u, v, relative_shift)


def xl_logits_with(q, k, r, u, v, shift) -> np.ndarray:
    """xl_relative_logits with the relative shift `shift` given."""
    return np.where(visible_mask(len(q), len(k)), (q + u) @ k.T + shift((q + v) @ r.T), 0.0)


def xl_direct_logits(q, k, r, u, v) -> np.ndarray:
    """The same logits as the direct four-term sum, pair by pair (the tests' check of the shift)."""
    q_len, k_len = len(q), len(k)
    out = np.zeros((q_len, k_len))
    for i in range(q_len):
        for j in range(i + k_len - q_len + 1):
            encoding = r[k_len - 1 - (i + k_len - q_len - j)]
            out[i, j] = q[i] @ k[j] + q[i] @ encoding + u @ k[j] + v @ encoding
    return out
