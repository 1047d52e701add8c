"""The rope_alibi assignment's catalogue: mistakes the hidden tests must catch and correct alternatives that must
keep full marks (see checks/catalogue.py)."""
from __future__ import annotations

from posenc_autograder.checks.catalogue import Mistake, contract_rule, stubs

ROPE_TEMPLATE = '''
def apply_rope(x, positions, base=10000.0):
    theta = rope_frequencies(x.shape[-1], base)
    angles = ({positions})[:, None] * theta[None, :]
    cos, sin = np.cos(angles), {sin}
    d = x.shape[-1]
    a, b = {pairs}
    first, second = a * cos - b * sin, a * sin + b * cos
    {assemble}
'''
INTERLEAVED = "x[..., 0::2], x[..., 1::2]"
WRITE_INTERLEAVED = ("out = np.empty(x.shape)\n    out[..., 0::2], out[..., 1::2] = first, second\n"
                     "    return out")


def rope_variant(positions="np.asarray(positions, dtype=float)", sin="np.sin(angles)", pairs=INTERLEAVED,
                 assemble=WRITE_INTERLEAVED):
    return ROPE_TEMPLATE.format(positions=positions, sin=sin, pairs=pairs, assemble=assemble)


def frequencies_variant(body, check="if head_dim % 2:\n        raise ValueError('odd')\n    "):
    return f"def rope_frequencies(head_dim, base=10000.0):\n    {check}{body}\n"


def slopes_variant(body):
    return f"def alibi_slopes(n_heads):\n    {body}\n"


def bias_variant(body):
    return f"def alibi_bias(n_heads, seq_len):\n    {body}\n"


# Points lost with partial credit: floor(2 * points * passed / cases) / 2 kept. The contracts test has one case per
# function (5 here): a function whose value test fails loses its contract case too (2 * 4/5 -> 1.5 kept, so 0.5 lost).
# hidden_rope_frequencies has 5 hidden_rope_frequencies has 5
# cases (4 sizes, one odd), hidden_apply_rope 4 (the first at positions 0..4), hidden_rope_relative 3,
# hidden_alibi_slopes 7 (5 powers of two, 6 and 12), hidden_alibi_bias 3 (the last has one head and L = 1).
MISTAKES = [
    Mistake("RoPE exponent i/d", frequencies_variant("return base ** (-np.arange(head_dim // 2) / head_dim)"),
            "hidden_rope_frequencies", "i/d instead of 2i/d", points_lost=2),     # head_dim 2 and odd pass
    Mistake("no ValueError for an odd head_dim", frequencies_variant(
        "return base ** (-2 * np.arange(head_dim // 2) / head_dim)", check=""),
            "hidden_rope_frequencies", "must raise ValueError for an odd head dimension", points_lost=1),
    Mistake("frequencies returned as float32", frequencies_variant(
        "return (base ** (-2 * np.arange(head_dim // 2) / head_dim)).astype(np.float32)"),
            "hidden_rope_alibi_contracts", "returned a float32 ndarray; expected a float64",
            points_lost=0.5),
    Mistake("rotated vectors returned as float32 (a PyTorch port)", '''
_rotate = apply_rope
def apply_rope(x, positions, base=10000.0):
    return _rotate(x, positions, base).astype(np.float32)
''', "hidden_rope_alibi_contracts", "returned a float32 ndarray; expected a float64", points_lost=0.5),
    Mistake("clockwise rotation", rope_variant(sin="-np.sin(angles)"), "hidden_apply_rope", "wrong way",
            points_lost=4.5),
    Mistake("halves instead of pairs", rope_variant(pairs="x[..., :d // 2], x[..., d // 2:]",
                                                    assemble="return np.concatenate([first, second], axis=-1)"),
            "hidden_apply_rope", "legitimate RoPE convention, the one GPT-NeoX and Hugging Face", points_lost=4.5),
    Mistake("rotate half with the adjacent pairs' angles", '''
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    angles = np.repeat(np.asarray(positions, dtype=float)[:, None] * rope_frequencies(d, base)[None, :], 2, axis=-1)
    rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * np.cos(angles) + rotated * np.sin(angles)
''', "hidden_apply_rope", "the two layouts were mixed"),
    Mistake("positions off by one", rope_variant(positions="np.asarray(positions, dtype=float) + 1"),
            "hidden_apply_rope", "shifted by one", points_lost=4.5),
    Mistake("positions ignored", rope_variant(positions="np.arange(x.shape[-2], dtype=float)"),
            "hidden_apply_rope", "positions were ignored", points_lost=3.5),      # right at positions 0..4
    Mistake("apply_rope rotates x in place", rope_variant(
        assemble="x[..., 0::2], x[..., 1::2] = first, second\n    return x"),
            "hidden_rope_alibi_contracts", "apply_rope changed its argument x in place", points_lost=0.5),
    Mistake("scores from unrotated keys", "def rope_scores(q, k, q_positions, k_positions):\n"
                                          "    return apply_rope(q, q_positions) @ k.T\n",
            "hidden_rope_relative", "depend only on the distance", points_lost=3.5),
    Mistake("scores scaled by sqrt(head_dim)", "def rope_scores(q, k, q_positions, k_positions):\n"
                                               "    s = apply_rope(q, q_positions) @ apply_rope(k, k_positions).T\n"
                                               "    return s / np.sqrt(q.shape[-1])\n",
            "hidden_rope_relative", "divided by sqrt(head_dim)", points_lost=3.5),
    Mistake("naive slopes for any head count", slopes_variant(
        "return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)"),
            "hidden_alibi_slopes", "next lower power of two", points_lost=1.5),      # 5 of 7 pass
    Mistake("slopes numbered from h = 0", slopes_variant("return 2.0 ** (-8.0 * np.arange(n_heads) / n_heads)"),
            "hidden_alibi_slopes", "the first slope is 2^(-8/n_heads), not 1", points_lost=2.5),
    Mistake("slopes as a Python list", slopes_variant(
        "lower = 2 ** int(np.log2(n_heads))\n"
        "    slopes = [2.0 ** (-8.0 * h / lower) for h in range(1, lower + 1)]\n"
        "    return slopes + [2.0 ** (-4.0 * h / lower) for h in range(1, 2 * lower, 2)][:n_heads - lower]"),
            "hidden_rope_alibi_contracts", "returned a list; expected a float64 numpy ndarray", points_lost=0.5),
    Mistake("bias sign flipped", bias_variant(
        "d = np.abs(np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :])\n"
        "    return alibi_slopes(n_heads)[:, None, None] * d"), "hidden_alibi_bias", "sign is flipped",
            points_lost=2.5),
    Mistake("signed distance", bias_variant(
        "d = np.arange(seq_len)[None, :] - np.arange(seq_len)[:, None]\n"
        "    return -alibi_slopes(n_heads)[:, None, None] * d"), "hidden_alibi_bias", "signed difference",
            points_lost=2.5),
    Mistake("bias on the causal half only", bias_variant(
        "d = np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :]\n"
        "    return -alibi_slopes(n_heads)[:, None, None] * np.maximum(d, 0)"),
            "hidden_alibi_bias", "only the causal half", points_lost=2.5),
]

ALTERNATIVES = {
    "RoPE with complex numbers": '''
def apply_rope(x, positions, base=10000.0):
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.outer(positions, rope_frequencies(x.shape[-1], base)))
    out = np.empty(x.shape)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out
''',
    "RoPE with explicit rotation matrices": '''
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    out = np.empty(x.shape)
    for l, m in enumerate(positions):
        R = np.zeros((d, d))
        for i, t in enumerate(rope_frequencies(d, base)):
            c, s = np.cos(m * t), np.sin(m * t)
            R[2*i:2*i+2, 2*i:2*i+2] = [[c, -s], [s, c]]
        out[..., l, :] = x[..., l, :] @ R.T
    return out
''',
    "RoPE through rotate_half on reordered columns": '''
def apply_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    order = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])      # interleaved -> halves
    theta = np.tile(rope_frequencies(d, base), 2)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta
    h = x[..., order]
    rotated = h * np.cos(angles) + np.concatenate([-h[..., d // 2:], h[..., :d // 2]], axis=-1) * np.sin(angles)
    return rotated[..., np.argsort(order)]
''',
    "frequencies as 1 / base^(2i/d)": '''
def rope_frequencies(head_dim, base=10000.0):
    if head_dim % 2 == 1:
        raise ValueError("head_dim must be even")
    return 1.0 / np.power(base, np.arange(0, head_dim, 2) / head_dim)
''',
    "ALiBi with loops": '''
def alibi_bias(n_heads, seq_len):
    slopes = alibi_slopes(n_heads)
    out = np.zeros((n_heads, seq_len, seq_len))
    for h in range(n_heads):
        for i in range(seq_len):
            for j in range(seq_len):
                out[h, i, j] = -slopes[h] * abs(i - j)
    return out
''',
    "ALiBi slopes by Press et al.'s recursion": '''
import math
def alibi_slopes(n_heads):
    def power_of_two(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n_heads).is_integer():
        return np.array(power_of_two(n_heads))
    closest = 2 ** math.floor(math.log2(n_heads))
    return np.array(power_of_two(closest) + power_of_two(2 * closest)[0::2][:n_heads - closest])
''',
}


# Ported from well-known public code, their conventions kept (see positional_encoding's catalogue).
PORTED_MISTAKES = [
    # Hugging Face's Llama (and GPT-NeoX): rotate_half pairs i with i + d/2; its own inv_freq. All 4 cases: 4, and 0.5.
    Mistake("port: Hugging Face Llama apply_rotary_pos_emb (rotate_half)", """
def apply_rope(x, positions, base=10000.0):
    dim = x.shape[-1]
    inv_freq = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float64) / dim))
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb), np.sin(emb)

    def rotate_half(x):
        x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
        return np.concatenate([-x2, x1], axis=-1)
    return x * cos + rotate_half(x) * sin
""", "hidden_apply_rope", "legitimate RoPE convention", points_lost=4.5),
    # BLOOM's build_alibi_tensor builds its bases in float32; cast to float64 at the end, the slopes of 12 and 16 heads
    # (bases 2^-0.5) carry float32 rounding: 5 of 7 pass (1 kept of 2), and 0.5.
    Mistake("port: BLOOM build_alibi_tensor slopes (float32 bases)", """
import math
def alibi_slopes(n_heads):
    closest_power_of_2 = 2 ** math.floor(math.log2(n_heads))
    base = np.float32(2 ** (-(2 ** -(math.log2(closest_power_of_2) - 3))))
    powers = np.arange(1, 1 + closest_power_of_2, dtype=np.float32)
    slopes = np.power(base, powers, dtype=np.float32)
    if closest_power_of_2 != n_heads:
        extra_base = np.float32(2 ** (-(2 ** -(math.log2(2 * closest_power_of_2) - 3))))
        num_remaining_heads = min(closest_power_of_2, n_heads - closest_power_of_2)
        extra_powers = np.arange(1, 1 + 2 * num_remaining_heads, 2, dtype=np.float32)
        slopes = np.concatenate([slopes, np.power(extra_base, extra_powers, dtype=np.float32)], axis=0)
    return slopes.astype(np.float64)
""", "hidden_alibi_slopes", "the size of float32 rounding", points_lost=1.5),
    # BLOOM's bias: slopes times the key's index (the cumulative sum of an all-ones mask, minus one). Right only for
    # L = 1: 1 of 3 cases (1 kept of 3), and 0.5.
    Mistake("port: BLOOM build_alibi_tensor bias (slope times key index)", """
def alibi_bias(n_heads, seq_len):
    attention_mask = np.ones((1, seq_len))
    arange_tensor = ((np.cumsum(attention_mask, axis=-1) - 1) * attention_mask)[:, None, :]
    alibi = np.asarray(alibi_slopes(n_heads))[..., None] * arange_tensor
    return np.broadcast_to(alibi.reshape(n_heads, 1, seq_len), (n_heads, seq_len, seq_len)).copy()
""", "hidden_alibi_bias", "the key's index, as in Press et al.'s code and BLOOM", points_lost=2.5),
    # Press et al.'s own fairseq code: slopes times torch.arange(maxpos), expanded over the heads. The same outcome.
    Mistake("port: Press et al. fairseq alibi (slope times key index)", """
def alibi_bias(n_heads, seq_len):
    slopes = np.asarray(alibi_slopes(n_heads))
    alibi = slopes[:, None, None] * np.arange(seq_len)[None, None, :]
    return np.broadcast_to(alibi, (n_heads, seq_len, seq_len)).copy()
""", "hidden_alibi_bias", "your understanding is right", points_lost=2.5),
    # A student repository (lpkphd/mosaic-gpt): ratio 2^(-8/n) to the powers 1..n for any head count. 6 and 12 fail.
    Mistake("port: mosaic-gpt build_alibi_bias slopes (any head count)", """
def alibi_slopes(n_heads):
    ratio = 2 ** (-8 / n_heads)
    return np.array([ratio ** i for i in range(1, n_heads + 1)])
""", "hidden_alibi_slopes", "next lower power of two", points_lost=1.5),
    # Two mistakes seen in tutorials: the pair index doubled twice, and tensor2tensor's spacing carried over to RoPE.
    # Of the 5 cases only head_dim 2 and the odd size pass (0.5 kept of 2), and 0.5.
    Mistake("RoPE exponent doubled", frequencies_variant(
        "return base ** (-2 * np.arange(0, head_dim, 2) / head_dim)"),
            "hidden_rope_frequencies", "the exponent is doubled", points_lost=2),
    Mistake("RoPE frequencies spaced as in tensor2tensor", frequencies_variant(
        "return base ** (-np.arange(head_dim // 2) / max(head_dim // 2 - 1, 1))"),
            "hidden_rope_frequencies", "as in tensor2tensor and fairseq", points_lost=2),
]

PORTED_ALTERNATIVES = {
    # Meta's Llama: precompute_freqs_cis and apply_rotary_emb, pairs (2i, 2i+1) as complex numbers (the odd-size
    # ValueError is the exercise's, added as a student would).
    "port: Meta Llama precompute_freqs_cis": """
def rope_frequencies(head_dim, base=10000.0):
    if head_dim % 2:
        raise ValueError("head_dim must be even")
    return 1.0 / (base ** (np.arange(0, head_dim, 2)[: head_dim // 2].astype(np.float64) / head_dim))
""",
    "port: Meta Llama apply_rotary_emb": """
def apply_rope(x, positions, base=10000.0):
    freqs = np.outer(np.asarray(positions, dtype=np.float64), rope_frequencies(x.shape[-1], base))
    freqs_cis = np.exp(1j * freqs)
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    rotated = (pairs[..., 0] + 1j * pairs[..., 1]) * freqs_cis
    return np.stack([rotated.real, rotated.imag], axis=-1).reshape(x.shape)
""",
    # MosaicML's llm-foundry gen_slopes (alibi_bias_max 8) and build_alibi_bias(full=True), in float64.
    "port: MosaicML gen_slopes": """
import math
def alibi_slopes(n_heads):
    _n_heads = 2 ** math.ceil(math.log2(n_heads))
    m = np.arange(1, _n_heads + 1, dtype=np.float64) * (8 / _n_heads)
    slopes = 1.0 / np.power(2, m)
    if _n_heads != n_heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:n_heads]
    return slopes
""",
    "port: MosaicML build_alibi_bias (full)": """
def alibi_bias(n_heads, seq_len):
    bias = np.arange(1 - seq_len, 1, dtype=np.float64).reshape(1, 1, seq_len)
    bias = bias - np.arange(1 - seq_len, 1, dtype=np.float64).reshape(1, seq_len, 1)
    return -np.abs(bias) * np.asarray(alibi_slopes(n_heads)).reshape(n_heads, 1, 1)
""",
}

MISTAKES += PORTED_MISTAKES
ALTERNATIVES.update(PORTED_ALTERNATIVES)


# --- unfinished notebooks, degenerate parts, double charges, wrong words ---------------------------------
# Points worked out by hand: a stubbed or missing function loses its value tests and its case of the contracts test
# (12 cases for 2 points in the core assignment, 5 in the bonus one; the share kept is rounded down to a half point).
UNFINISHED = [
    Mistake("stub: rope_frequencies", stubs("rope_frequencies"), "hidden_rope_frequencies", "template stub",
            points_lost=2.5),                       # apply_rope is judged on stand-in frequencies
    Mistake("stub: apply_rope", stubs("apply_rope"), "hidden_apply_rope", "template stub", points_lost=4.5),
    Mistake("stub: rope_scores", stubs("rope_scores"), "hidden_rope_relative", "template stub", points_lost=3.5),
    Mistake("stub: alibi_slopes", stubs("alibi_slopes"), "hidden_alibi_slopes", "template stub", points_lost=2.5),
    Mistake("stub: alibi_bias", stubs("alibi_bias"), "hidden_alibi_bias", "template stub", points_lost=3.5),
    Mistake("stub: Part 1 (RoPE)", stubs("rope_frequencies", "apply_rope", "rope_scores"), "hidden_apply_rope",
            "template stub", also_fails=("hidden_rope_frequencies", "hidden_rope_relative"), points_lost=10.5),
    Mistake("stub: Part 2 (ALiBi)", stubs("alibi_slopes", "alibi_bias"), "hidden_alibi_bias", "template stub",
            also_fails=("hidden_alibi_slopes",), points_lost=6),
    # No RoPE at all: frequencies of 2 pi, `return x`, position-free scores (9 of 16 before). The odd size passes.
    Mistake("degenerate: 2 pi frequencies, identity rotation, position-free scores", """
def rope_frequencies(head_dim, base=10000.0):
    if head_dim % 2:
        raise ValueError("odd")
    return np.full(head_dim // 2, 2 * np.pi)
def apply_rope(x, positions, base=10000.0):
    return x.copy()
def rope_scores(q, k, q_positions, k_positions):
    return q @ k.T
""", "hidden_apply_rope", "apply_rope(", also_fails=("hidden_rope_frequencies", "hidden_rope_relative"),
            points_lost=10.5),
    Mistake("degenerate: zero slopes and an all-zero bias", "def alibi_slopes(n_heads):\n    return np.zeros(n_heads)\n"
                                                          "def alibi_bias(n_heads, seq_len):\n"
                                                          "    return np.zeros((n_heads, seq_len, seq_len))\n",
            "hidden_alibi_bias", "alibi_bias(", also_fails=("hidden_alibi_slopes",), points_lost=5),
]

MISTAKES += UNFINISHED

MISTAKES = contract_rule(MISTAKES, "hidden_rope_alibi_contracts")
