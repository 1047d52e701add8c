"""The bonus assignment's student functions: names, arguments, promised returns, answer cells
(see checks/manifest.py)."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks.hidden import call, normal
from posenc_autograder.checks.manifest import ARRAY, StudentFunction, lookup_stand_in
from posenc_autograder.checks.rope_alibi import reference as ref
from posenc_autograder.checks.rope_alibi.stand_ins import shift, shift_stand_in

HEAD_DIM, HEADS = 8, 6          # the contracts test's sizes


def _frequencies():
    return {"rope_frequencies": lookup_stand_in(("head_dim", "base"), {(HEAD_DIM, 1e4): normal(64, HEAD_DIM // 2) ** 2},
                                                defaults={"base": 1e4}, odd_error=True)}


def _scores_answers(c, stand_ins):
    """rope_scores (it has no reference): rotated queries times rotated keys, on the probe's stand-in or its own."""
    q, k, q_positions, k_positions = c["args"]
    rotations = (shift(stand_ins["apply_rope"]), lambda x, p: ref.apply_rope(x, np.asarray(p)))
    return [rotate(q, q_positions) @ rotate(k, k_positions).T for rotate in rotations]


FUNCTIONS = (
    StudentFunction("rope_frequencies", ("head_dim", "base"), ARRAY, cell="rope", contract=lambda: call(8),
                    reference="angular_frequencies"),
    StudentFunction("apply_rope", ("x", "positions", "base"), ARRAY, cell="rope",
                    contract=lambda: call(normal(61, (2, 5, HEAD_DIM)), [3, 9, 4, 12, 7]), stand_ins=_frequencies),
    StudentFunction("rope_scores", ("q", "k", "q_positions", "k_positions"), ARRAY, cell="rope",
                    contract=lambda: call(normal(62, (4, HEAD_DIM)), normal(63, (6, HEAD_DIM)), [5, 6, 7, 8],
                                          [2, 0, 11, 3, 4, 1]),
                    stand_ins=lambda: {"apply_rope": shift_stand_in(normal(65, HEAD_DIM))}, reference="",
                    answers=_scores_answers),
    StudentFunction("alibi_slopes", ("n_heads",), ARRAY, cell="alibi", contract=lambda: call(12)),
    StudentFunction("alibi_bias", ("n_heads", "seq_len"), ARRAY, cell="alibi", contract=lambda: call(HEADS, 5),
                    stand_ins=lambda: {"alibi_slopes": lookup_stand_in(("n_heads",),
                                                                       {(HEADS,): normal(66, HEADS) ** 2})}),
)
