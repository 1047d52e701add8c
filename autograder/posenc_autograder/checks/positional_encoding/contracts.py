"""The core assignment's contracts test: return types and dtypes, and the caller's arrays left alone, for every
function of the manifest (a function counts once it passes its own tests)."""
from __future__ import annotations

from posenc_autograder.checks.contracts import contracts_test
from posenc_autograder.checks.positional_encoding.manifest import FUNCTIONS

ASSIGNMENT = "positional_encoding"

TESTS = [
    contracts_test(ASSIGNMENT, FUNCTIONS, id="hidden_contracts", points=2, answer_cell="self_attention",
                   title="return types and dtypes (float64 arrays, a tuple, a dict of floats and a bool), and the "
                         "caller's arrays left unchanged, for each function that passes its own tests"),
]
