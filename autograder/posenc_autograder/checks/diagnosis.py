"""Diagnoses every assignment uses: float32 arithmetic recognised by the size of its rounding, and the rule for
answers two known mistakes explain equally. Each assignment's own known mistakes are in its diagnosis module.
"""
from __future__ import annotations

import numpy as np

MATCH_TOLERANCE = 1e-6
FLOAT32_EPSILON = float(np.finfo(np.float32).eps)


def diagnose_float32(actual: np.ndarray, expected: np.ndarray) -> str | None:
    """Name float32 arithmetic when every error is within what float32 rounding of sin(pos * omega) can make:
    a few float32 ulps of the angle, which grows with the position, plus one of the value."""
    error = np.abs(actual - expected)
    positions = np.arange(len(expected), dtype=np.float64).reshape((-1,) + (1,) * (expected.ndim - 1))
    bound = 4 * FLOAT32_EPSILON * (1 + positions)
    if not (error.max() > 1e-12 and np.all(error <= bound)):
        return None
    return (f"the values are off by up to {error.max():.1g}, the size of float32 rounding: part of the computation "
            f"is in float32 (np.float32 arrays, or a PyTorch recipe's default dtype), even if the result is cast to "
            f"float64 at the end; compute every step in float64")


def diagnose_float32_relative(actual: np.ndarray, expected: np.ndarray) -> str | None:
    """Name float32 arithmetic for values (slopes, frequencies) whose every error is a few float32 units in the
    last place of the value itself (BLOOM builds ALiBi's base in float32)."""
    error = np.abs(actual - expected)
    if actual.shape != expected.shape or not (error.max(initial=0) > 1e-15 and
                                              np.all(error <= 8 * FLOAT32_EPSILON * np.abs(expected))):
        return None
    return (f"the values are off by up to {error.max():.1g}, the size of float32 rounding: part of the computation "
            f"is in float32 (a base or power taken in float32, as in BLOOM's code); compute every step in float64")


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.allclose(a, b, atol=1e-9, rtol=0, equal_nan=True)


def either(explanations: list[str]) -> str | None:
    """One explanation, or all that fit the answer equally (two mistakes can make the same numbers)."""
    return "; or ".join(explanations) if explanations else None
