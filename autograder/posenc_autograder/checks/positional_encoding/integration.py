"""Hidden tests for the integration part: self-attention, and position information inside it."""
from __future__ import annotations

import numpy as np

from posenc_autograder.checks import reference as ref
from posenc_autograder.checks import variants
from posenc_autograder.checks.diagnosis import diagnose_attention
from posenc_autograder.probes.helpers import call_each
from posenc_autograder.probes.positional_encoding import probe_wiring
from posenc_autograder.checks.base import HiddenTest, Problem, call, calling, compare, each_case, mismatch, normal, observed_array
from posenc_autograder.checks.positional_encoding.sinusoidal import PE_CLASS, PE_FN

ASSIGNMENT = "positional_encoding"
ATTENTION_FN, WIRED_FN = "self_attention", "encode_and_attend"
D_MODEL, D_K = 8, 6


def _weights(seed):
    rng = variants.rng(seed)
    return [rng.normal(scale=0.5, size=(D_MODEL, D_K)) for _ in range(3)]


def _attention_inputs():
    rng, W = variants.rng(51), _weights(52)
    return calling(ATTENTION_FN, outputs=[call(rng.normal(size=(5, D_MODEL)), *W),
                                          call(rng.normal(size=(3, 7, D_MODEL)), *W),
                                          call(300 * rng.normal(size=(4, D_MODEL)), *W)])   # exp would overflow


def _attention_problem(c, record):
    X, *W = c["args"]
    return compare(record, ref.self_attention(X, *W),
                   f"{ATTENTION_FN} on X of shape {X.shape} with entries up to {np.abs(X).max():.0f}", 1e-9,
                   diagnose=lambda out: diagnose_attention(out, X, W))


def _judge_attention(inputs, obs):
    return each_case(_attention_problem, inputs["groups"]["outputs"], obs["outputs"])


# --- order sensitivity with PE, equivariance without, statistics of X + PE ---------------------

def _wiring_inputs():
    return {"function": WIRED_FN, "attention": ATTENTION_FN, "class": PE_CLASS, "table": PE_FN,
            "X": normal(61, (2, 6, D_MODEL)), "W": _weights(62), "permutation": [3, 0, 5, 1, 4, 2],
            "encoder_length": 16, "big": normal(63, (4, 64, D_MODEL))}


def _wiring_problem(record, own_record, label, expected):
    """encode_and_attend against the reference parts, or against the student's own attention and encoder
    composed by the probe: a mistake in those costs their own tests, not this one."""
    problem = compare(record, expected, f"{WIRED_FN} {label}", 1e-9)
    if problem is None or own_record is None:
        return problem
    if "error" in own_record:       # the student's own parts raise the same way: their tests charge it
        return None if record.get("error") == own_record["error"] else problem
    try:
        own = observed_array(own_record, label)
    except Problem:
        return problem
    return None if compare(record, own, "", 1e-9) is None else problem


def _judge_wiring(inputs, obs):
    if "error" in obs:
        return [f"running {WIRED_FN} failed: {obs['error']}"]
    X, W, perm = inputs["X"], inputs["W"], np.array(inputs["permutation"])
    encoder = ref.SinusoidalPositionalEncoding(inputs["encoder_length"], X.shape[-1])
    cases = {
        "plain": ("without an encoder", ref.self_attention(X, *W)),
        "plain_permuted": ("without an encoder, tokens permuted", ref.self_attention(X[:, perm], *W)),
        "encoded": ("with a SinusoidalPositionalEncoding", ref.self_attention(encoder.forward(X), *W)),
        "encoded_permuted": ("with a SinusoidalPositionalEncoding, tokens permuted",
                             ref.self_attention(encoder.forward(X[:, perm]), *W)),
    }
    problems = each_case(lambda k, case: _wiring_problem(obs[k], obs.get("own", {}).get(k), *case),
                         cases.keys(), cases.values())
    if problems:
        return problems
    try:
        plain, plain_perm, encoded, encoded_perm = (observed_array(obs[k], k) for k in cases)
    except Problem:                 # excused above: the student's own parts raised, and their tests charge it
        return problems
    if mismatch(plain_perm, plain[:, perm], 1e-12, "") is not None:
        problems.append("without positional encoding, permuting the tokens must permute the outputs the same way")
    if mismatch(encoded_perm, encoded[:, perm], 1e-6, "") is None:
        problems.append("with positional encoding, permuting the tokens should change the outputs beyond a permutation")
    stats = obs["statistics"]
    if not (stats["finite"] is True and abs(stats["mean_shift"]) < 0.6 and 0.8 < stats["std_ratio"] < 1.6):
        problems.append(f"X + PE for X ~ N(0, 1) should stay finite with a modest change of statistics; measured "
                        f"mean shift {stats['mean_shift']:.3g}, std ratio {stats['std_ratio']:.3g}")
    return problems


TESTS = [
    HiddenTest(id="hidden_self_attention", partial=True, assignment=ASSIGNMENT, points=3, answer_cell=ATTENTION_FN,
               title="attention values for single and batched inputs, scaling by sqrt(d_k), a stable softmax",
               bullets=("integration.attention",), inputs=_attention_inputs, probe=call_each, judge=_judge_attention),
    HiddenTest(id="hidden_integration", assignment=ASSIGNMENT, points=3, answer_cell=ATTENTION_FN,
               title="permutation sensitivity with PE, equivariance without it, statistics of X + PE for X ~ N(0, 1)",
               bullets=("integration.permutation_sensitive", "integration.permutation_equivariant",
                        "integration.additive_composition", "integration.forward_with_attention"),
               inputs=_wiring_inputs, probe=probe_wiring, judge=_judge_wiring),
]
