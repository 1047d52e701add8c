"""Calls of positional_encoding's student-facing API over the spec's domain, broader than the hidden tests' inputs:
`make mutate` calls a mutant equivalent when it answers all of them as the reference does.

Only inputs the spec defines: valid ones, and the errors it asks for (odd widths, L > L_max); what a function
does with an input the spec leaves open (a negative offset) is no mistake."""
from __future__ import annotations

from typing import Callable

import numpy as np


def normal(seed, *shape):
    return np.random.default_rng(seed).normal(size=shape)


def _learned_passes(ns, max_len, d, seed):
    layer = ns["LearnedPositionalEncoding"](max_len, d, rng=np.random.default_rng(seed))
    out = [layer.embedding.copy()]
    for batch, length in ((1, max_len), (3, max_len // 2), (2, 1)):
        X = normal(seed + length, batch, length, d)
        out += [layer.forward(X), layer.backward(normal(seed + 100 + length, batch, length, d)),
                layer.grad_embedding.copy()]
    return out


def _sinusoidal_module(ns, max_len, d, length):
    module = ns["SinusoidalPositionalEncoding"](max_len, d)
    return [module.get_encoding(length), module.forward(normal(length, 2, length, d))]


def _window(ns, first, length, d, noise=0.0):
    return ns["sinusoidal_positional_encoding"](first + length, d)[first:] + noise * normal(first, length, d)


def battery() -> list[Callable[[dict], object]]:
    calls = []
    for L, d in ((1, 2), (3, 4), (17, 10), (64, 64), (300, 8), (5, 3)):
        calls.append(lambda ns, L=L, d=d: ns["sinusoidal_positional_encoding"](L, d))
    for max_len, d, length in ((40, 6, 40), (40, 6, 13), (10, 4, 11), (9, 5, 1)):
        calls.append(lambda ns, a=(max_len, d, length): _sinusoidal_module(ns, *a))
    for max_len, d, seed in ((8, 4, 1), (30, 10, 2), (5, 3, 3)):
        calls.append(lambda ns, a=(max_len, d, seed): _learned_passes(ns, *a))
    calls.append(lambda ns: ns["LearnedPositionalEncoding"](4, 2).forward(np.zeros((1, 5, 2))))
    calls.append(lambda ns: ns["LearnedPositionalEncoding"](7, 3).embedding.shape)      # rng is optional
    for first, length, d, k, noise in ((0, 30, 8, 1, 0), (11, 40, 12, 7, 0), (3, 25, 6, 24, 0), (5, 30, 8, 3, 1e-3),
                                       (0, 10, 4, 0, 0)):
        calls.append(lambda ns, a=(first, length, d, noise), k=k: ns["relative_position_matrix"](_window(ns, *a), k))
    for seed, shape in ((1, (7, 3)), (2, (1, 4)), (3, (20, 20))):
        pe = normal(seed, *shape)
        calls += [lambda ns, pe=pe: ns["dot_product_distance"](pe), lambda ns, pe=pe: ns["encoding_statistics"](pe)]
    calls += [lambda ns: ns["encoding_statistics"](np.array([[1.0, -1.0], [0.25, 0.0]])),
              lambda ns: ns["encoding_statistics"](np.array([[1.5, -0.5]]))]
    for seed, shape, scale in ((4, (6, 8), 1), (5, (2, 3, 5, 8), 1), (6, (4, 8), 500)):
        W = [normal(seed + i, 8, 6) for i in range(3)]
        calls.append(lambda ns, X=scale * normal(seed, *shape), W=W: ns["self_attention"](X, *W))
        calls.append(lambda ns, X=normal(seed, 2, 5, 8), W=W: ns["encode_and_attend"](
            X, *W, encoder=ns["SinusoidalPositionalEncoding"](5, 8)))
    return calls
