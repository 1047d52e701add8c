"""The core assignment's contracts test: return types and dtypes, and the caller's arrays left alone."""
from __future__ import annotations

from posenc_autograder.checks import reference as ref
from posenc_autograder.checks.base import HiddenTest, normal
from posenc_autograder.checks.contracts import ARRAY, BOOL, FLOAT, contracts_judge
from posenc_autograder.probes.positional_encoding import probe_contracts

ASSIGNMENT = "positional_encoding"
STATS = {"position_norms": ARRAY, "mean": FLOAT, "variance": FLOAT, "min": FLOAT, "max": FLOAT, "bounded": BOOL}
# What the spec says each call returns; a tuple is a (value, value) pair, a dict maps keys to kinds.
PROMISED = {
    "sinusoidal_positional_encoding": ARRAY,
    "SinusoidalPositionalEncoding.forward": ARRAY,
    "SinusoidalPositionalEncoding.get_encoding": ARRAY,
    "LearnedPositionalEncoding.embedding": ARRAY,
    "LearnedPositionalEncoding.forward": ARRAY,
    "LearnedPositionalEncoding.backward": ARRAY,
    "LearnedPositionalEncoding.grad_embedding": ARRAY,
    "relative_position_matrix": (ARRAY, FLOAT),
    "dot_product_distance": ARRAY,
    "encoding_statistics": STATS,
    "self_attention": ARRAY,
}
ARGUMENT_NAMES = {"SinusoidalPositionalEncoding.forward": ["X"], "LearnedPositionalEncoding.forward": ["X"],
                  "LearnedPositionalEncoding.backward": ["grad_output"], "relative_position_matrix": ["pe"],
                  "dot_product_distance": ["pe"], "encoding_statistics": ["pe"],
                  "self_attention": ["X", "W_q", "W_k", "W_v"]}


def _contract_inputs():
    d_model, length = 4, 6
    X = normal(91, (2, 5, d_model))
    return {"max_seq_len": 8, "d_model": d_model, "length": length, "seed": 92, "X": X,
            "grad": normal(93, X.shape), "pe": ref.sinusoidal_positional_encoding(length, d_model),
            "W": [normal(94 + i, (d_model, 3)) for i in range(3)]}


TESTS = [
    HiddenTest(id="hidden_contracts", assignment=ASSIGNMENT, points=2, answer_cell="self_attention",
               title="return types and dtypes (float64 arrays, a tuple, a dict of floats and a bool), and the "
                     "caller's arrays left unchanged",
               inputs=_contract_inputs, probe=probe_contracts, judge=contracts_judge(PROMISED, ARGUMENT_NAMES)),
]
