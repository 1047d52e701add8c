"""Hidden tests of the bonus assignment: RoPE applied to queries and keys, ALiBi biases."""
from __future__ import annotations

import numpy as np

from .. import reference as ref
from ..probes import rope_alibi as probes
from ..probes.rope_alibi import (BIAS_CASES, FREQUENCY_CASES, HEAD_COUNTS, ROPE_CASES, SCORE_DIM, SCORE_LEN,
                                 SCORE_SHIFTS, rope_inputs)
from ..probes.helpers import normal
from .base import compare_observed, register

ASSIGNMENT = "rope_alibi"


def _judge_frequencies(obs):
    problems = []
    for (d, base), record in zip(FREQUENCY_CASES, obs["values"]):
        what = f"rope_frequencies({d}, base={base:g})"
        expected = ref.angular_frequencies(d, base)
        array, problem = compare_observed(record, expected, what, atol=1e-12)
        if problem and array is not None and array.shape == expected.shape and \
                np.allclose(array, np.exp(-np.arange(d // 2) / d * np.log(base))):
            problem += ". Likely cause: the exponent uses i/d instead of 2i/d."
        if problem:
            problems.append(problem)
    if obs["odd"] != "ValueError":
        problems.append("rope_frequencies(7) must raise ValueError for an odd head dimension")
    return problems


def _rotate(x, positions, base, clockwise=False, halves=False, shift=0):
    """Variants of RoPE used to recognise the usual mistakes."""
    d = x.shape[-1]
    angles = (np.asarray(positions, dtype=float) + shift)[:, None] * ref.angular_frequencies(d, base)[None, :]
    sin = -np.sin(angles) if clockwise else np.sin(angles)
    cos = np.cos(angles)
    a, b = (x[..., : d // 2], x[..., d // 2:]) if halves else (x[..., 0::2], x[..., 1::2])
    first, second = a * cos - b * sin, a * sin + b * cos
    if halves:
        return np.concatenate([first, second], axis=-1)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = first, second
    return out


def _rope_diagnosis(actual, x, positions, base):
    known = {
        "the rotation turns the wrong way: (a, b) -> (a cos - b sin, a sin + b cos) is counter-clockwise":
            _rotate(x, positions, base, clockwise=True),
        "pairs are taken as halves (x[:d/2], x[d/2:]), the GPT-NeoX layout; this exercise pairs (2i, 2i+1)":
            _rotate(x, positions, base, halves=True),
        "positions look shifted by one: use the positions you are given": _rotate(x, positions, base, shift=1),
        "the positions were ignored and 0, 1, 2, ... used instead":
            _rotate(x, np.arange(x.shape[-2]), base),
    }
    for explanation, expected in known.items():
        if actual.shape == expected.shape and np.allclose(actual, expected, atol=1e-9):
            return explanation
    return None


def _judge_apply_rope(obs):
    problems = []
    for (seed, shape, positions, base), record in zip(ROPE_CASES, obs["outputs"]):
        x = rope_inputs(seed, shape)
        what = f"apply_rope on x of shape {shape} with positions {positions[:4]}..., base {base:g}"
        expected = ref.apply_rope(x, np.array(positions), base)
        array, problem = compare_observed(record, expected, what, 1e-10)
        if problem and array is not None and (diagnosis := _rope_diagnosis(array, x, positions, base)):
            problem += f". Likely cause: {diagnosis}."
        if problem:
            problems.append(problem)
    return problems[:2]


def _judge_scores(obs):
    q, k = normal(81, (SCORE_LEN, SCORE_DIM)), normal(82, (SCORE_LEN, SCORE_DIM))
    q_pos, k_pos = np.arange(SCORE_LEN), np.arange(SCORE_LEN)[::-1].copy()
    problems = []
    for shift, record in zip(SCORE_SHIFTS, obs["shifted"]):
        what = f"rope_scores with both position lists shifted by {shift}"
        expected = ref.apply_rope(q, q_pos + shift) @ ref.apply_rope(k, k_pos + shift).T
        array, problem = compare_observed(record, expected, what, atol=1e-9)
        if problem:
            problems.append(problem + " (the score must depend only on the distance n - m)")
    return problems[:1]


def _judge_slopes(obs):
    problems = []
    for n, record in zip(HEAD_COUNTS, obs["slopes"]):
        what = f"alibi_slopes({n})"
        expected = ref.alibi_slopes(n)
        array, problem = compare_observed(record, expected, what, atol=1e-12)
        if problem and array is not None and array.shape == expected.shape and \
                np.allclose(array, 2.0 ** (-8.0 * np.arange(1, n + 1) / n)):
            problem += (". Likely cause: for a head count that is not a power of two, take the slopes of the next "
                        "lower power of two and add every other slope of the next higher one (Press et al.)")
        if problem:
            problems.append(problem)
    return problems[:2]


def _judge_bias(obs):
    problems = []
    for (heads, length), record in zip(BIAS_CASES, obs["biases"]):
        what = f"alibi_bias({heads}, {length})"
        expected = ref.alibi_bias(heads, length)
        array, problem = compare_observed(record, expected, what, atol=1e-12)
        if problem and array is not None and array.shape == expected.shape:
            signed = np.arange(length)[None, :] - np.arange(length)[:, None]
            slopes = ref.alibi_slopes(heads)[:, None, None]
            if np.allclose(array, -expected):
                problem += ". Likely cause: the sign is flipped; the bias is a penalty, -slope * |i - j|."
            elif np.allclose(array, -slopes * signed) or np.allclose(array, slopes * signed):
                problem += ". Likely cause: the distance must be |i - j|, not the signed difference."
        if problem:
            problems.append(problem)
    return problems


register("hidden_rope_frequencies", points=2, probe=probes.probe_frequencies, judge=_judge_frequencies,
         assignment=ASSIGNMENT)
register("hidden_apply_rope", points=4, probe=probes.probe_apply_rope, judge=_judge_apply_rope,
         assignment=ASSIGNMENT)
register("hidden_rope_relative", points=3, probe=probes.probe_scores, judge=_judge_scores, assignment=ASSIGNMENT)
register("hidden_alibi_slopes", points=2, probe=probes.probe_slopes, judge=_judge_slopes, assignment=ASSIGNMENT)
register("hidden_alibi_bias", points=3, probe=probes.probe_bias, judge=_judge_bias, assignment=ASSIGNMENT)
