"""Hidden tests for the integration part: self-attention, and position information inside it."""
from __future__ import annotations

import typing

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.comparison import against_any, compare, mismatch, raised_problem
from posenc_autograder.checks.hidden import HiddenTest, call, calling, each_call, each_case, normal
from posenc_autograder.checks.positional_encoding import reference as ref
from posenc_autograder.checks.positional_encoding import stand_ins
from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_attention
from posenc_autograder.checks.positional_encoding.stand_ins import projection_stand_in
from posenc_autograder.checks.reproduction import reproduced, reproduction, step
from posenc_autograder.probes.helpers import call_each
from posenc_autograder.probes.positional_encoding import probe_wiring
from posenc_autograder.results import Unshown

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


def _attention_problem(X, *W, record, label):
    return compare(record, ref.self_attention(X, *W),
                   f"{ATTENTION_FN} on X of shape {X.shape} with entries up to {np.abs(X).max():.0f}", 1e-9,
                   diagnose=lambda out: diagnose_attention(out, X, W))


_judge_attention = each_call(ATTENTION_FN, "outputs", _attention_problem)


# --- encode_and_attend, judged alone -----------------------------------------------------------

def _wiring_inputs():
    return {"function": WIRED_FN, "X": normal(61, (2, 6, D_MODEL)), "W": _weights(62),
            "permutation": [3, 0, 5, 1, 4, 2], "encoder_table": normal(63, (16, D_MODEL)),
            "stand_ins": {ATTENTION_FN: projection_stand_in(normal(64, (D_MODEL, D_MODEL)))}}


def stand_in_attention(X, W, projection):
    """What the probe's stand-in for self_attention returns (the same function: stand_ins.projection)."""
    return stand_ins.projection({"projection": projection})(X, *W)


def _wiring_cases(inputs) -> dict:
    """Case -> (label, the input attention should see): encode_and_attend must add the encoder's output
    (an AddingEncoder: X + its table) before attention, and pass X untouched without one."""
    X, perm, table = inputs["X"], np.array(inputs["permutation"]), inputs["encoder_table"]
    encoded = lambda x: x + table[None, :x.shape[1]]     # noqa: E731 - the AddingEncoder's forward
    return {"plain": ("without an encoder", X),
            "plain_permuted": ("without an encoder, tokens permuted", X[:, perm]),
            "encoded": ("with an encoder", encoded(X)),
            "encoded_permuted": ("with an encoder, tokens permuted", encoded(X[:, perm]))}


def _same(a, b) -> bool:
    return a.shape == b.shape and mismatch(a, b, 1e-9, "") is None


def _judge_wiring(inputs, obs):
    """Each case against attention on the right input: the probe's stand-in attention, or the reference for
    an encode_and_attend that computes attention itself. A mistake in self_attention is not charged here."""
    W, projection = inputs["W"], inputs["stand_ins"][ATTENTION_FN]["projection"]
    perm = np.array(inputs["permutation"])

    def of_case(key, _case=None):
        """encode_and_attend as the probe called it in this case (the encoder: the grader's, not shown)."""
        x = inputs["X"][:, perm] if key.endswith("permuted") else inputs["X"]
        encoder: dict[str, typing.Any] = {"encoder": ENCODER} if key.startswith("encoded") else {}
        return reproduction(step(WIRED_FN, x, *W, **encoder), stand_ins=(ATTENTION_FN,))
    if "error" in obs:
        return [reproduced(raised_problem(f"running {WIRED_FN} failed: {obs['error']}", obs["error"]),
                           of_case("encoded"))]
    cases = _wiring_cases(inputs)

    def attention_on(x):
        return stand_in_attention(x, W, projection), ref.self_attention(x, *W)

    def case_problem(key, case):
        label, seen = case
        unencoded = attention_on(cases[key.replace("encoded", "plain")][1])
        diagnose = lambda out: "the encoder is ignored: pass encoder.forward(X) to attention" \
            if key.startswith("encoded") and any(_same(out, e) for e in unencoded) else None  # noqa: E731
        return against_any(lambda expected: compare(obs[key], expected, f"{WIRED_FN} {label}", 1e-9, diagnose),
                           *attention_on(seen))

    return each_case(case_problem, list(cases), list(cases.values()), reproduce=of_case)


ENCODER = Unshown("encoder", "an encoder of the grader's whose forward(X) adds the rows of a table of its own to X")


TESTS = [
    HiddenTest(id="hidden_self_attention", partial=True, assignment=ASSIGNMENT, points=3, answer_cell=ATTENTION_FN,
               title="attention values for single and batched inputs, scaling by sqrt(d_k), a stable softmax",
               bullets=("integration.attention",), subjects=(ATTENTION_FN,),
               inputs=_attention_inputs, probe=call_each, judge=_judge_attention),
    HiddenTest(id="hidden_integration", assignment=ASSIGNMENT, points=3, answer_cell=ATTENTION_FN,
               title="attention on X, or on the encoder's output when one is given, for tokens in two orders (judged "
                     "alone: a stand-in attention and encoder)",
               bullets=("integration.permutation_sensitive", "integration.permutation_equivariant",
                        "integration.additive_composition", "integration.forward_with_attention"),
               subjects=(WIRED_FN,), depends=(ATTENTION_FN,),
               inputs=_wiring_inputs, probe=probe_wiring, judge=_judge_wiring),
]
