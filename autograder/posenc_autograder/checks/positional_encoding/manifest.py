"""The core assignment's student functions: names, arguments, promised returns, answer cells
(see checks/manifest.py)."""
from __future__ import annotations

from posenc_autograder.checks.hidden import call, normal
from posenc_autograder.checks.manifest import ARRAY, BOOL, FLOAT, StudentFunction, method_call
from posenc_autograder.checks.positional_encoding import reference as ref
from posenc_autograder.checks.positional_encoding.stand_ins import projection, projection_stand_in, table_stand_in

D_MODEL, MAX_LEN, LENGTH = 4, 8, 6      # the contracts test's sizes
STATISTICS = {"position_norms": ARRAY, "mean": FLOAT, "variance": FLOAT, "min": FLOAT, "max": FLOAT,
              "bounded": BOOL}


def _X():
    return normal(91, (2, 5, D_MODEL))


def _pe():
    return ref.sinusoidal_positional_encoding(LENGTH, D_MODEL)


def _weights():
    return [normal(94 + i, (D_MODEL, 3)) for i in range(3)]


def _learned(member, member_call=None, steps=(), settings=None):
    return method_call(call(MAX_LEN, D_MODEL, rng={"default_rng": 92}), member, member_call, steps, settings)


def _table_rows():
    return normal(98, (MAX_LEN, D_MODEL))       # set as the embedding: forward's answer is then the trusted side's


def _attend_answers(c, stand_ins):
    """encode_and_attend without an encoder (it has no reference): attention on X, the probe's stand-in or its own."""
    X, *W = c["args"]
    return [projection(stand_ins["self_attention"])(X, *W), ref.self_attention(X, *W)]


def _table():
    return {"sinusoidal_positional_encoding": table_stand_in(normal(96, (MAX_LEN, D_MODEL)))}


def _attention():
    return {"self_attention": projection_stand_in(normal(97, (D_MODEL, D_MODEL)))}


def _after_backward(member, member_call=None):
    X = _X()
    return _learned(member, member_call, steps=[("forward", call(X)), ("backward", call(normal(93, X.shape)))])


FUNCTIONS = (
    StudentFunction("sinusoidal_positional_encoding", ("seq_len", "d_model"), ARRAY,
                    cell="sinusoidal_positional_encoding", contract=lambda: call(LENGTH, D_MODEL)),
    StudentFunction("SinusoidalPositionalEncoding.forward", ("X",), ARRAY, cell="SinusoidalPositionalEncoding",
                    contract=lambda: method_call(call(MAX_LEN, D_MODEL), "forward", call(_X())), stand_ins=_table),
    StudentFunction("SinusoidalPositionalEncoding.get_encoding", ("seq_len",), ARRAY,
                    cell="SinusoidalPositionalEncoding",
                    contract=lambda: method_call(call(MAX_LEN, D_MODEL), "get_encoding", call(LENGTH)),
                    stand_ins=_table),
    StudentFunction("LearnedPositionalEncoding.embedding", (), ARRAY, cell="LearnedPositionalEncoding",
                    contract=lambda: _learned("embedding")),
    StudentFunction("LearnedPositionalEncoding.forward", ("X",), ARRAY, cell="LearnedPositionalEncoding",
                    contract=lambda: _learned("forward", call(_X()), settings={"embedding": _table_rows()})),
    StudentFunction("LearnedPositionalEncoding.backward", ("grad_output",), ARRAY, cell="LearnedPositionalEncoding",
                    contract=lambda: _learned("backward", call(normal(93, _X().shape)),
                                              steps=[("forward", call(_X()))])),
    StudentFunction("LearnedPositionalEncoding.grad_embedding", (), ARRAY, cell="LearnedPositionalEncoding",
                    contract=lambda: _after_backward("grad_embedding")),
    StudentFunction("relative_position_matrix", ("pe", "offset"), (ARRAY, FLOAT), cell="relative_position_matrix",
                    contract=lambda: call(_pe(), 1)),
    StudentFunction("dot_product_distance", ("pe",), ARRAY, cell="dot_product_and_statistics",
                    contract=lambda: call(_pe())),
    StudentFunction("encoding_statistics", ("pe",), STATISTICS, cell="dot_product_and_statistics",
                    contract=lambda: call(_pe())),
    StudentFunction("self_attention", ("X", "W_q", "W_k", "W_v"), ARRAY, cell="self_attention",
                    contract=lambda: call(_X(), *_weights())),
    StudentFunction("encode_and_attend", ("X", "W_q", "W_k", "W_v", "encoder"), ARRAY, cell="self_attention",
                    contract=lambda: call(_X(), *_weights()), stand_ins=_attention, reference="",
                    answers=_attend_answers),
)
