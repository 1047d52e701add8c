"""What each explorable figure shows, computed in Python from the course's reference implementation.

The page's JavaScript (_static/explorables/explorables.js) computes the same quantities in the
reader's browser. This module is the Python side of that pair: the Sphinx extension draws the
static fallback images from it, and tests/book/test_explorables.py compares the browser's numbers with
it. Settings, sizes and seeds come from _static/explorables/constants.json, the one source both
sides read; `expected` returns the same keys as `window.posencExplorables[name].data()`.
"""
from __future__ import annotations

import functools
import json
import pathlib

import numpy as np

from posenc_autograder.checks.context_extension import reference as stretch_ref
from posenc_autograder.checks.positional_encoding import reference as pe_ref
from posenc_autograder.checks.rope_alibi import reference as rope_ref

CONSTANTS = pathlib.Path(__file__).resolve().parents[1] / "_static" / "explorables" / "constants.json"


@functools.cache
def constants() -> dict:
    """constants.json with every named list of choices ("choices": "bases") replaced by the list."""
    raw = json.loads(CONSTANTS.read_text())
    for spec in raw["figures"].values():
        for control in spec["controls"].values():
            if isinstance(control.get("choices"), str):
                control["choices"] = raw[control["choices"]]
    return raw


def figure_names() -> list[str]:
    return list(constants()["figures"])


def spec(name: str) -> dict:
    try:
        return constants()["figures"][name]
    except KeyError:
        raise ValueError(f"no explorable figure named {name!r}; known: {', '.join(figure_names())}") from None


def default_settings(name: str) -> dict:
    return {key: control["value"] for key, control in spec(name)["controls"].items()}


@functools.cache
def _inputs(name: str) -> dict:
    """The random vectors and matrices a figure starts from (seeded: the same in every build)."""
    figure = spec(name)
    if "seed" not in figure:
        return {}
    rng = np.random.default_rng(figure["seed"])
    if name == "rope-shift":
        return {"query": rng.normal(size=figure["d_head"]), "key": rng.normal(size=figure["d_head"])}
    if name == "order-sensitivity":
        d_model, d_k = figure["d_model"], figure["d_k"]
        embedding = rng.normal(size=(len(figure["vocab"]), d_model))
        W_q, W_k, W_v = (rng.normal(scale=d_model ** -0.5, size=(d_model, d_k)) for _ in range(3))
        return {"embedding": embedding, "W_q": W_q, "W_k": W_k, "W_v": W_v}
    raise ValueError(f"figure {name!r} has a seed but no inputs are defined for it")


def inputs(name: str) -> dict:
    return {key: value.copy() for key, value in _inputs(name).items()}


def _largest_pair(d_model: int, pair: int) -> int:
    """The pair slider's range follows d_model: a pair beyond d_model/2 - 1 means the last one."""
    return min(pair, d_model // 2 - 1)


def _pe_heatmap(figure, s):
    return {"table": pe_ref.sinusoidal_positional_encoding(figure["positions"], s["d_model"], s["base"])}


def _wavelengths(figure, s):
    pair = _largest_pair(s["d_model"], s["pair"])
    table = pe_ref.sinusoidal_positional_encoding(figure["positions"], s["d_model"], s["base"])
    return {"wavelengths": 2 * np.pi / pe_ref.angular_frequencies(s["d_model"], s["base"]),
            "pair": pair, "column": table[:, 2 * pair]}


def _pair_rotation(figure, s):
    d_model, pair, pos, k = figure["d_model"], s["pair"], s["position"], s["offset"]
    base = constants()["default_base"]
    table = pe_ref.sinusoidal_positional_encoding(figure["positions"], d_model, base)
    M = pe_ref.rotation_matrix_for_offset(d_model, k, base)
    block = M[2 * pair:2 * pair + 2, 2 * pair:2 * pair + 2]
    start = table[pos, 2 * pair:2 * pair + 2]
    return {"angle": pe_ref.angular_frequencies(d_model, base)[pair] * k, "block": block, "start": start,
            "rotated": block @ start, "target": table[pos + k, 2 * pair:2 * pair + 2],
            "error": pe_ref.reconstruction_error(M, table, k)}


def _dot_distance(figure, s):
    table = pe_ref.sinusoidal_positional_encoding(figure["max_distance"] + 1, s["d_model"], s["base"])
    return {"dot": pe_ref.dot_product_distance(table)[0]}


def _rope_shift(figure, s):
    vectors = inputs("rope-shift")
    n = figure["positions"]
    positions = np.arange(s["shift"], s["shift"] + n)
    queries = rope_ref.apply_rope(np.repeat(vectors["query"][None], n, axis=0), positions, s["base"])
    keys = rope_ref.apply_rope(np.repeat(vectors["key"][None], n, axis=0), positions, s["base"])
    return {"scores": queries @ keys.T}


def _alibi_heads(figure, s):
    query = min(s["query"], figure["positions"] - 1)
    return {"slopes": rope_ref.alibi_slopes(s["heads"]),
            "row": rope_ref.alibi_bias(s["heads"], figure["positions"])[:, query, :]}


def _order_sensitivity(figure, s):
    weights = inputs("order-sensitivity")
    ids = np.array(figure["ids"])
    length = len(ids)
    permutation = (np.arange(length) + s["rotation"]) % length
    pe = pe_ref.sinusoidal_positional_encoding(length, figure["d_model"], constants()["default_base"])

    def gap(scale):
        """||out(permuted sentence)[t] - out(sentence)[permutation[t]]|| for every token t."""
        def attend(order):
            X = weights["embedding"][ids[order]] + scale * pe
            return pe_ref.self_attention(X, weights["W_q"], weights["W_k"], weights["W_v"])
        return np.linalg.norm(attend(permutation) - attend(np.arange(length))[permutation], axis=1)

    return {"permutation": permutation, "with_pe": gap(s["scale"]), "without_pe": gap(0.0)}


def _stretched_frequencies(figure, method, scale):
    """Each method's new omega_i' for a head stretched from train_len to scale * train_len tokens (Ch 12)."""
    d, base, L = figure["head_dim"], figure["base"], figure["train_len"]
    omega = pe_ref.angular_frequencies(d, base)
    rules = {
        "none": lambda: omega,
        # m -> m L / L' for every position: the same angles as every frequency times L / L'
        "position interpolation": lambda: omega * stretch_ref.interpolated_positions(1.0, L, scale * L),
        "NTK-aware": lambda: pe_ref.angular_frequencies(d, stretch_ref.ntk_scaled_base(base, scale, d)),
        "YaRN": lambda: stretch_ref.yarn_frequencies(d, base, scale, L, figure["yarn"]["alpha"],
                                                     figure["yarn"]["beta"]),
        "Llama 3.1": lambda: stretch_ref.llama31_frequencies(d, base, scale, figure["llama31"]["low_freq_factor"],
                                                     figure["llama31"]["high_freq_factor"], L),
    }
    return rules[method]()


def _stretched_angles(figure, s):
    L, target = figure["train_len"], s["scale"] * figure["train_len"]
    omega = pe_ref.angular_frequencies(figure["head_dim"], figure["base"])
    stretched = _stretched_frequencies(figure, s["method"], s["scale"])
    trained, after = stretch_ref.max_angle_seen(omega, L), stretch_ref.max_angle_seen(stretched, target)
    # A pair that saw only an arc (less than a full turn) meets unseen directions past its largest trained angle.
    unseen = (trained < 2 * np.pi) & (after > trained * (1 + figure["rounding_margin"]))
    return {"frequencies": stretched, "trained": trained, "before": stretch_ref.max_angle_seen(omega, target),
            "after": after, "unseen": unseen,
            "attention_scale": stretch_ref.yarn_attention_scale(s["scale"]) if s["method"] == "YaRN" else 1.0}


COMPUTE = {"pe-heatmap": _pe_heatmap, "wavelengths": _wavelengths, "pair-rotation": _pair_rotation,
           "dot-distance": _dot_distance, "rope-shift": _rope_shift, "alibi-heads": _alibi_heads,
           "order-sensitivity": _order_sensitivity, "stretched-angles": _stretched_angles}


def expected(name: str, settings: dict | None = None) -> dict:
    """What figure `name` plots at `settings` (defaults for the ones not given), as numpy values."""
    full = default_settings(name) | (settings or {})
    return {key: np.asarray(value, dtype=np.float64) for key, value in COMPUTE[name](spec(name), full).items()}
