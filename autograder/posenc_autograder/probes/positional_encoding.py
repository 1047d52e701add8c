"""Probes of the core assignment. Inputs that need the reference (sinusoidal tables) arrive in `data`."""
from __future__ import annotations

import numpy as np

from .helpers import attempt, guarded, normal, raises, student_callable, to_plain

PE_FN = "sinusoidal_positional_encoding"
PE_CLASS = "SinusoidalPositionalEncoding"
LEARNED_CLASS = "LearnedPositionalEncoding"
ROTATION_FN = "relative_position_matrix"
DOT_FN = "dot_product_distance"
STATS_FN = "encoding_statistics"
ATTENTION_FN = "self_attention"
WIRED_FN = "encode_and_attend"
EPSILON = 1e-5

# --- the sinusoidal table ----------------------------------------------------------------------
SHAPE_CASES = [(1, 2), (5, 6), (33, 18), (200, 130)]
ODD_WIDTHS = [3, 9, 101]
VALUE_CASES = [(3, 4), (7, 10), (60, 34)]
STABILITY_CASES = [(10000, 32), (24, 4096)]
FREQUENCY_CASE = (2000, 36)
UNIQUE_CASE = (1000, 12)
CLASS_MAX_LEN, CLASS_WIDTH = 520, 10
CLASS_BATCHES = [(1, 1), (4, 16), (16, 128), (2, 512), (3, 37)]


def class_inputs(batch, seq_len):
    return normal(batch * 1000 + seq_len, (batch, seq_len, CLASS_WIDTH))


def probe_pe_shapes(ns, data):
    fn = student_callable(ns, PE_FN)
    return {"tables": [attempt(fn, L, d) for L, d in SHAPE_CASES], "odd": [raises(fn, 10, d) for d in ODD_WIDTHS]}


def probe_pe_values(ns, data):
    fn = student_callable(ns, PE_FN)
    return {"tables": [attempt(fn, L, d) for L, d in VALUE_CASES]}


def probe_pe_unique(ns, data):
    fn = student_callable(ns, PE_FN)
    return {"first": attempt(fn, *UNIQUE_CASE), "second": attempt(fn, *UNIQUE_CASE)}


def probe_pe_stability(ns, data):
    fn = student_callable(ns, PE_FN)
    return {"tables": [attempt(fn, L, d) for L, d in STABILITY_CASES]}


def probe_pe_frequency(ns, data):
    return {"table": attempt(student_callable(ns, PE_FN), *FREQUENCY_CASE)}


@guarded
def probe_pe_class(ns, data):
    cls = student_callable(ns, PE_CLASS)
    obs = {"odd": raises(cls, 16, 7)}
    module = cls(CLASS_MAX_LEN, CLASS_WIDTH)
    obs["forward"] = [attempt(module.forward, class_inputs(b, L)) for b, L in CLASS_BATCHES]
    obs["encoding"] = attempt(module.get_encoding, 45)
    obs["too_long"] = raises(module.forward, np.zeros((1, CLASS_MAX_LEN + 1, CLASS_WIDTH)))
    return obs


# --- the learned table -------------------------------------------------------------------------
INIT_SHAPE = (1500, 48)
FORWARD_MAX, FORWARD_WIDTH = 600, 8
FORWARD_CASES = [(1, 1), (4, 16), (16, 128), (2, 512), (5, 600)]
GRAD_MAX, GRAD_WIDTH, GRAD_BATCH, GRAD_LEN = 11, 6, 3, 7


def make_learned(ns, max_seq_len, d_model, seed):
    return student_callable(ns, LEARNED_CLASS)(max_seq_len, d_model, rng=np.random.default_rng(seed))


def forward_table():
    return normal(5, (FORWARD_MAX, FORWARD_WIDTH))


@guarded
def probe_learned_init(ns, data):
    tables = [make_learned(ns, *INIT_SHAPE, seed).embedding for seed in (11, 11, 12)]
    return {"table": to_plain(tables[0]), "same_seed": to_plain(tables[1]), "other_seed": to_plain(tables[2])}


@guarded
def probe_learned_forward(ns, data):
    layer = make_learned(ns, FORWARD_MAX, FORWARD_WIDTH, 3)
    layer.embedding = forward_table()
    return {"forward": [attempt(layer.forward, normal(L, (B, L, FORWARD_WIDTH))) for B, L in FORWARD_CASES],
            "too_long": raises(layer.forward, np.zeros((1, FORWARD_MAX + 1, FORWARD_WIDTH)))}


def numerical_gradient(layer, X, upstream):
    """d/dE of sum(upstream * forward(X)) by central differences on every table entry."""
    table = np.array(layer.embedding, dtype=np.float64)
    numeric = np.zeros_like(table)
    for index in np.ndindex(*table.shape):
        values = []
        for sign in (+1, -1):
            shifted = table.copy()
            shifted[index] += sign * EPSILON
            layer.embedding = shifted
            values.append(float(np.sum(upstream * np.asarray(layer.forward(X), dtype=np.float64))))
        numeric[index] = (values[0] - values[1]) / (2 * EPSILON)
    layer.embedding = table
    return numeric


@guarded
def probe_learned_backward(ns, data):
    layer = make_learned(ns, GRAD_MAX, GRAD_WIDTH, 4)
    X = normal(1, (GRAD_BATCH, GRAD_LEN, GRAD_WIDTH))
    upstream = normal(2, X.shape)
    layer.forward(X)
    input_grad = attempt(layer.backward, upstream)
    grad = to_plain(getattr(layer, "grad_embedding", None))
    return {"input_grad": input_grad, "grad_embedding": grad,
            "numeric": to_plain(numerical_gradient(layer, X, upstream))}


@guarded
def probe_learned_accumulation(ns, data):
    layer = make_learned(ns, GRAD_MAX, GRAD_WIDTH, 6)
    row = normal(8, (1, 5, GRAD_WIDTH))
    layer.forward(np.zeros((1, 5, GRAD_WIDTH)))
    layer.backward(row)
    single = to_plain(layer.grad_embedding)
    layer.forward(np.zeros((4, 5, GRAD_WIDTH)))
    layer.backward(np.repeat(row, 4, axis=0))
    batch4 = to_plain(layer.grad_embedding)
    layer.forward(np.zeros((2, 3, GRAD_WIDTH)))
    layer.backward(normal(9, (2, 3, GRAD_WIDTH)))
    return {"single": single, "batch4": batch4, "after_shorter": to_plain(layer.grad_embedding)}


# --- analysis tools (the tables they analyse come from the trusted side in `data`) -------------
ROTATION_OFFSETS = (1, 5, 10, 50, 3, 17)
SECOND_WINDOW_OFFSET = 7
NOISY_OFFSET = 4


def probe_rotation(ns, data):
    fn = student_callable(ns, ROTATION_FN)
    return {"offsets": [attempt(fn, np.array(data["window"]), k) for k in ROTATION_OFFSETS],
            "second_window": attempt(fn, np.array(data["second_window"]), SECOND_WINDOW_OFFSET),
            "noisy": attempt(fn, np.array(data["noisy"]), NOISY_OFFSET)}


def probe_dot(ns, data):
    fn = student_callable(ns, DOT_FN)
    return {"random": attempt(fn, np.array(data["random"])), "sinusoidal": attempt(fn, np.array(data["sinusoidal"]))}


def probe_stats(ns, data):
    fn = student_callable(ns, STATS_FN)
    return {"results": [attempt(fn, np.array(pe)) for pe in data["arrays"]]}


# --- attention ---------------------------------------------------------------------------------
D_MODEL, D_K = 8, 6
SEQ_LEN, BATCH = 6, 2
PERMUTATION = [3, 0, 5, 1, 4, 2]


def attention_weights(seed):
    rng = np.random.default_rng(seed)
    return tuple(rng.normal(scale=0.5, size=(D_MODEL, D_K)) for _ in range(3))


def attention_cases():
    rng = np.random.default_rng(51)
    return {"X of shape (5, 8)": rng.normal(size=(5, D_MODEL)),
            "X of shape (3, 7, 8)": rng.normal(size=(3, 7, D_MODEL)),
            "large inputs (entries around 300)": 300 * rng.normal(size=(4, D_MODEL))}


def tokens():
    return normal(61, (BATCH, SEQ_LEN, D_MODEL))


def probe_attention(ns, data):
    fn = student_callable(ns, ATTENTION_FN)
    return {"outputs": [attempt(fn, X, *attention_weights(52)) for X in attention_cases().values()]}


@guarded
def probe_wiring(ns, data):
    fn, cls = student_callable(ns, WIRED_FN), student_callable(ns, PE_CLASS)
    X, W, perm = tokens(), attention_weights(62), np.array(PERMUTATION)
    encoder = cls(16, D_MODEL)
    big = normal(63, (4, 64, D_MODEL))
    shifted = np.asarray(cls(64, D_MODEL).forward(big), dtype=np.float64)
    statistics = {"finite": bool(np.all(np.isfinite(shifted))),
                  "mean_shift": float(shifted.mean() - big.mean()),
                  "std_ratio": float(shifted.std() / big.std())}
    return {"plain": attempt(fn, X, *W), "plain_permuted": attempt(fn, X[:, perm], *W),
            "encoded": attempt(fn, X, *W, encoder=encoder),
            "encoded_permuted": attempt(fn, X[:, perm], *W, encoder=encoder),
            "statistics": statistics}
