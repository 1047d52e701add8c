"""The bonus context_extension's student functions: names, arguments, promised returns, answer cells
(see checks/manifest.py)."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.context_extension import reference as ref
from posenc_autograder.checks.hidden import call, normal
from posenc_autograder.checks.manifest import ARRAY, FLOAT, StudentFunction


def _attention_contract():
    angles = ref.rotation_angles(ref.angular_frequencies(8), np.arange(5.0))
    return call(normal(61, (5, 8)), normal(62, (5, 8)), angles)


FUNCTIONS = (
    StudentFunction("interpolated_positions", ("positions", "train_len", "target_len"), ARRAY, cell="interpolation",
                    contract=lambda: call(np.arange(6.0), 4, 8)),
    StudentFunction("ntk_scaled_base", ("base", "scale", "head_dim"), FLOAT, cell="interpolation",
                    contract=lambda: call(1e4, 4.0, 16)),
    StudentFunction("yarn_frequencies", ("head_dim", "base", "scale", "train_len", "alpha", "beta"), ARRAY,
                    cell="yarn", contract=lambda: call(16, 1e4, 4.0, 64)),
    StudentFunction("yarn_attention_scale", ("scale",), FLOAT, cell="yarn", contract=lambda: call(4.0)),
    StudentFunction("llama31_frequencies", ("head_dim", "base", "factor", "low_freq_factor", "high_freq_factor",
                                            "original_max_position"), ARRAY, cell="llama",
                    contract=lambda: call(16, 1e4, 8.0, 1.0, 4.0, 64)),
    StudentFunction("rotation_angles", ("frequencies", "positions"), ARRAY, cell="angles",
                    contract=lambda: call(ref.angular_frequencies(8), np.arange(5.0))),
    StudentFunction("max_angle_seen", ("frequencies", "train_len"), ARRAY, cell="angles",
                    contract=lambda: call(ref.angular_frequencies(8), 64)),
    StudentFunction("stretched_attention", ("q", "k", "angles", "attention_scale"), ARRAY, cell="attention",
                    contract=_attention_contract),
    StudentFunction("layer_rotation_angles", ("head_dim", "n_layers", "global_every", "local_base", "global_base",
                                              "global_factor", "window", "length"), ARRAY, cell="layers",
                    contract=lambda: call(16, 4, 2, 1e4, 1e5, 4.0, 8, 32)),
)
