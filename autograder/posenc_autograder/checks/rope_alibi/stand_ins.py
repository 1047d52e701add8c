"""Stand-ins for the RoPE and ALiBi assignment's functions: behaviour the trusted side chooses and knows, put in place
of a student's function while another one is judged (probes.helpers.standing_in; its frequencies and slopes stand
in with the shared 'lookup' kind).

Shipped into the sandbox beside the probes (as stand_ins_rope_alibi), so it imports numpy only and holds no
reference or expected value; the judges call the same functions to know what a stand-in answered.
"""
from __future__ import annotations

import numpy as np

ASSIGNMENT = "rope_alibi"


def shift(spec):
    """apply_rope: x + positions[:, None] * v[:head_dim], with v drawn by the trusted side."""
    v = np.asarray(spec["vector"], dtype=np.float64)

    def stand_in(x, positions, base=10000.0):
        x = np.asarray(x, dtype=np.float64)
        return x + np.asarray(positions, dtype=np.float64)[:, None] * v[None, :x.shape[-1]]
    return stand_in


KINDS = {"shift": shift}


def shift_stand_in(vector) -> dict:
    """For a rotation f(x, positions, ...): x + positions[:, None] * vector[:width]."""
    return {"kind": f"{ASSIGNMENT}.shift", "vector": vector}
