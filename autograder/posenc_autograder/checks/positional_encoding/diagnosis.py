"""Recognise the usual wrong answers of the positional_encoding assignment, so a failed test can say what the
mistake looks like.

Each known mistake is rebuilt from the reference with one thing changed; a student's output
that matches one of them (diagnosis.matches) gets that mistake's explanation.
"""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.diagnosis import diagnose_float32, either, frequency_mistakes, matches
from posenc_autograder.checks.hidden import References
from posenc_autograder.checks.positional_encoding import reference

ref = References(reference)        # sizes and settings asked for again: computed once, read-only

def _angles(seq_len, d_model, base=ref.DEFAULT_BASE, first=0, omega=None):
    omega = ref.angular_frequencies(d_model, base) if omega is None else omega
    return np.arange(first, first + seq_len, dtype=np.float64)[:, None] * omega[None, :]


def _interleave(first_cols, second_cols):
    out = np.empty((first_cols.shape[0], 2 * first_cols.shape[1]))
    out[:, 0::2], out[:, 1::2] = first_cols, second_cols
    return out


SPACING = ("the frequencies are spaced as in tensor2tensor and fairseq, 10000^(-i/(d/2 - 1)) (the slowest pair "
           "has wavelength exactly 2*pi*10000): a legitimate convention, so your understanding is right; this "
           "exercise asks for the paper's 10000^(-2i/d)")


DOUBLED = ("the exponent is doubled: pair i turns at 10000^(-4i/d_model) instead of 10000^(-2i/d_model) (2i/d_model "
           "taken of an index that already steps by 2, or the 2 applied twice)")


def pe_mistakes(seq_len: int, d_model: int) -> dict[str, np.ndarray]:
    """Known wrong sinusoidal tables of shape (seq_len, d_model), keyed by their explanation."""
    theta = _angles(seq_len, d_model)
    half = d_model // 2
    frequencies = frequency_mistakes(d_model, ref.DEFAULT_BASE)
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
            _interleave(*_sin_cos(_angles(seq_len, d_model, omega=frequencies["exponent"]))),
        "the frequency exponent uses the column index j instead of the pair index i "
        "(omega = 10000^(-2j/d) with j the column)":
            _by_column(seq_len, np.exp(-2 * j / d_model * np.log(1e4))),
        "the frequency uses the column index j directly (omega_j = 10000^(-j/d)) "
        "instead of pairing columns 2i and 2i+1":
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
    spacing = frequencies["spacing"]                                # tensor2tensor's and fairseq's timescales
    mistakes[SPACING] = _interleave(*_sin_cos(_angles(seq_len, d_model, omega=spacing)))
    mistakes[SPACING + "; and the columns are concatenated [sin | cos] (their layout too) rather than "
             "interleaved"] = np.concatenate(_sin_cos(_angles(seq_len, d_model, omega=spacing)), axis=1)
    mistakes[DOUBLED] = _interleave(*_sin_cos(_angles(seq_len, d_model, omega=frequencies["doubled_exponent"])))
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
    fitting = [explanation for explanation, table in pe_mistakes(seq_len, d_model).items() if matches(actual, table)]
    if fitting:
        return either(fitting)
    return diagnose_float32(actual, ref.sinusoidal_positional_encoding(seq_len, d_model))


def diagnose_rotation(actual: np.ndarray, d_model: int, offset: int) -> str | None:
    """Explain a wrong M_k when it matches a known mistake."""
    exact = ref.rotation_matrix_for_offset(d_model, offset)
    if actual.shape != exact.shape:
        return None
    if matches(actual, exact.T):
        return ("the rotation blocks are transposed: with rows (sin, cos) the block is "
                "[[cos wk, sin wk], [-sin wk, cos wk]], which maps PE[pos] to PE[pos + k], not PE[pos - k]")
    if matches(actual, np.eye(d_model)):         # before offset +/- 1: for offset 1 the identity is both
        return "M is the identity: it must rotate each pair by omega_i * offset"
    if matches(actual, ref.rotation_matrix_for_offset(d_model, offset + 1)) or \
            matches(actual, ref.rotation_matrix_for_offset(d_model, offset - 1)):
        return "M looks like it rotates by offset +/- 1: check the positions you paired up"
    half = d_model // 2
    perm = np.empty(d_model, dtype=int)
    perm[0::2], perm[1::2] = np.arange(half), np.arange(half) + half
    if matches(actual, exact[np.ix_(np.argsort(perm), np.argsort(perm))]):
        return ("the 2x2 blocks pair columns (i, i + d/2) as for a concatenated [sin | cos] table; "
                "with interleaved columns each block acts on columns (2i, 2i+1)")
    return None


def _softmax(scores, max_axis=-1, sum_axis=-1, max_keepdims=True, sum_keepdims=True, shift=True):
    """A softmax written the ways students write it: the max and the sum along chosen axes, with or without
    keepdims (without it a (..., L) max broadcasts along the last axis: column j gets row j's max)."""
    shifted = scores - scores.max(axis=max_axis, keepdims=max_keepdims) if shift else scores
    weights = np.exp(shifted)
    return weights / weights.sum(axis=sum_axis, keepdims=sum_keepdims)


OVERFLOW = ("exp overflows: subtract each row's maximum score, scores.max(axis=-1, keepdims=True), before "
            "exponentiating")


MAX_AXIS = ("the maximum is subtracted along the wrong axis (axis -2, over the queries): subtract each row's own "
            "maximum, scores.max(axis=-1, keepdims=True); the sum is over axis -1 already")


TRANSPOSED_SCORES = ("the scores are transposed (K Q^T, key i against query j): entry (i, j) must be query i "
                     "against key j, Q @ np.swapaxes(K, -1, -2)")


KEEPDIMS = ("keepdims is missing: scores.max(axis=-1) (or .sum(axis=-1)) has shape (..., L) and broadcasts along "
            "the last axis, so column j is shifted or divided by row j's value; use keepdims=True")


def attention_mistakes(X: np.ndarray, W) -> dict[str, np.ndarray]:
    """Known wrong self-attention outputs for X and W = (W_q, W_k, W_v), keyed by their explanation."""
    Q, K, V = X @ W[0], X @ W[1], X @ W[2]
    scores = Q @ np.swapaxes(K, -1, -2)
    scaled = scores / np.sqrt(Q.shape[-1])
    variants = {
        "the scores are not divided by sqrt(d_k)": lambda: _softmax(scores),
        "the scores are divided by sqrt(d_model) instead of sqrt(d_k), the width of Q and K":
            lambda: _softmax(scores / np.sqrt(X.shape[-1])),
        "softmax normalises over the queries (axis -2) instead of over the keys (axis -1)":
            lambda: _softmax(scaled, -2, -2),
        MAX_AXIS: lambda: _softmax(scaled, max_axis=-2),
        TRANSPOSED_SCORES: lambda: _softmax(np.swapaxes(scaled, -1, -2)),
        OVERFLOW: lambda: _softmax(scaled, shift=False),     # before keepdims: on huge scores both give NaN
        KEEPDIMS: lambda: _softmax(scaled, max_keepdims=False, sum_keepdims=False),
        KEEPDIMS + " (in the sum)": lambda: _softmax(scaled, sum_keepdims=False),
        KEEPDIMS + " (in the maximum)": lambda: _softmax(scaled, max_keepdims=False),
    }
    mistakes = {}
    with np.errstate(all="ignore"):
        for explanation, weights in variants.items():
            try:
                mistakes[explanation] = weights() @ V
            except ValueError:          # without keepdims a batch does not broadcast: the student's code raised
                continue
    return mistakes


def diagnose_attention(actual: np.ndarray, X: np.ndarray, W) -> str | None:
    """Explain a wrong self-attention output when it matches a known mistake, NaN and Inf included."""
    right = ref.self_attention(X, *W)
    # A mistake these inputs cannot show (its output equals the right one) stays silent.
    return either([explanation for explanation, wrong in attention_mistakes(X, W).items()
                   if matches(actual, wrong) and not matches(right, wrong)])
