"""Stand-ins for the core assignment's functions: behaviour the trusted side chooses and knows, put in place of a
student's function while another one is judged (probes.helpers.standing_in).

Shipped into the sandbox beside the probes (as stand_ins_positional_encoding), so it imports numpy only and holds no
reference or expected value; the judges call the same functions to know what a stand-in answered.
"""
from __future__ import annotations

import numpy as np

ASSIGNMENT = "positional_encoding"


def table(spec):
    """sinusoidal_positional_encoding: ValueError for an odd width (as the spec says), else rows of a table (its
    entries repeated for another size: only the table's own size is judged)."""
    rows = np.asarray(spec["table"], dtype=np.float64)

    def stand_in(seq_len, d_model):
        if int(d_model) % 2:
            raise ValueError(f"d_model must be even, got {d_model}")
        if int(seq_len) > rows.shape[0] or int(d_model) != rows.shape[1]:
            return np.resize(rows, (int(seq_len), int(d_model)))
        return rows[:int(seq_len)].copy()
    return stand_in


def projection(spec):
    """self_attention: X @ P @ W_q + 2 X @ W_k + 3 X @ W_v, with P drawn by the trusted side."""
    P = np.asarray(spec["projection"], dtype=np.float64)

    def stand_in(X, W_q, W_k, W_v):
        X = np.asarray(X, dtype=np.float64)
        return X @ P @ W_q + 2 * (X @ W_k) + 3 * (X @ W_v)
    return stand_in


KINDS = {"table": table, "projection": projection}


def table_stand_in(values) -> dict:
    """For a table function f(seq_len, d_model): rows of `values`, ValueError for an odd width."""
    return {"kind": f"{ASSIGNMENT}.table", "table": values}


def projection_stand_in(matrix) -> dict:
    """For an attention f(X, W_q, W_k, W_v): X @ matrix @ W_q + 2 X @ W_k + 3 X @ W_v."""
    return {"kind": f"{ASSIGNMENT}.projection", "projection": matrix}
