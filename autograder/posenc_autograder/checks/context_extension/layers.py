"""Hidden test of context_extension's part on current practice: a local/global configuration (Gemma 3's
rope_local_base_freq, rope_theta, sliding_window and linear rope_scaling on global layers) read as the largest
rotation angle each pair of each layer meets.

Its reference is reference.layer_rotation_angles (so `make mutate` mutates it); here, the rule with each choice
exposed, which builds the catalogued mistakes.
"""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.context_extension import reference as ref
from posenc_autograder.checks.context_extension.parts import ASSIGNMENT, _errors, _values
from posenc_autograder.checks.hidden import HiddenTest, call, calling, judging_all
from posenc_autograder.probes.helpers import call_each

LAYERS_FN = "layer_rotation_angles"

# Gemma 3's published text configuration for a 128-wide head: 5 local layers to 1 global, window 1,024,
# local base 10,000, global base 1,000,000 interpolated by 8, read at 128K tokens (twelve layers shown).
GEMMA3 = (128, 12, 6, 10_000.0, 1_000_000.0, 8.0, 1024, 131_072)

# The known mistakes' diagnoses; the notebook's visible checks give the same words (tests hold them together).
LAYER_DIAGNOSES = {
    "window_ignored": "local layers were given the whole input: a local layer's keys lie within its window, so "
                      "its largest offset is min(window, length) - 1",
    "input_ignored": "the input is shorter than the window: a local layer's largest offset is then length - 1, "
                     "min(window, length) - 1",
    "off_by_one": "the largest offset among W keys is W - 1 (a query and its farthest key), not W",
    "factor_on_local": "the factor was applied to local layers too: only global layers are interpolated",
    "first_global": "the global layer is the last of each group of global_every layers, (layer + 1) % "
                    "global_every == 0 (Gemma 3's layers 5, 11, ...), not the first",
    "bases_swapped": "the bases are swapped: local layers use local_base, global layers global_base",
    "factor_multiplied": "the global frequencies were multiplied by the factor: interpolation divides them",
}


def _frequencies(head_dim, base):
    return np.exp(-2.0 * np.arange(head_dim // 2) / head_dim * np.log(base))


def _angles(head_dim, n_layers, global_every, local_base, global_base, global_factor, window, length, *,
            global_at=None, local_offset=None, global_offset=None, local_factor=1.0, global_scale=None,
            bases=None):
    """The rule with each of its choices exposed, so that every catalogued mistake is one changed choice."""
    local_base, global_base = bases or (local_base, global_base)
    layers = np.arange(n_layers)
    is_global = (layers % global_every == 0) if global_at == "first" else ((layers + 1) % global_every == 0)
    local = _frequencies(head_dim, local_base) / local_factor
    local = local * (min(window, length) - 1 if local_offset is None else local_offset)
    scaled = _frequencies(head_dim, global_base) * (1 / global_factor if global_scale is None else global_scale)
    wide = scaled * (length - 1 if global_offset is None else global_offset)
    return np.where(is_global[:, None], wide[None, :], local[None, :])


def _layer_mistakes(head_dim, n_layers, global_every, local_base, global_base, global_factor, window, length):
    args = (head_dim, n_layers, global_every, local_base, global_base, global_factor, window, length)
    return {"window_ignored": _angles(*args, local_offset=length - 1),
            "input_ignored": _angles(*args, local_offset=window - 1),
            "off_by_one": _angles(*args, local_offset=min(window, length), global_offset=length),
            "factor_on_local": _angles(*args, local_factor=global_factor),
            "first_global": _angles(*args, global_at="first"),
            "bases_swapped": _angles(*args, bases=(global_base, local_base)),
            "factor_multiplied": _angles(*args, global_scale=global_factor)}


# Every case has local layers, a factor above 1 and two different bases; all but the last have global layers
# too, and all but one are longer than their window (the fifth is shorter, 200 tokens in a window of 512). None is a
# visible check's: Gemma 3's configuration is read at 100,000 tokens here, at 131,072 in the notebook.
LAYER_CASES = [GEMMA3[:-1] + (100_000,), (64, 6, 3, 10_000.0, 160_000.0, 2.0, 128, 8192),
               (256, 8, 2, 10_000.0, 500_000.0, 4.0, 4096, 32_768), (32, 5, 5, 50_000.0, 1e6, 16.0, 64, 1000),
               (16, 6, 3, 10_000.0, 100_000.0, 4.0, 512, 200), (128, 3, 4, 10_000.0, 1e6, 8.0, 1024, 2048)]
LAYER_ERRORS = [(9, 3, 3, 1e4, 5e5, 2.0, 32, 100)]           # an odd head_dim the notebook does not try

TESTS = [
    HiddenTest(id="hidden_layer_rotation_angles", subjects=(LAYERS_FN,), partial=True, assignment=ASSIGNMENT,
               points=3, answer_cell="layers",
               title="per-layer largest angles of local/global configurations (Gemma 3's among them), inputs "
                     "shorter and longer than the window, ValueError for an odd head_dim",
               bullets=("stretch.layers", "stretch.shapes"),
               inputs=lambda: calling(LAYERS_FN, values=[call(*case) for case in LAYER_CASES],
                                      errors=[call(*case) for case in LAYER_ERRORS]),
               probe=call_each,
               judge=judging_all(_values(LAYERS_FN, "values", ref.layer_rotation_angles, _layer_mistakes,
                                         LAYER_DIAGNOSES),
                                 _errors(LAYERS_FN, "errors", lambda *args: "for an odd head_dim"))),
]
