"""Hidden tests of Part 1, Shaw et al.'s clipped relative representations: the index, the logits with a^K and the
output with a^V. The logits and the output are judged with the index given by the grader (a stand-in for the
student's relative_position_index), so a wrong index costs its own test only."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.hidden import HiddenTest, References, call, calling, normal
from posenc_autograder.checks.relative_positions import reference
from posenc_autograder.checks.relative_positions.common import ASSIGNMENT, values_judge
from posenc_autograder.checks.relative_positions.stand_ins import index, index_stand_in
from posenc_autograder.probes.helpers import call_each

ref = References(reference)
INDEX_FN, LOGITS_FN, OUTPUT_FN = "relative_position_index", "shaw_logits", "shaw_output"

# (q_len, k_len, max_distance): square and not, wider and taller, clipping in every row, in none (max_distance
# beyond every distance), everything clipped (max_distance 0), a single query or key. None is a visible check's.
INDEX_CASES = [(5, 5, 2), (3, 8, 2), (9, 4, 3), (6, 6, 10), (4, 7, 0), (1, 12, 4), (11, 1, 3)]


def _index_mistakes(q_len, k_len, max_distance):
    distance = reference.t5_distances(q_len, k_len)
    return {"index_reversed": np.clip(-distance, -max_distance, max_distance) + max_distance,
            "index_not_shifted": np.clip(distance, -max_distance, max_distance),
            "index_not_clipped": distance + max_distance}


def _index_readings(q_len, k_len, max_distance):
    return [(ref.relative_position_index(q_len, k_len, max_distance),
             lambda: _index_mistakes(q_len, k_len, max_distance))]


# (q_len, k_len, d, max_distance) of the logits and output cases
SHAW_CASES = [(5, 7, 4, 2), (8, 3, 6, 1), (6, 6, 8, 8), (4, 10, 2, 3)]


def _scrambled(q_len, k_len, max_distance, seed):
    """The stand-in's index: valid rows of the table, unrelated to the distance (drawn per student)."""
    return variants.rng(seed).integers(0, 2 * max_distance + 1, size=(q_len, k_len))


def _index_stand_in(seed):
    return index_stand_in({(q, k, m): _scrambled(q, k, m, seed + i) for i, (q, k, _, m) in enumerate(SHAW_CASES)})


def _stand_in_index(inputs, q_len, k_len, max_distance):
    return index(inputs["stand_ins"][INDEX_FN])(q_len, k_len, max_distance)


def _logits_inputs():
    inputs = calling(LOGITS_FN, logits=[call(normal(101 + i, (q, d)), normal(111 + i, (k, d)),
                                             normal(121 + i, (2 * m + 1, d)), m)
                                        for i, (q, k, d, m) in enumerate(SHAW_CASES)])
    inputs["stand_ins"] = {INDEX_FN: _index_stand_in(131)}
    return inputs


def _logits_mistakes(q, k, table_k, index):
    d = np.sqrt(q.shape[-1])
    relative = np.take_along_axis(q @ table_k.T, index, axis=1)
    reversed_index = len(table_k) - 1 - index
    return {"shaw_no_sqrt": q @ k.T + relative, "shaw_sqrt_content_only": q @ k.T / d + relative,
            "index_reversed": reference.shaw_logits_at(q, k, table_k, reversed_index)}


def _judge_logits(inputs, obs):
    def readings(q, k, table_k, max_distance):
        indices = [ref.relative_position_index(len(q), len(k), max_distance),
                   _stand_in_index(inputs, len(q), len(k), max_distance)]
        return [(reference.shaw_logits_at(q, k, table_k, i), lambda i=i: _logits_mistakes(q, k, table_k, i))
                for i in indices]
    return values_judge(LOGITS_FN, "logits", readings)(inputs, obs)


def _output_inputs():
    cases = []
    for i, (q, k, d, m) in enumerate(SHAW_CASES):
        scores = normal(141 + i, (q, k))
        weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        cases.append(call(weights, normal(151 + i, (k, d)), normal(161 + i, (2 * m + 1, d)), m))
    inputs = calling(OUTPUT_FN, outputs=cases)
    inputs["stand_ins"] = {INDEX_FN: _index_stand_in(171)}
    return inputs


def _output_mistakes(weights, v, table_v, index):
    with_table = reference.shaw_output_at(weights, np.zeros_like(v), table_v, index)
    return {"shaw_no_values": with_table, "shaw_no_table": weights @ v,
            "index_reversed": reference.shaw_output_at(weights, v, table_v, len(table_v) - 1 - index)}


def _judge_output(inputs, obs):
    def readings(weights, v, table_v, max_distance):
        q_len, k_len = weights.shape
        indices = [ref.relative_position_index(q_len, k_len, max_distance),
                   _stand_in_index(inputs, q_len, k_len, max_distance)]
        return [(reference.shaw_output_at(weights, v, table_v, i), lambda i=i: _output_mistakes(weights, v, table_v, i))
                for i in indices]
    return values_judge(OUTPUT_FN, "outputs", readings)(inputs, obs)


TESTS = [
    HiddenTest(id="hidden_relative_position_index", subjects=(INDEX_FN,), partial=True, assignment=ASSIGNMENT,
               bullets=("relpos.shaw_index",), points=2, answer_cell="shaw",
               title="clipped relative indices for square and non-square shapes, distances below, at and beyond "
                     "max_distance (max_distance 0 included)",
               inputs=lambda: calling(INDEX_FN, indices=[call(*case) for case in INDEX_CASES]), probe=call_each,
               judge=values_judge(INDEX_FN, "indices", _index_readings)),
    HiddenTest(id="hidden_shaw_logits", subjects=(LOGITS_FN,), depends=(INDEX_FN,), partial=True,
               assignment=ASSIGNMENT, bullets=("relpos.shaw_attention",), points=2, answer_cell="shaw",
               title="logits with a^K against the direct formula, non-square shapes, with the index given by the "
                     "grader",
               inputs=_logits_inputs, probe=call_each, judge=_judge_logits),
    HiddenTest(id="hidden_shaw_output", subjects=(OUTPUT_FN,), depends=(INDEX_FN,), partial=True,
               assignment=ASSIGNMENT, bullets=("relpos.shaw_attention",), points=2, answer_cell="shaw",
               title="outputs with a^V against the direct formula, non-square shapes, with the index given by the "
                     "grader",
               inputs=_output_inputs, probe=call_each, judge=_judge_output),
]
