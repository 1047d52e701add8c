"""Calls of rope_alibi's student-facing API over the spec's domain (see positional_encoding's battery)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from posenc_autograder.checks.positional_encoding.mutation_battery import normal


def battery() -> list[Callable[[dict], object]]:
    calls = []
    for d, base in ((2, 1e4), (12, 1e4), (8, 123.0), (7, 1e4)):
        calls.append(lambda ns, d=d, base=base: ns["rope_frequencies"](d, base))
    for seed, shape, positions, base in ((7, (4, 6), [0, 1, 2, 3], 1e4), (8, (2, 3, 8), [5, 0, 9], 77.0),
                                         (9, (3, 4), [-2, 40, 1], 1e4)):
        calls.append(lambda ns, x=normal(seed, *shape), p=np.array(positions), b=base: ns["apply_rope"](x, p, b))
        calls.append(lambda ns, x=normal(seed, len(positions), shape[-1]), p=np.array(positions): ns["rope_scores"](
            x, x + 1, p, p[::-1].copy()))
    for n in (1, 2, 3, 5, 8, 12, 16, 24):
        calls.append(lambda ns, n=n: ns["alibi_slopes"](n))
    for heads, length in ((1, 1), (3, 4), (8, 9)):
        calls.append(lambda ns, h=heads, L=length: ns["alibi_bias"](h, L))
    return calls
