"""Diagnoses every assignment uses: the one rule for recognising a known wrong answer (matches, one tolerance),
the frequency mistakes of the sinusoidal and RoPE exponent (written once), float32 arithmetic recognised by the
size of its rounding, and the rule for answers two known mistakes explain equally. Each assignment names its own
mistakes in its own words (its diagnosis module or its DIAGNOSES).
"""
from __future__ import annotations

import numpy as np

# An answer matches a known wrong one when every entry is within this of it (relative to the entry's size above 1,
# for bases and angles in the thousands); far below any mistake's distance from the right answer.
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


def matches(actual, wrong) -> bool:
    """Whether an answer is this known wrong one: the same shape, every entry within MATCH_TOLERANCE (NaN where it
    has NaN)."""
    actual, wrong = np.asarray(actual, dtype=np.float64), np.asarray(wrong, dtype=np.float64)
    return actual.shape == wrong.shape and bool(np.allclose(actual, wrong, rtol=MATCH_TOLERANCE, atol=MATCH_TOLERANCE,
                                                             equal_nan=True))


def known_mistakes(actual, expected, known: dict) -> list:
    """The keys of `known` (key -> a wrong answer) whose answer `actual` matches, leaving out any these inputs cannot
    tell from the right one (a diagnosis is right or silent)."""
    return [key for key, wrong in known.items() if matches(actual, wrong) and not matches(expected, wrong)]


def frequency_mistakes(d: int, base: float) -> dict[str, np.ndarray]:
    """The usual wrong frequency vectors of base^(-2i/d), i = 0 .. d/2 - 1, by name: the exponent i/d, the
    exponent doubled (4i/d), and tensor2tensor's spacing i/(d/2 - 1)."""
    i = np.arange(d // 2, dtype=np.float64)
    return {"exponent": np.exp(-i / d * np.log(base)),
            "doubled_exponent": np.exp(-4 * i / d * np.log(base)),
            "spacing": np.exp(-i / max(d // 2 - 1, 1) * np.log(base))}


class Ambiguous(str):
    """An explanation naming several mistakes that fit the answer alike: no definite diagnosis (comparison.with_cause
    marks its problem as a pattern, so a definite diagnosis of the same failure elsewhere is the one that counts)."""


def either(explanations: list[str]) -> str | None:
    """One explanation, or all that fit the answer equally (two mistakes can make the same numbers)."""
    if len(explanations) > 1:
        return Ambiguous("; or ".join(explanations))
    return explanations[0] if explanations else None
