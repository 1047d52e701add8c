"""Trusted reference of the rope_alibi assignment: RoPE applied to queries and keys, ALiBi's slopes and biases.
A leaf like every assignment's reference: numpy and the earlier assignment's reference only."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.positional_encoding.reference import DEFAULT_BASE, angular_frequencies


def apply_rope(x: np.ndarray, positions: np.ndarray, base: float = DEFAULT_BASE) -> np.ndarray:
    """Rotate each interleaved pair (x[..., 2i], x[..., 2i+1]) of x (shape (..., L, d)) by positions * theta_i.

    Counter-clockwise convention of RoFormer: (a, b) -> (a cos t - b sin t, a sin t + b cos t).
    """
    d = x.shape[-1]
    theta = angular_frequencies(d, base)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta[None, :]
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(np.broadcast_shapes(x.shape, angles.shape[:-1] + (d,)), dtype=np.float64)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def alibi_slopes(n_heads: int) -> np.ndarray:
    """Per-head slopes of ALiBi: the geometric sequence 2^(-8/n), 2^(-16/n), ...

    For a head count that is not a power of two, Press et al. take the slopes of the next lower
    power of two and fill up with every other slope of the next higher one.
    """
    def power_of_two_slopes(n):
        start = 2.0 ** (-8.0 / n)
        return start ** np.arange(1, n + 1)

    if n_heads <= 0:
        raise ValueError("n_heads must be positive")
    lower = 2 ** int(np.floor(np.log2(n_heads)))
    slopes = power_of_two_slopes(lower)
    if lower != n_heads:
        extra = power_of_two_slopes(2 * lower)[0::2][: n_heads - lower]
        slopes = np.concatenate([slopes, extra])
    return slopes


def alibi_bias(n_heads: int, seq_len: int) -> np.ndarray:
    """bias[h, i, j] = -slope_h * |i - j| (shape (n_heads, L, L)), added to attention scores."""
    distance = np.abs(np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :])
    return 0.0 - alibi_slopes(n_heads)[:, None, None] * distance[None, :, :]   # 0.0 - x: no negative zeros
