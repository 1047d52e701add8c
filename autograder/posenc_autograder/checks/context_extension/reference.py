"""Trusted reference of the context_extension assignment: stretching a RoPE model's context (position
interpolation, NTK-aware base, YaRN, Llama 3.1's frequencies). A leaf: numpy and the earlier references only."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.positional_encoding.reference import angular_frequencies, softmax


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


def layer_rotation_angles(head_dim: int, n_layers: int, global_every: int, local_base: float, global_base: float,
                          global_factor: float, window: int, length: int) -> np.ndarray:
    """(n_layers, head_dim / 2): row l the largest angle (radians) each pair of layer l meets on `length` tokens. The
    last of each group of global_every layers is global (whole input, global_base, frequencies divided by
    global_factor); the others are local (offsets up to min(window, length) - 1, local_base)."""
    if head_dim % 2 or head_dim < 2:
        raise ValueError(f"head_dim must be even and at least 2, got {head_dim}")
    is_global = (np.arange(n_layers) + 1) % global_every == 0
    local = angular_frequencies(head_dim, local_base) * (min(window, length) - 1)
    wide = angular_frequencies(head_dim, global_base) / global_factor * (length - 1)
    return np.where(is_global[:, None], wide[None, :], local[None, :])
