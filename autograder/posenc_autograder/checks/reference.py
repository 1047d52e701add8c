"""Trusted reference implementations of everything the course asks students to build.

The grader computes every expected value with it, outside the student's process. The chapters
write their own short versions on the page (a downloaded chapter needs only numpy and
matplotlib); the explorable figures' browser tests compare against this module.
"""
from __future__ import annotations

import numpy as np

DEFAULT_BASE = 10000.0
LEARNED_INIT_STD = 0.02


def angular_frequencies(d_model: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """omega_i = base**(-2i/d_model) for i = 0 .. d_model/2 - 1, computed in log space."""
    _require_even(d_model)
    i = np.arange(d_model // 2, dtype=np.float64)
    return np.exp(-2.0 * i / d_model * np.log(base))


def sinusoidal_positional_encoding(seq_len: int, d_model: int, base: float = DEFAULT_BASE,
                                   first_position: int = 0) -> np.ndarray:
    """PE[p, 2i] = sin(p * omega_i), PE[p, 2i+1] = cos(p * omega_i) for p = first_position, ...

    Returns a float64 array of shape (seq_len, d_model); sin and cos are interleaved.
    """
    omega = angular_frequencies(d_model, base)
    positions = np.arange(first_position, first_position + seq_len, dtype=np.float64)[:, None]
    angles = positions * omega[None, :]
    pe = np.empty((seq_len, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe


class SinusoidalPositionalEncoding:
    """A fixed (non-trainable) table of max_seq_len encodings, added to inputs of shape (B, L, d)."""

    def __init__(self, max_seq_len: int, d_model: int):
        self.max_seq_len = max_seq_len
        self.d_model = d_model
        self.pe = sinusoidal_positional_encoding(max_seq_len, d_model)

    def get_encoding(self, seq_len: int) -> np.ndarray:
        _require_fits(seq_len, self.max_seq_len)
        return self.pe[:seq_len]

    def forward(self, X: np.ndarray) -> np.ndarray:
        return X + self.get_encoding(X.shape[1])[None, :, :]


class LearnedPositionalEncoding:
    """A trainable position table initialised from N(0, 0.02^2), with an explicit backward pass."""

    def __init__(self, max_seq_len: int, d_model: int, rng: np.random.Generator | None = None):
        rng = np.random.default_rng() if rng is None else rng
        self.max_seq_len = max_seq_len
        self.d_model = d_model
        self.embedding = rng.normal(0.0, LEARNED_INIT_STD, size=(max_seq_len, d_model))
        self.grad_embedding = np.zeros_like(self.embedding)
        self._seq_len = None

    def forward(self, X: np.ndarray) -> np.ndarray:
        seq_len = X.shape[1]
        _require_fits(seq_len, self.max_seq_len)
        self._seq_len = seq_len
        return X + self.embedding[None, :seq_len, :]

    def backward(self, grad_output: np.ndarray) -> np.ndarray:
        # Each table row is added to every batch element, so its gradient is the batch sum.
        self.grad_embedding = np.zeros_like(self.embedding)
        self.grad_embedding[: self._seq_len] = grad_output.sum(axis=0)
        return grad_output


def rotation_block(angle: float) -> np.ndarray:
    """R with R @ (sin t, cos t) = (sin(t + angle), cos(t + angle))."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, s], [-s, c]])


def block_diagonal(blocks) -> np.ndarray:
    blocks = list(blocks)
    size = 2 * len(blocks)
    out = np.zeros((size, size))
    for i, block in enumerate(blocks):
        out[2 * i: 2 * i + 2, 2 * i: 2 * i + 2] = block
    return out


def rotation_matrix_for_offset(d_model: int, offset: int, base: float = DEFAULT_BASE) -> np.ndarray:
    """The exact M_k = diag(R_0(k), ..., R_{d/2-1}(k)) from the formula."""
    return block_diagonal(rotation_block(w * offset) for w in angular_frequencies(d_model, base))


def relative_position_matrix(pe: np.ndarray, offset: int) -> tuple[np.ndarray, float]:
    """Estimate M_k from a window of consecutive encodings and report the worst reconstruction error.

    Each block's angle is read off the first pair (pe[0], pe[offset]), so the window need not
    start at position 0. The error is max over valid rows of ||M pe[p] - pe[p + offset]||_2.
    """
    pe = np.asarray(pe, dtype=np.float64)
    seq_len, d_model = pe.shape
    _require_even(d_model)
    if not 0 <= offset < seq_len:
        raise ValueError(f"offset must be in [0, {seq_len}) for a table of {seq_len} positions")
    blocks = []
    for i in range(d_model // 2):
        sin_a, cos_a = pe[0, 2 * i], pe[0, 2 * i + 1]
        sin_b, cos_b = pe[offset, 2 * i], pe[offset, 2 * i + 1]
        # angle(b) - angle(a) via the subtraction identities (both points lie on the unit circle).
        blocks.append(_rotation_from_sin_cos(sin_b * cos_a - cos_b * sin_a, cos_b * cos_a + sin_b * sin_a))
    M = block_diagonal(blocks)
    return M, reconstruction_error(M, pe, offset)


def _rotation_from_sin_cos(s: float, c: float) -> np.ndarray:
    return np.array([[c, s], [-s, c]])


def reconstruction_error(M: np.ndarray, pe: np.ndarray, offset: int) -> float:
    """max_p ||M @ pe[p] - pe[p + offset]||_2 over the rows where p + offset is in the table."""
    shifted = pe[: len(pe) - offset] @ M.T
    return float(np.max(np.linalg.norm(shifted - pe[offset:], axis=1)))


def dot_product_distance(pe: np.ndarray) -> np.ndarray:
    """D[i, j] = PE_i . PE_j."""
    pe = np.asarray(pe, dtype=np.float64)
    return pe @ pe.T


def encoding_statistics(pe: np.ndarray) -> dict:
    pe = np.asarray(pe, dtype=np.float64)
    return {
        "position_norms": np.linalg.norm(pe, axis=1),
        "mean": float(pe.mean()),
        "variance": float(pe.var()),
        "min": float(pe.min()),
        "max": float(pe.max()),
        "bounded": bool(np.all(np.abs(pe) <= 1.0)),
    }


def softmax(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = scores - scores.max(axis=axis, keepdims=True)
    weights = np.exp(shifted)
    return weights / weights.sum(axis=axis, keepdims=True)


def self_attention(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray) -> np.ndarray:
    """Single-head scaled dot-product self-attention on X of shape (..., L, d_model)."""
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return softmax(scores) @ V


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


def _require_even(d_model: int) -> None:
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")


def _require_fits(seq_len: int, max_seq_len: int) -> None:
    if seq_len > max_seq_len:
        raise ValueError(f"sequence length {seq_len} exceeds max_seq_len {max_seq_len}")


# --- stretching a RoPE model's context (bonus assignment context_extension) -------------------------

def interpolated_positions(positions, train_len: int, target_len: int) -> np.ndarray:
    """Position interpolation (Chen et al. 2023): position m of a target_len input is read as m * L / L'."""
    return np.asarray(positions, dtype=np.float64) * (train_len / target_len)


def ntk_scaled_base(base: float, scale: float, head_dim: int) -> float:
    """NTK-aware base b * s^(d / (d - 2)): the fastest pair keeps omega_0 = 1, the slowest is divided by s.

    The power is taken in log space: s**d / s**(d - 2) overflows for a wide head."""
    if head_dim < 4 or head_dim % 2:
        raise ValueError(f"head_dim must be even and at least 4, got {head_dim}")
    if not scale >= 1:
        raise ValueError(f"scale must be at least 1, got {scale}")
    return float(base * np.exp(head_dim / (head_dim - 2) * np.log(scale)))


def turns_in(frequencies, length: float) -> np.ndarray:
    """r_i = length / lambda_i = length * omega_i / (2 pi): full turns each pair makes over `length` positions."""
    return length * np.asarray(frequencies, dtype=np.float64) / (2 * np.pi)


def by_parts(frequencies, scale: float, turns, low: float, high: float) -> np.ndarray:
    """NTK-by-parts: gamma = 0 below `low` turns (divide by scale), 1 above `high` (keep), linear in between."""
    gamma = np.clip((np.asarray(turns) - low) / (high - low), 0.0, 1.0)
    return (1 - gamma) * frequencies / scale + gamma * frequencies


def yarn_frequencies(head_dim: int, base: float, scale: float, train_len: int, alpha: float = 1.0,
                     beta: float = 32.0) -> np.ndarray:
    """YaRN's per-pair frequencies (Peng et al., NTK-by-parts): the ramp is linear in r = L / lambda."""
    omega = angular_frequencies(head_dim, base)
    return by_parts(omega, scale, turns_in(omega, train_len), alpha, beta)


def yarn_attention_scale(scale: float) -> float:
    """sqrt(1/t) = 0.1 ln(s) + 1, applied to queries and keys (so the logits grow by its square)."""
    return float(0.1 * np.log(scale) + 1.0)


def llama31_frequencies(head_dim: int, base: float, factor: float, low_freq_factor: float,
                        high_freq_factor: float, original_max_position: int) -> np.ndarray:
    """Llama 3.1's rope_scaling by wavelength band: shorter than L/high kept, longer than L/low divided by
    factor, a smooth blend between (which is YaRN's ramp with alpha = low, beta = high)."""
    omega = angular_frequencies(head_dim, base)
    return by_parts(omega, factor, turns_in(omega, original_max_position), low_freq_factor, high_freq_factor)


def rotation_angles(frequencies, positions) -> np.ndarray:
    """angles[m, i] = positions[m] * frequencies[i], in radians: shape (len(positions), len(frequencies))."""
    return np.asarray(positions, dtype=np.float64)[:, None] * np.asarray(frequencies, dtype=np.float64)[None, :]


def max_angle_seen(frequencies, train_len: int) -> np.ndarray:
    """Per pair, the bound of the angles of training positions 0 <= m < train_len: train_len * omega_i."""
    return train_len * np.asarray(frequencies, dtype=np.float64)


def rotate_by_angles(x: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotate the interleaved pairs of x (L, d) by angles (L, d/2), counter-clockwise."""
    cos, sin = np.cos(angles), np.sin(angles)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(x.shape, dtype=np.float64)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def stretched_attention(q: np.ndarray, k: np.ndarray, angles: np.ndarray,
                        attention_scale: float = 1.0) -> np.ndarray:
    """Causal attention weights (L, L) of rotated q, k: softmax over keys n <= m of
    attention_scale^2 * q_m . k_n / sqrt(d) (YaRN's scale multiplies both q and k)."""
    scores = rotate_by_angles(q, angles) @ rotate_by_angles(k, angles).T
    scores = scores * attention_scale ** 2 / np.sqrt(q.shape[-1])
    length = len(scores)
    future = np.arange(length)[None, :] > np.arange(length)[:, None]
    weights = softmax(np.where(future, -np.inf, scores))
    return np.where(future, 0.0, weights)
