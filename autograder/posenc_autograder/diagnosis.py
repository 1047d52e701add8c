"""Recognise the usual wrong answers, so a failed test can say what the mistake looks like.

Each known mistake is rebuilt from the reference with one thing changed; a student's output
that matches one of them (to 1e-6) gets that mistake's explanation.
"""
from __future__ import annotations

import numpy as np

from . import reference as ref

MATCH_TOLERANCE = 1e-6


def _angles(seq_len, d_model, base=ref.DEFAULT_BASE, first=0, omega=None):
    omega = ref.angular_frequencies(d_model, base) if omega is None else omega
    return np.arange(first, first + seq_len, dtype=np.float64)[:, None] * omega[None, :]


def _interleave(first_cols, second_cols):
    out = np.empty((first_cols.shape[0], 2 * first_cols.shape[1]))
    out[:, 0::2], out[:, 1::2] = first_cols, second_cols
    return out


def pe_mistakes(seq_len: int, d_model: int) -> dict[str, np.ndarray]:
    """Known wrong sinusoidal tables of shape (seq_len, d_model), keyed by their explanation."""
    theta = _angles(seq_len, d_model)
    half = d_model // 2
    i = np.arange(half, dtype=np.float64)
    j = np.arange(d_model, dtype=np.float64)
    mistakes = {
        "columns look concatenated [sin | cos] rather than interleaved (sin in even columns, cos in odd ones)":
            np.concatenate([np.sin(theta), np.cos(theta)], axis=1),
        "sin and cos are swapped: even columns should hold sin, odd columns cos":
            _interleave(np.cos(theta), np.sin(theta)),
        "positions seem to start at 1; the first row is position 0":
            ref.sinusoidal_positional_encoding(seq_len, d_model, first_position=1),
        "the frequency exponent uses i/d_model instead of 2i/d_model":
            _interleave(*_sin_cos(_angles(seq_len, d_model, omega=np.exp(-i / d_model * np.log(1e4))))),
        "the frequency exponent uses the column index j instead of the pair index i (omega = 10000^(-2j/d) with j the column)":
            _by_column(seq_len, np.exp(-2 * j / d_model * np.log(1e4))),
        "the frequency uses the column index j directly (omega_j = 10000^(-j/d)) instead of pairing columns 2i and 2i+1":
            _by_column(seq_len, np.exp(-j / d_model * np.log(1e4))),
        "the exponent's sign is flipped: frequencies grow instead of shrinking (use 10000^(-2i/d))":
            _interleave(*_sin_cos(_angles(seq_len, d_model, omega=np.exp(2 * i / d_model * np.log(1e4))))),
        "every pair has frequency 1: the exponent 2i/d_model was probably computed with integer division":
            _interleave(*_sin_cos(_angles(seq_len, d_model, omega=np.ones(half)))),
        "the table holds only sin values; odd columns should be cos":
            _interleave(np.sin(theta), np.sin(theta)),
        "the table holds only cos values; even columns should be sin":
            _interleave(np.cos(theta), np.cos(theta)),
    }
    for base in (1000.0, 100000.0, 10000.0 ** 0.5, 2.0 * np.pi * 10000.0):
        mistakes[f"the frequency base is not 10000 (your table matches base {base:g})"] = \
            ref.sinusoidal_positional_encoding(seq_len, d_model, base=base)
    return mistakes


def _sin_cos(theta):
    return np.sin(theta), np.cos(theta)


def _by_column(seq_len, omega_per_column):
    theta = np.arange(seq_len, dtype=np.float64)[:, None] * omega_per_column[None, :]
    out = np.sin(theta)
    out[:, 1::2] = np.cos(theta[:, 1::2])
    return out


def diagnose_pe_table(actual: np.ndarray, seq_len: int, d_model: int) -> str | None:
    """Explain a wrong (seq_len, d_model) table when it matches a known mistake."""
    if actual.shape == (d_model, seq_len) and seq_len != d_model:
        return "rows must be positions and columns dimensions"
    if actual.shape != (seq_len, d_model):
        return None
    for explanation, table in pe_mistakes(seq_len, d_model).items():
        if np.allclose(actual, table, atol=MATCH_TOLERANCE, rtol=0):
            return explanation
    expected = ref.sinusoidal_positional_encoding(seq_len, d_model)
    if np.allclose(actual, expected, atol=1e-4, rtol=0):
        return ("the values are close but not exact (off by more than 1e-6): compute in float64, "
                "not float32, and take the frequencies in log space")
    return None


def diagnose_rotation(actual: np.ndarray, d_model: int, offset: int) -> str | None:
    """Explain a wrong M_k when it matches a known mistake."""
    exact = ref.rotation_matrix_for_offset(d_model, offset)
    if actual.shape != exact.shape:
        return None
    if np.allclose(actual, exact.T, atol=MATCH_TOLERANCE):
        return ("the rotation blocks are transposed: with rows (sin, cos) the block is "
                "[[cos wk, sin wk], [-sin wk, cos wk]], which maps PE[pos] to PE[pos + k], not PE[pos - k]")
    if np.allclose(actual, ref.rotation_matrix_for_offset(d_model, offset + 1), atol=MATCH_TOLERANCE) or \
            np.allclose(actual, ref.rotation_matrix_for_offset(d_model, offset - 1), atol=MATCH_TOLERANCE):
        return "M looks like it rotates by offset +/- 1: check the positions you paired up"
    half = d_model // 2
    perm = np.empty(d_model, dtype=int)
    perm[0::2], perm[1::2] = np.arange(half), np.arange(half) + half
    if np.allclose(actual, exact[np.ix_(np.argsort(perm), np.argsort(perm))], atol=MATCH_TOLERANCE):
        return ("the 2x2 blocks pair columns (i, i + d/2) as for a concatenated [sin | cos] table; "
                "with interleaved columns each block acts on columns (2i, 2i+1)")
    if np.allclose(actual, np.eye(d_model), atol=MATCH_TOLERANCE):
        return "M is the identity: it must rotate each pair by omega_i * offset"
    return None
