"""Stand-ins for the relative_positions assignment's functions: behaviour the trusted side chooses and knows, put in
place of a student's function while another one is judged (probes.helpers.standing_in), so one mistake costs its
own test only.

Shipped into the sandbox beside the probes (as stand_ins_relative_positions), so it imports numpy only and holds no
reference or expected value; the judges call the same functions to know what a stand-in answered.
"""
from __future__ import annotations

import numpy as np

ASSIGNMENT = "relative_positions"


def index(spec):
    """relative_position_index: any valid index, row by row the spec's scrambled one (integers in [0, 2m])."""
    values = spec["values"]

    def stand_in(q_len, k_len, max_distance):
        key = f"{int(q_len)}/{int(k_len)}/{int(max_distance)}"
        if key not in values:     # the student's call, in the student's terms: lengths swapped, most likely
            raise LookupError(f"relative_position_index({int(q_len)}, {int(k_len)}, {int(max_distance)}): the grader's "
                              f"stand-in answers only this case's calls, relative_position_index(query length, key "
                              f"length, max_distance)")
        return np.asarray(values[key]).astype(np.int64)
    return stand_in


def bucket(spec):
    """t5_relative_bucket: (a * relative_position + b) mod num_buckets, an int array of the same shape."""
    a, b = int(spec["a"]), int(spec["b"])

    def stand_in(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
        relative_position = np.asarray(relative_position).astype(np.int64)
        return (a * relative_position + b + (0 if bidirectional else 1)) % int(num_buckets)
    return stand_in


def shift(spec):
    """relative_shift: each visible entry read one column further than Transformer-XL's shift reads it (wrapping
    round), 0 after the query."""
    step = int(spec["step"])

    def stand_in(scores):
        scores = np.asarray(scores, dtype=np.float64)
        q_len, k_len = scores.shape
        rows, cols = np.arange(q_len)[:, None], np.arange(k_len)[None, :]
        source = (cols + q_len - 1 - rows + step) % k_len
        return np.where(cols <= rows + (k_len - q_len), np.take_along_axis(scores, source, axis=1), 0.0)
    return stand_in


KINDS = {"index": index, "bucket": bucket, "shift": shift}


def index_stand_in(answers: dict) -> dict:
    """For relative_position_index: answers {(q_len, k_len, max_distance): int array}."""
    return {"kind": f"{ASSIGNMENT}.index",
            "values": {"/".join(str(int(n)) for n in key): np.asarray(value).tolist()
                       for key, value in answers.items()}}


def bucket_stand_in(a: int, b: int) -> dict:
    return {"kind": f"{ASSIGNMENT}.bucket", "a": int(a), "b": int(b)}


def shift_stand_in(step: int) -> dict:
    return {"kind": f"{ASSIGNMENT}.shift", "step": int(step)}
