"""Trusted reference of the positional_encoding assignment: sinusoidal and learned encodings, the rotation
between positions, the encodings' statistics, self-attention.

The grader computes every expected value with it, outside the student's process; the book's explorable
figures import it too (it imports nothing of the grader: loading it loads no hidden test). The chapters
write their own short versions on the page (a downloaded chapter needs only numpy and matplotlib).
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




def _require_even(d_model: int) -> None:
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")


def _require_fits(seq_len: int, max_seq_len: int) -> None:
    if seq_len > max_seq_len:
        raise ValueError(f"sequence length {seq_len} exceeds max_seq_len {max_seq_len}")

