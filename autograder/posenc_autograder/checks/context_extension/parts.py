"""Hidden tests of the bonus assignment context_extension: stretching a RoPE model's context.

Every function is judged alone: each test calls one student function with inputs the trusted side
chose (frequencies, positions and rotation angles of each scheme are sent as data, never taken
from the student's other functions), and compares what came back with the reference.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from posenc_autograder.checks.comparison import compare, expect_error, with_cause
from posenc_autograder.checks.context_extension import reference as ref
from posenc_autograder.checks.context_extension.manifest import FUNCTIONS
from posenc_autograder.checks.contracts import contracts_test
from posenc_autograder.checks.diagnosis import known_mistakes
from posenc_autograder.checks.hidden import HiddenTest, call, calling, each_call, judging_all, normal
from posenc_autograder.probes.helpers import call_each

ASSIGNMENT = "context_extension"
PI_FN, NTK_FN, YARN_FN, TEMP_FN = "interpolated_positions", "ntk_scaled_base", "yarn_frequencies", \
    "yarn_attention_scale"
LLAMA_FN, ANGLES_FN, SEEN_FN, ATTN_FN = "llama31_frequencies", "rotation_angles", "max_angle_seen", \
    "stretched_attention"

# Llama 3.1's published rope_scaling (config.json of the 3.1 models; Meta's apply_scaling): base, factor,
# low_freq_factor, high_freq_factor, original_max_position_embeddings, for a 128-wide head.
LLAMA31 = (128, 500_000.0, 8.0, 1.0, 4.0, 8192)

# The known mistakes' diagnoses; the notebook's visible checks give the same words (tests hold them together).
DIAGNOSES = {
    "pi_upside_down": "the positions were multiplied by target_len / train_len: interpolation squeezes them, "
                      "m * train_len / target_len",
    "pi_rounded": "the interpolated positions were rounded to whole numbers: they are fractions (float64), and "
                  "rounding breaks the score's dependence on the offset alone",
    "pi_floor": "the interpolated positions were cut to whole numbers (integer division or floor): they are "
                "fractions (float64), and cutting them breaks the score's dependence on the offset alone",
    "pi_last_to_last": "the positions were scaled by (train_len - 1) / (target_len - 1), mapping the last target "
                       "position onto the last trained one: position interpolation scales by train_len / target_len, "
                       "m * train_len / target_len",
    "ntk_no_exponent": "the base was multiplied by the scale alone: NTK-aware scaling uses s^(d / (d - 2)), so "
                       "that the slowest pair is divided by exactly s (d/(d-2) forgotten)",
    "ntk_inverted": "the exponent is (d - 2) / d; it must be d / (d - 2)",
    "ntk_d_minus_1": "the exponent is d / (d - 1); it must be d / (d - 2): the slowest pair's index is d/2 - 1, "
                     "so its exponent is (d - 2) / d, whose inverse is d / (d - 2)",
    "ntk_overflow": "(s**d) ** (1 / (d - 2)) overflows for a wide head: raise s to d / (d - 2) in one step, or "
                    "work in log space, base * exp(d / (d - 2) * log(s))",
    "ramp_reversed": "the ramp is reversed: pairs that turn many times in training (r > beta) keep their "
                     "frequency, pairs below alpha turns are divided by the scale",
    "wrong_length": "the wavelength was compared with the target length train_len * scale: the ratio r = L / "
                    "lambda uses the training length",
    "ratio_inverted": "the ratio is inverted: r = train_len / wavelength (turns in training), not wavelength / "
                      "train_len",
    "index_ramp": "you ramp linearly in the pair index between rounded bounds, as the YaRN reference code and "
                  "Hugging Face's _compute_yarn_parameters do: a legitimate implementation, but this exercise "
                  "asks for the paper's ramp, linear in r = L / lambda between alpha and beta",
    "multiplied": "the frequencies were multiplied by the scale: interpolation divides them by s (slower turns)",
    "log10": "use the natural logarithm: 0.1 * ln(s) + 1 (np.log, not np.log10)",
    "squared": "this is sqrt(1/t) = 0.1 ln(s) + 1 itself, the factor on q and k, not its square (1/t, the factor "
               "on the logits)",
    "bands_swapped": "the bands are swapped: wavelengths shorter than original / high_freq_factor are kept, "
                     "longer than original / low_freq_factor are divided by the factor",
    "smooth_reversed": "the blend is reversed: the weight (original / wavelength - low) / (high - low) goes on "
                       "the original frequency, 1 minus it on the divided one",
    "cycles": "the wavelength is 2 pi / omega (omega is in radians per position), not 1 / omega",
    "degrees": "the angles are in degrees: RoPE's angles are in radians, position * omega",
    "wrapped": "the angles were wrapped into one turn: keep them whole, position * omega, so they can be "
               "compared with the largest angle seen",
    "last_position": "the bound is train_len * omega (the angles of positions 0 <= m < train_len lie below it, "
                     "and interpolated positions reach up to just below train_len), not (train_len - 1) * omega",
    "turns": "that is the number of turns, train_len * omega / (2 pi); the angle is train_len * omega (radians)",
    "no_mask": "keys after the query got weight: the attention is causal, keys n <= m only",
    "scale_once": "the attention scale multiplies q and k both, so the logits grow by attention_scale ** 2",
    "no_sqrt": "the logits are divided by sqrt(head_dim), as in scaled dot-product attention",
    "halves": "your rotation pairs dimension i with i + d/2 (the \"rotate half\" layout of GPT-NeoX and Hugging "
              "Face): a legitimate RoPE convention, but this exercise uses Meta's interleaved pairs (2i, 2i+1), "
              "x[..., 0::2] and x[..., 1::2]",
    "overflow": "exp overflowed for large logits: subtract each row's maximum before exp (a stable softmax)",
}


def _diagnose(known: Callable[[], dict], expected, diagnoses: dict = DIAGNOSES):
    """A diagnose() for compare: the first named mistake whose answer the student's array matches (and the right
    answer does not). The mistakes are worked out only for a wrong answer (compare asks only then)."""
    return lambda actual: next((diagnoses[key] for key in known_mistakes(actual, expected, known())), None)


def _tolerance(expected) -> float:
    return 1e-10 * max(1.0, float(np.max(np.abs(expected))))


def _values(function, group, expected, mistakes, diagnoses: dict = DIAGNOSES):
    """The judge of a value group: expected(*args, **kwargs) and mistakes(*args, **kwargs) (named wrong answers,
    keys of `diagnoses`) for every call. A number returned as a one-element array is judged as the number: its
    type is the contracts test's to charge."""
    def problem(*args, record, label, **kwargs):
        want = expected(*args, **kwargs)
        if np.ndim(want) == 0 and "value" in record and np.size(record["value"]) == 1:
            record = {**record, "value": np.reshape(record["value"], ())}
        return compare(record, np.asarray(want, dtype=np.float64), label, _tolerance(want),
                       diagnose=_diagnose(lambda: mistakes(*args, **kwargs), want, diagnoses))
    return each_call(function, group, problem)


def _errors(function, group, why):
    return each_call(function, group, lambda *args, record, label, **_: expect_error(record, "ValueError", label,
                                                                                       why(*args)))


# --- position interpolation ------------------------------------------------------------------------

def _pi_mistakes(positions, train_len, target_len):
    right = ref.interpolated_positions(positions, train_len, target_len)
    return {"pi_upside_down": np.asarray(positions, dtype=np.float64) * target_len / train_len,
            "pi_rounded": np.round(right), "pi_floor": np.floor(right),
            "pi_last_to_last": np.asarray(positions, dtype=np.float64) * ((train_len - 1) / max(target_len - 1, 1))}


def _pi_inputs():
    long = np.arange(4 * 512)                                          # every position of 4x the training length
    scattered = np.sort(variants_positions(31, 12, 8192))
    return calling(PI_FN, values=[call(long, 512, 2048), call(scattered, 2048, 8192), call(scattered + 777, 2048, 8192),
                                  call(np.arange(40), 40, 40), call(np.arange(0, 9000, 7), 4096, 9000)])


def variants_positions(seed, count, high):
    """Integer positions below `high`, drawn from the student's variant (as a float64 list of whole numbers)."""
    return np.floor(np.abs(normal(seed, count)) * high / 4) % high


# --- NTK-aware base --------------------------------------------------------------------------------

def _ntk_mistakes(base, scale, head_dim):
    return {"ntk_no_exponent": base * scale, "ntk_inverted": base * scale ** ((head_dim - 2) / head_dim),
            "ntk_d_minus_1": base * scale ** (head_dim / (head_dim - 1))}


def _ntk_values(inputs, obs):
    judged = _values(NTK_FN, "values", ref.ntk_scaled_base, _ntk_mistakes)(inputs, obs)
    return judged.map(lambda p: with_cause(p, DIAGNOSES["ntk_overflow"]) if _overflowed(p) else p)


def _overflowed(problem: str) -> bool:
    return ("NaN or Inf" in problem or "OverflowError" in problem) and "Likely cause" not in problem


def _ntk_error_why(base, scale, head_dim):
    return "for a scale below 1" if scale < 1 else "for an odd head_dim or one below 4"


# --- YaRN ------------------------------------------------------------------------------------------

def _yarn_mistakes(head_dim, base, scale, train_len, alpha=1.0, beta=32.0):
    omega = ref.angular_frequencies(head_dim, base)
    turns = ref.turns_in(omega, train_len)
    gamma = np.clip((turns - alpha) / (beta - alpha), 0, 1)
    return {"ramp_reversed": gamma * omega / scale + (1 - gamma) * omega,
            "wrong_length": ref.by_parts(omega, scale, ref.turns_in(omega, train_len * scale), alpha, beta),
            "ratio_inverted": ref.by_parts(omega, scale, 1 / turns, alpha, beta),
            "index_ramp": _index_ramp(head_dim, base, scale, train_len, alpha, beta),
            "multiplied": (1 - gamma) * omega * scale + gamma * omega}


def _index_ramp(head_dim, base, scale, train_len, alpha, beta):
    """The YaRN reference code's ramp: bounds as pair indices, rounded outwards, linear in the index."""
    def pair_of(turns):
        return head_dim * np.log(train_len / (turns * 2 * np.pi)) / (2 * np.log(base))
    low, high = max(np.floor(pair_of(beta)), 0), min(np.ceil(pair_of(alpha)), head_dim - 1)
    high = high + 0.001 if low == high else high
    keep = 1 - np.clip((np.arange(head_dim // 2) - low) / (high - low), 0, 1)
    omega = ref.angular_frequencies(head_dim, base)
    return omega / scale * (1 - keep) + omega * keep


def _yarn_inputs():
    omega8 = ref.angular_frequencies(8, 1e4)
    at_alpha, at_beta = 2 * np.pi * 1.0 / omega8[1], 2 * np.pi * 32.0 / omega8[0]   # pair 1 at r = 1, pair 0 at 32
    return calling(YARN_FN, values=[
        call(8, 1e4, 4.0, 64), call(16, 1e4, 4.0, 256), call(64, 1e4, 8.0, 2048), call(128, 500_000.0, 16.0, 8192),
        call(32, 1e4, 1.0, 128), call(64, 1e4, 2.0, 4096, alpha=2.0, beta=16.0),
        call(8, 1e4, 4.0, float(at_alpha)), call(8, 1e4, 4.0, float(at_beta))])


# --- Llama 3.1 -------------------------------------------------------------------------------------

def _llama_mistakes(head_dim, base, factor, low, high, original):
    omega = ref.angular_frequencies(head_dim, base)
    turns = ref.turns_in(omega, original)
    smooth = np.clip((turns - low) / (high - low), 0, 1)
    def bands(kept, divided, blend):
        return np.where(kept, omega, np.where(divided, omega / factor, blend))
    return {"bands_swapped": bands(turns > low, turns < high, (1 - smooth) * omega / factor + smooth * omega),
            "smooth_reversed": bands(turns > high, turns < low, smooth * omega / factor + (1 - smooth) * omega),
            "cycles": ref.by_parts(omega, factor, original * omega, low, high),
            "multiplied": (1 - smooth) * omega * factor + smooth * omega}


LLAMA_CASES = [LLAMA31, (64, 500_000.0, 32.0, 1.0, 4.0, 8192), (128, 1e4, 4.0, 2.0, 8.0, 4096),
               (16, 1e4, 8.0, 1.0, 4.0, 64)]

# --- rotation angles and the largest angle seen ----------------------------------------------------


def _scheme_frequencies(head_dim=64, base=1e4, train_len=512, scale=4.0) -> dict:
    """Each scheme's frequencies at `scale` times the training length (the trusted side's, sent as data)."""
    omega = ref.angular_frequencies(head_dim, base)
    return {"none": omega, "ntk": ref.angular_frequencies(head_dim, ref.ntk_scaled_base(base, scale, head_dim)),
            "yarn": ref.yarn_frequencies(head_dim, base, scale, train_len),
            "llama": ref.llama31_frequencies(head_dim, base, scale, 1.0, 4.0, train_len)}


def _angle_mistakes(frequencies, positions):
    right = ref.rotation_angles(frequencies, positions)
    return {"degrees": np.degrees(right), "wrapped": np.mod(right, 2 * np.pi)}


def _angles_inputs():
    long = np.arange(4 * 512, dtype=np.float64)
    schemes = _scheme_frequencies()
    cases = [call(f, long[::16]) for f in schemes.values()]
    cases.append(call(schemes["none"], ref.interpolated_positions(long[::16], 512, 2048)))   # interpolation
    cases.append(call(normal(41, 3), variants_positions(42, 5, 100) - 50))                    # any positions
    return calling(ANGLES_FN, angles=cases)


def _seen_mistakes(frequencies, train_len):
    right = ref.max_angle_seen(frequencies, train_len)
    return {"last_position": (train_len - 1) * np.asarray(frequencies), "turns": right / (2 * np.pi),
            "degrees": np.degrees(right)}


def _seen_inputs():
    return calling(SEEN_FN, seen=[call(f, 512) for f in _scheme_frequencies().values()]
                   + [call(ref.angular_frequencies(128, 500_000.0), 8192), call(np.abs(normal(43, 4)), 7)])


# --- attention at four times the training length --------------------------------------------------

ATTN_DIM, ATTN_TRAIN = 16, 16


def _attention_cases() -> list[dict]:
    """One call per scheme, four times the training length, with the same random q and k; one case with
    logits large enough to overflow a naive softmax."""
    length = 4 * ATTN_TRAIN
    q, k = normal(51, (length, ATTN_DIM)), normal(52, (length, ATTN_DIM))
    positions = np.arange(length, dtype=np.float64)
    schemes = _scheme_frequencies(ATTN_DIM, 1e4, ATTN_TRAIN, 4.0)
    cases = [call(q, k, ref.rotation_angles(schemes["none"], positions)),
             call(q, k, ref.rotation_angles(schemes["none"], ref.interpolated_positions(positions, ATTN_TRAIN,
                                                                                         length))),
             call(q, k, ref.rotation_angles(schemes["ntk"], positions)),
             call(q, k, ref.rotation_angles(schemes["yarn"], positions), attention_scale=ref.yarn_attention_scale(4)),
             call(q, k, ref.rotation_angles(schemes["llama"], positions))]
    cases.append(call(30 * q[:8], 30 * k[:8], ref.rotation_angles(schemes["none"], positions[:8])))
    return cases


def _halves(x, angles):
    d = x.shape[-1]
    a, b = x[..., : d // 2], x[..., d // 2:]
    cos, sin = np.cos(angles), np.sin(angles)
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _attention_mistakes(q, k, angles, attention_scale=1.0):
    scores = ref.rotate_by_angles(q, angles) @ ref.rotate_by_angles(k, angles).T / np.sqrt(q.shape[-1])
    future = np.arange(len(q))[None, :] > np.arange(len(q))[:, None]

    def causal(logits):
        return np.where(future, 0.0, ref.softmax(np.where(future, -np.inf, logits)))
    return {"no_mask": ref.softmax(scores * attention_scale ** 2),
            "scale_once": causal(scores * attention_scale),
            "no_sqrt": causal(scores * attention_scale ** 2 * np.sqrt(q.shape[-1])),
            "halves": causal(_halves(q, angles) @ _halves(k, angles).T / np.sqrt(q.shape[-1]) * attention_scale ** 2)}


def _attention_judge(inputs, obs):
    judged = _values(ATTN_FN, "schemes", ref.stretched_attention, _attention_mistakes)(inputs, obs)
    return judged.map(lambda p: with_cause(p, DIAGNOSES["overflow"]) if _overflowed(p) else p)


TESTS = [
    HiddenTest(id="hidden_interpolated_positions", subjects=(PI_FN,), partial=True, assignment=ASSIGNMENT,
               points=2, answer_cell="interpolation",
               title="interpolated positions for several lengths, identity at scale 1, offsets kept",
               bullets=("stretch.shapes", "stretch.pi", "stretch.relative"),
               inputs=_pi_inputs, probe=call_each,
               judge=_values(PI_FN, "values", ref.interpolated_positions, _pi_mistakes)),
    HiddenTest(id="hidden_ntk_scaled_base", subjects=(NTK_FN,), partial=True, assignment=ASSIGNMENT,
               points=2, answer_cell="interpolation",
               title="NTK-aware bases for several widths (4 to 256) and scales, identity at scale 1, "
                     "ValueError for bad arguments",
               bullets=("stretch.errors", "stretch.ntk"),
               inputs=lambda: calling(NTK_FN, values=[call(1e4, 4.0, 64), call(500_000.0, 8.0, 128),
                                                      call(1e4, 1.0, 32), call(1e6, 64.0, 256), call(500.0, 2.5, 6),
                                                      call(1e4, 3.0, 4)],
                                      errors=[call(1e4, 2.0, 7), call(1e4, 2.0, 2), call(1e4, 0.5, 64)]),
               probe=call_each,
               judge=judging_all(_ntk_values, _errors(NTK_FN, "errors", _ntk_error_why))),
    HiddenTest(id="hidden_yarn_frequencies", subjects=(YARN_FN,), partial=True, assignment=ASSIGNMENT,
               points=3, answer_cell="yarn",
               title="YaRN frequencies for several widths, bases, scales and ramps, at both ends of the ramp",
               bullets=("stretch.shapes", "stretch.yarn"),
               inputs=_yarn_inputs, probe=call_each,
               judge=_values(YARN_FN, "values", ref.yarn_frequencies, _yarn_mistakes)),
    HiddenTest(id="hidden_yarn_attention_scale", subjects=(TEMP_FN,), partial=True, assignment=ASSIGNMENT,
               points=1, answer_cell="yarn",
               title="YaRN's attention scale, 1 at scale 1",
               bullets=("stretch.yarn",),
               inputs=lambda: calling(TEMP_FN, values=[call(s) for s in (1.0, 2.0, 4.0, 16.0, 32.5)]),
               probe=call_each,
               judge=_values(TEMP_FN, "values", ref.yarn_attention_scale,
                             lambda s: {"log10": 0.1 * np.log10(s) + 1, "squared": (0.1 * np.log(s) + 1) ** 2})),
    HiddenTest(id="hidden_llama31_frequencies", subjects=(LLAMA_FN,), partial=True, assignment=ASSIGNMENT,
               points=3, answer_cell="llama",
               title="Llama 3.1's published rope_scaling and other configurations",
               bullets=("stretch.shapes", "stretch.llama"),
               inputs=lambda: calling(LLAMA_FN, values=[call(*case) for case in LLAMA_CASES]),
               probe=call_each,
               judge=_values(LLAMA_FN, "values", ref.llama31_frequencies, _llama_mistakes)),
    HiddenTest(id="hidden_rotation_angles", subjects=(ANGLES_FN,), partial=True, assignment=ASSIGNMENT,
               points=2, answer_cell="angles",
               title="rotation angles of every scheme at four times the training length, and at any positions",
               bullets=("stretch.shapes", "stretch.relative", "stretch.unseen"),
               inputs=_angles_inputs, probe=call_each,
               judge=_values(ANGLES_FN, "angles", ref.rotation_angles, _angle_mistakes)),
    HiddenTest(id="hidden_max_angle_seen", subjects=(SEEN_FN,), partial=True, assignment=ASSIGNMENT,
               points=1, answer_cell="angles",
               title="the largest angle each pair saw in training, for every scheme",
               bullets=("stretch.unseen",),
               inputs=_seen_inputs, probe=call_each,
               judge=_values(SEEN_FN, "seen", ref.max_angle_seen, _seen_mistakes)),
    HiddenTest(id="hidden_stretched_attention", subjects=(ATTN_FN,), partial=True, assignment=ASSIGNMENT,
               points=3, answer_cell="attention",
               title="causal attention of every scheme at four times the training length, finite for large logits",
               bullets=("stretch.integration",),
               inputs=lambda: calling(ATTN_FN, schemes=_attention_cases()), probe=call_each,
               judge=_attention_judge),
    contracts_test(ASSIGNMENT, FUNCTIONS, id="hidden_context_extension_contracts", points=2, answer_cell="attention",
                   title="return types and dtypes (float64 numpy arrays, Python floats), and the caller's arrays "
                         "left unchanged, for each function that passes its own tests",
                   bullets=("stretch.shapes",)),
]
