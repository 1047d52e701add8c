"""The context_extension assignment's catalogue: mistakes and correct alternatives (see checks/catalogue.py).

Each mistake replaces one function of the solution; since each function is judged alone, it fails its own
hidden test only (a wrong return type, the contracts test only), with the points worked out from its cases.
"""
import dataclasses

from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.catalogue import Mistake, contract_rule

PI = "def interpolated_positions(positions, train_len, target_len):\n    {body}\n"
NTK = ("def ntk_scaled_base(base, scale, head_dim):\n"
       "    if head_dim < 4 or head_dim % 2:\n        raise ValueError('head_dim')\n"
       "    if scale < 1:\n        raise ValueError('scale')\n    {body}\n")
YARN = ("def yarn_frequencies(head_dim, base, scale, train_len, alpha=1.0, beta=32.0):\n"
        "    omega = base ** (-np.arange(0, head_dim, 2) / head_dim)\n"
        "    turns = train_len * omega / (2 * np.pi)\n    {body}\n")
LLAMA = ("def llama31_frequencies(head_dim, base, factor, low_freq_factor, high_freq_factor, original_max_position):\n"
         "    omega = base ** (-np.arange(0, head_dim, 2) / head_dim)\n"
         "    wavelength = 2 * np.pi / omega\n    {body}\n")
ATTENTION = '''
def stretched_attention(q, k, angles, attention_scale=1.0):
    cos, sin = np.cos(angles), np.sin(angles)
    def rotate(x):
        out = np.empty(x.shape)
        {rotate}
        return out
    scores = rotate(q) @ rotate(k).T * {scale} / np.sqrt(q.shape[-1]) {sqrt}
    {mask}
    {softmax}
'''
ROTATE = ("out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin\n"
          "        out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos")
HALVES = ("h = x.shape[1] // 2\n"
          "        out[:, :h] = x[:, :h] * cos - x[:, h:] * sin\n"
          "        out[:, h:] = x[:, :h] * sin + x[:, h:] * cos")
MASK = "scores = np.where(np.triu(np.ones(scores.shape, bool), 1), -np.inf, scores)"
STABLE = ("w = np.exp(scores - scores.max(axis=1, keepdims=True))\n"
          "    return w / w.sum(axis=1, keepdims=True)")


def attention(rotate=ROTATE, scale="attention_scale ** 2", sqrt="", mask=MASK, softmax=STABLE):
    return ATTENTION.format(rotate=rotate, scale=scale, sqrt=sqrt, mask=mask, softmax=softmax)


LAYERS = ("def layer_rotation_angles(head_dim, n_layers, global_every, local_base, global_base, global_factor,\n"
          "                          window, length):\n"
          "    if head_dim % 2:\n        raise ValueError('head_dim')\n"
          "    layers = np.arange(n_layers)\n"
          "    is_global = {is_global}\n"
          "    local = base_freqs(head_dim, {local_base}) * {local_offset}{local_factor}\n"
          "    wide = base_freqs(head_dim, {global_base}) {global_op} global_factor * {global_offset}\n"
          "    return np.where(is_global[:, None], wide[None, :], local[None, :])\n"
          "def base_freqs(head_dim, base):\n"
          "    return base ** (-np.arange(0, head_dim, 2) / head_dim)\n")


def layers(is_global="(layers + 1) % global_every == 0", local_base="local_base", global_base="global_base",
           local_offset="(min(window, length) - 1)", local_factor="", global_op="/", global_offset="(length - 1)"):
    return LAYERS.format(is_global=is_global, local_base=local_base, global_base=global_base,
                         local_offset=local_offset, local_factor=local_factor, global_op=global_op,
                         global_offset=global_offset)


RAMP = "gamma = np.clip((turns - alpha) / (beta - alpha), 0, 1)\n    "
LLAMA_WEIGHT = ("w = (original_max_position / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)\n"
                "    ")

MISTAKES = [
    Mistake("positions multiplied by the scale", PI.format(body="return np.asarray(positions, float) * target_len / "
                                                                "train_len"),
            "hidden_interpolated_positions", "multiplied by target_len / train_len"),
    Mistake("interpolated positions rounded", PI.format(body="return np.round(np.asarray(positions) * train_len / "
                                                             "target_len)"),
            "hidden_interpolated_positions", "rounded to whole numbers"),
    Mistake("integer division of positions", PI.format(body="return (np.asarray(positions) * train_len // "
                                                            "target_len).astype(float)"),
            "hidden_interpolated_positions", "integer division or floor"),
    Mistake("interpolation maps the last position onto the last", PI.format(
        body="return np.asarray(positions, float) * ((train_len - 1) / (target_len - 1))"),
            "hidden_interpolated_positions", "mapping the last target position onto the last trained one"),
    Mistake("NTK: d/(d-2) forgotten", NTK.format(body="return float(base * scale)"),
            "hidden_ntk_scaled_base", "d/(d-2) forgotten"),
    Mistake("NTK: exponent upside down", NTK.format(body="return float(base * scale ** ((head_dim - 2) / head_dim))"),
            "hidden_ntk_scaled_base", "it must be d / (d - 2)"),
    Mistake("NTK: exponent d/(d-1)", NTK.format(body="return float(base * scale ** (head_dim / (head_dim - 1)))"),
            "hidden_ntk_scaled_base", "the exponent is d / (d - 1)"),
    Mistake("NTK: (s**d) ** (1/(d-2)) overflows", NTK.format(body="return float(base * (scale ** head_dim) ** "
                                                                  "(1 / (head_dim - 2)))"),
            "hidden_ntk_scaled_base", "overflows for a wide head"),
    Mistake("NTK: no ValueError for odd widths", "def ntk_scaled_base(base, scale, head_dim):\n"
                                                 "    if scale < 1:\n        raise ValueError('scale')\n"
                                                 "    return float(base * scale ** (head_dim / (head_dim - 2)))\n",
            "hidden_ntk_scaled_base", "must raise ValueError for an odd head_dim"),
    Mistake("YaRN: ramp reversed", YARN.format(body=RAMP + "return gamma * omega / scale + (1 - gamma) * omega"),
            "hidden_yarn_frequencies", "the ramp is reversed"),
    Mistake("YaRN: wavelength compared with the target length",
            YARN.format(body="turns = turns * scale\n    " + RAMP
                        + "return (1 - gamma) * omega / scale + gamma * omega"),
            "hidden_yarn_frequencies", "compared with the target length"),
    Mistake("YaRN: wavelength over length", YARN.format(
        body="turns = 1 / turns\n    " + RAMP + "return (1 - gamma) * omega / scale + gamma * omega"),
            "hidden_yarn_frequencies", "the ratio is inverted"),
    Mistake("YaRN: frequencies multiplied by the scale",
            YARN.format(body=RAMP + "return (1 - gamma) * omega * scale + gamma * omega"),
            "hidden_yarn_frequencies", "multiplied by the scale"),
    Mistake("YaRN: the reference code's ramp in the pair index", YARN.format(body='''import math
    def pair_of(rotations):
        return head_dim * math.log(train_len / (rotations * 2 * math.pi)) / (2 * math.log(base))
    low, high = max(math.floor(pair_of(beta)), 0), min(math.ceil(pair_of(alpha)), head_dim - 1)
    if low == high:
        high += 0.001
    keep = 1 - np.clip((np.arange(head_dim // 2) - low) / (high - low), 0, 1)
    return omega / scale * (1 - keep) + omega * keep'''),
            "hidden_yarn_frequencies", "as the YaRN reference code and Hugging Face"),
    Mistake("YaRN scale: log10", "def yarn_attention_scale(scale):\n    return float(0.1 * np.log10(scale) + 1)\n",
            "hidden_yarn_attention_scale", "use the natural logarithm"),
    Mistake("YaRN scale: squared (1/t)", "def yarn_attention_scale(scale):\n"
                                         "    return float((0.1 * np.log(scale) + 1) ** 2)\n",
            "hidden_yarn_attention_scale", "not its square"),
    Mistake("Llama: bands swapped", LLAMA.format(
        body=LLAMA_WEIGHT + "blend = (1 - w) * omega / factor + w * omega\n"
        "    return np.where(wavelength < original_max_position / low_freq_factor, omega, np.where(\n"
        "        wavelength > original_max_position / high_freq_factor, omega / factor, blend))"),
            "hidden_llama31_frequencies", "the bands are swapped"),
    Mistake("Llama: blend reversed", LLAMA.format(
        body=LLAMA_WEIGHT + "blend = w * omega / factor + (1 - w) * omega\n"
        "    return np.where(wavelength < original_max_position / high_freq_factor, omega, np.where(\n"
        "        wavelength > original_max_position / low_freq_factor, omega / factor, blend))"),
            "hidden_llama31_frequencies", "the blend is reversed"),
    Mistake("Llama: wavelength 1 / omega", LLAMA.format(
        body="wavelength = 1 / omega\n    " + LLAMA_WEIGHT + "blend = (1 - w) * omega / factor + w * omega\n"
        "    return np.where(wavelength < original_max_position / high_freq_factor, omega, np.where(\n"
        "        wavelength > original_max_position / low_freq_factor, omega / factor, blend))"),
            "hidden_llama31_frequencies", "not 1 / omega"),
    Mistake("angles in degrees", "def rotation_angles(frequencies, positions):\n"
                                 "    return np.degrees(np.outer(positions, frequencies).astype(float))\n",
            "hidden_rotation_angles", "in degrees"),
    Mistake("angles wrapped into one turn", "def rotation_angles(frequencies, positions):\n"
                                            "    return np.mod(np.outer(positions, frequencies), 2 * np.pi)\n",
            "hidden_rotation_angles", "wrapped into one turn"),
    Mistake("angles transposed", "def rotation_angles(frequencies, positions):\n"
                                 "    return np.outer(frequencies, positions).astype(float)\n",
            "hidden_rotation_angles", "looks transposed"),
    Mistake("largest angle at the last position", "def max_angle_seen(frequencies, train_len):\n"
                                                  "    return (train_len - 1) * np.asarray(frequencies, float)\n",
            "hidden_max_angle_seen", "not (train_len - 1) * omega"),
    Mistake("largest angle as turns", "def max_angle_seen(frequencies, train_len):\n"
                                      "    return train_len * np.asarray(frequencies, float) / (2 * np.pi)\n",
            "hidden_max_angle_seen", "that is the number of turns"),
    Mistake("attention: no causal mask", attention(mask=""), "hidden_stretched_attention", "causal"),
    Mistake("attention: scale applied once", attention(scale="attention_scale"), "hidden_stretched_attention",
            "attention_scale ** 2"),
    Mistake("attention: no sqrt(d)", attention(sqrt="* np.sqrt(q.shape[-1])"), "hidden_stretched_attention",
            "divided by sqrt(head_dim)"),
    Mistake("attention: rotate_half pairs", attention(rotate=HALVES), "hidden_stretched_attention",
            "rotate half"),
    Mistake("attention: naive softmax overflows", attention(softmax="w = np.exp(scores)\n"
                                                                    "    return w / w.sum(axis=1, keepdims=True)"),
            "hidden_stretched_attention", "subtract each row's maximum"),
    Mistake("layers: local layers not capped by the window", layers(local_offset="(length - 1)"),
            "hidden_layer_rotation_angles", "keys lie within its window"),
    Mistake("layers: window not capped by a shorter input", layers(local_offset="(window - 1)"),
            "hidden_layer_rotation_angles", "the input is shorter than the window"),
    Mistake("layers: offsets W and L instead of W - 1 and L - 1",
            layers(local_offset="min(window, length)", global_offset="length"),
            "hidden_layer_rotation_angles", "not W"),
    Mistake("layers: factor on local layers too", layers(local_factor=" / global_factor"),
            "hidden_layer_rotation_angles", "only global layers are interpolated"),
    Mistake("layers: the first of each group global", layers(is_global="layers % global_every == 0"),
            "hidden_layer_rotation_angles", "not the first"),
    Mistake("layers: bases swapped", layers(local_base="global_base", global_base="local_base"),
            "hidden_layer_rotation_angles", "the bases are swapped"),
    Mistake("layers: factor multiplied", layers(global_op="*"),
            "hidden_layer_rotation_angles", "multiplied by the factor"),
    Mistake("frequencies returned as a list", "_yarn = yarn_frequencies\n"
                                              "def yarn_frequencies(*args, **kwargs):\n"
                                              "    return list(_yarn(*args, **kwargs))\n",
            "hidden_context_extension_contracts", "expected a float64 numpy ndarray"),
    Mistake("NTK base as a numpy array", "_ntk = ntk_scaled_base\n"
                                         "def ntk_scaled_base(base, scale, head_dim):\n"
                                         "    return np.array([_ntk(base, scale, head_dim)])\n",
            "hidden_context_extension_contracts", "expected a Python float"),
]

# Points each mistake loses, decided from its cases before grading: a mistake in every case loses the test; one
# that only some cases reveal loses their share, rounded down to a half point.
PARTIAL_POINTS_LOST = {
    "NTK: d/(d-2) forgotten": 1.5, "NTK: exponent upside down": 1.5,   # scale 1 and the 3 errors pass
    "NTK: exponent d/(d-1)": 1.5,
    "NTK: (s**d) ** (1/(d-2)) overflows": 0.5, "NTK: no ValueError for odd widths": 0.5,
    "frequencies returned as a list": 0.5, "NTK base as a numpy array": 0.5,   # 1 of 8 contracts
    "attention: scale applied once": 0.5, "attention: naive softmax overflows": 0.5,
    "attention: no sqrt(d)": 2.5,                         # the saturated large-logit case passes
    # layer_rotation_angles: 6 value cases and 1 error case, 3 points. Only the fifth case (300 tokens, window
    # 512) is shorter than its window; only the sixth (3 layers, one global in 4) has no global layer.
    "layers: local layers not capped by the window": 2.5,  # wrong in 5 cases: 2 of 7 pass, 6/7 -> 0.5 kept
    "layers: window not capped by a shorter input": 0.5,   # wrong in the fifth only: 6 of 7, 18/7 -> 2.5 kept
    "layers: factor multiplied": 2.5,                      # the sixth has no global layer: 2 of 7 pass
}
CONTRACTS = "hidden_context_extension_contracts"
CONTRACT_CASE = 0.5          # one function's case of the contracts test: 2 points over 9 functions, to a half point


def _points_lost(mistake: Mistake) -> float:
    """A mistake not listed above loses every value test it fails, whole; a value mistake also loses its
    function's contracts case (contract_rule)."""
    value_tests = mistake.failing - {CONTRACTS}
    stated = PARTIAL_POINTS_LOST.get(mistake.name, sum(REGISTRY[cid].points for cid in value_tests))
    return stated + (CONTRACT_CASE if value_tests and CONTRACTS in mistake.failing else 0.0)


MISTAKES = [dataclasses.replace(m, points_lost=_points_lost(m))
           for m in contract_rule(MISTAKES, CONTRACTS)]

ALTERNATIVES = {
    "interpolation as a division by the scale": PI.format(
        body="return np.asarray(positions, dtype=float) / (target_len / train_len)"),
    "NTK base in log space with math": NTK.format(
        body="import math\n    return math.exp(math.log(base) + head_dim / (head_dim - 2) * math.log(scale))"),
    "YaRN by explicit bands": YARN.format(body='''gamma = (turns - alpha) / (beta - alpha)
    gamma = np.where(turns < alpha, 0.0, np.where(turns > beta, 1.0, gamma))
    return omega * (gamma + (1 - gamma) / scale)'''),
    "Llama 3.1 as Meta's loop": '''
import math
def llama31_frequencies(head_dim, base, factor, low_freq_factor, high_freq_factor, original_max_position):
    new = []
    for i in range(head_dim // 2):
        freq = 1.0 / base ** (2 * i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < original_max_position / high_freq_factor:
            new.append(freq)
        elif wavelen > original_max_position / low_freq_factor:
            new.append(freq / factor)
        else:
            smooth = (original_max_position / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            new.append((1 - smooth) * freq / factor + smooth * freq)
    return np.array(new)
''',
    "angles with einsum": "def rotation_angles(frequencies, positions):\n"
                          "    return np.einsum('m,i->mi', np.asarray(positions, float),\n"
                          "                     np.asarray(frequencies, float))\n",
    "layers one by one, as a configuration is read": '''
def layer_rotation_angles(head_dim, n_layers, global_every, local_base, global_base, global_factor, window, length):
    if head_dim % 2:
        raise ValueError("odd head_dim")
    pairs = np.arange(head_dim // 2)
    rows = []
    for layer in range(n_layers):
        if (layer + 1) % global_every == 0:
            rows.append((length - 1) / (global_factor * global_base ** (2 * pairs / head_dim)))
        else:
            rows.append((min(window, length) - 1) * local_base ** (-2.0 * pairs / head_dim))
    return np.array(rows, dtype=float).reshape(n_layers, head_dim // 2)
''',
    "attention with complex numbers, as Meta's code": '''
def stretched_attention(q, k, angles, attention_scale=1.0):
    turn = np.exp(1j * angles)
    qc, kc = (q[:, 0::2] + 1j * q[:, 1::2]) * turn, (k[:, 0::2] + 1j * k[:, 1::2]) * turn
    scores = (qc.real @ kc.real.T + qc.imag @ kc.imag.T) * attention_scale ** 2 / np.sqrt(q.shape[1])
    scores[np.triu_indices(len(q), 1)] = -np.inf
    w = np.exp(scores - scores.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True)
''',
}
