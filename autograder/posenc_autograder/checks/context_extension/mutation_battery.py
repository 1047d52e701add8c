"""Calls of context_extension's student-facing API over the spec's domain, the errors ntk_scaled_base promises
included (see positional_encoding's battery)."""
from __future__ import annotations

from typing import Callable

import numpy as np

from posenc_autograder.checks.positional_encoding.mutation_battery import normal


def battery() -> list[Callable[[dict], object]]:
    """The bonus context_extension's functions, including the errors ntk_scaled_base promises."""
    calls = []
    for positions, train, target in ((np.arange(10), 4, 8), (np.array([3, 7, 1000]), 1000, 3000), (np.arange(5), 5, 5)):
        calls.append(lambda ns, a=(positions, train, target): ns["interpolated_positions"](*a))
    for args in ((1e4, 4.0, 64), (1e4, 1.0, 8), (1e6, 64.0, 256), (1e4, 2.0, 4), (1e4, 2.0, 7), (1e4, 2.0, 2),
                 (1e4, 0.5, 64)):
        calls.append(lambda ns, a=args: ns["ntk_scaled_base"](*a))
    for args, kwargs in (((8, 1e4, 4.0, 64), {}), ((64, 1e4, 8.0, 2048), {}), ((32, 1e4, 1.0, 128), {}),
                         ((64, 1e4, 2.0, 4096), {"alpha": 2.0, "beta": 16.0}), ((128, 5e5, 16.0, 8192), {})):
        calls.append(lambda ns, a=args, k=kwargs: ns["yarn_frequencies"](*a, **k))
    for scale in (1.0, 3.0, 40.0):
        calls.append(lambda ns, s=scale: ns["yarn_attention_scale"](s))
    for args in ((128, 5e5, 8.0, 1.0, 4.0, 8192), (64, 1e4, 4.0, 2.0, 8.0, 4096), (16, 1e4, 8.0, 1.0, 4.0, 64)):
        calls.append(lambda ns, a=args: ns["llama31_frequencies"](*a))
    frequencies, positions = normal(10, 4) ** 2, np.array([0.0, 3.0, -5.0, 41.5])
    calls += [lambda ns: ns["rotation_angles"](frequencies, positions),
              lambda ns: ns["max_angle_seen"](frequencies, 17)]
    for seed, length, scale in ((11, 6, 1.0), (12, 9, 1.3), (13, 4, 1.0)):
        q, k, angles = normal(seed, length, 8), normal(seed + 1, length, 8), normal(seed + 2, length, 4) * 3
        calls.append(lambda ns, a=(q * (1 + 20 * (seed == 13)), k, angles), s=scale: ns["stretched_attention"](
            *a, attention_scale=s))
    for args in ((16, 4, 2, 1e4, 1e5, 4.0, 8, 32), (8, 5, 5, 1e4, 1e6, 8.0, 64, 40),
                 (32, 6, 3, 5e4, 5e5, 2.0, 16, 1000), (4, 2, 7, 1e4, 1e6, 2.0, 3, 2), (5, 2, 2, 1e4, 1e6, 2.0, 8, 16)):
        calls.append(lambda ns, a=args: ns["layer_rotation_angles"](*a))
    return calls


