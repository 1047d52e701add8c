"""The bonus assignment's hidden tests: the solution passes, plausible mistakes fail with a diagnosis."""
import pytest

from notebook_tools import implementation_source, namespace_from, solution_notebook
from posenc_autograder.checks import REGISTRY
from posenc_autograder.notebook import run_check
from student_variants import Mistake

SOLUTION = implementation_source(solution_notebook("rope_alibi"))
CHECKS = [cid for cid, c in REGISTRY.items() if c.assignment == "rope_alibi"]

ROPE = '''
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


def rope(positions="np.asarray(positions, dtype=float)", sin="np.sin(angles)", pairs=INTERLEAVED,
         assemble=WRITE_INTERLEAVED):
    return ROPE.format(positions=positions, sin=sin, pairs=pairs, assemble=assemble)


MISTAKES = [
    Mistake("exponent i/d", "def rope_frequencies(head_dim, base=10000.0):\n"
                            "    if head_dim % 2: raise ValueError('odd')\n"
                            "    return base ** (-np.arange(head_dim // 2) / head_dim)\n",
            "hidden_rope_frequencies", "i/d instead of 2i/d"),
    Mistake("no error for odd sizes", "def rope_frequencies(head_dim, base=10000.0):\n"
                                      "    return base ** (-2 * np.arange(head_dim // 2) / head_dim)\n",
            "hidden_rope_frequencies", "ValueError"),
    Mistake("clockwise rotation", rope(sin="-np.sin(angles)"), "hidden_apply_rope", "wrong way"),
    Mistake("halves instead of pairs", rope(pairs="x[..., :d // 2], x[..., d // 2:]",
                                            assemble="return np.concatenate([first, second], axis=-1)"),
            "hidden_apply_rope", "legitimate RoPE convention, the one GPT-NeoX and Llama"),
    Mistake("positions off by one", rope(positions="np.asarray(positions, dtype=float) + 1"),
            "hidden_apply_rope", "shifted by one"),
    Mistake("positions ignored", rope(positions="np.arange(x.shape[-2], dtype=float)"),
            "hidden_apply_rope", "positions were ignored"),
    Mistake("scores from unrotated keys", "def rope_scores(q, k, q_positions, k_positions):\n"
                                          "    return apply_rope(q, q_positions) @ k.T\n",
            "hidden_rope_relative", "distance"),
    Mistake("naive slopes for any head count", "def alibi_slopes(n_heads):\n"
                                               "    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)\n",
            "hidden_alibi_slopes", "next lower power of two"),
    Mistake("bias sign flipped", "def alibi_bias(n_heads, seq_len):\n"
                                 "    d = np.abs(np.arange(seq_len)[:, None] - np.arange(seq_len)[None, :])\n"
                                 "    return alibi_slopes(n_heads)[:, None, None] * d\n",
            "hidden_alibi_bias", "sign is flipped"),
    Mistake("signed distance", "def alibi_bias(n_heads, seq_len):\n"
                               "    d = np.arange(seq_len)[None, :] - np.arange(seq_len)[:, None]\n"
                               "    return -alibi_slopes(n_heads)[:, None, None] * d\n",
            "hidden_alibi_bias", "signed difference"),
]

ALTERNATIVES = {
    "complex numbers": '''
def apply_rope(x, positions, base=10000.0):
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * np.outer(positions, rope_frequencies(x.shape[-1], base)))
    out = np.empty(x.shape)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out
''',
    "explicit rotation matrices": '''
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
    "loops for ALiBi": '''
def alibi_bias(n_heads, seq_len):
    slopes = alibi_slopes(n_heads)
    out = np.zeros((n_heads, seq_len, seq_len))
    for h in range(n_heads):
        for i in range(seq_len):
            for j in range(seq_len):
                out[h, i, j] = -slopes[h] * abs(i - j)
    return out
''',
}


def failures(ns):
    return {cid: problems for cid in CHECKS if (problems := run_check(cid, ns))}


def test_solution_passes():
    assert failures(namespace_from(SOLUTION)) == {}


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.name)
def test_mistake_fails_with_diagnosis(mistake):
    failed = failures(namespace_from(SOLUTION, mistake.code))
    assert mistake.failing_check in failed, list(failed)
    assert mistake.feedback_phrase in " ".join(failed[mistake.failing_check])


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_alternative_gets_full_marks(name):
    assert failures(namespace_from(SOLUTION, ALTERNATIVES[name])) == {}


# --- partial credit (issue 13): independent cases earn their share, rounded down to a half point ----------

def test_independent_cases_earn_their_share_of_the_points():
    from posenc_autograder.notebook import record_in_process
    test = REGISTRY["hidden_alibi_slopes"]
    naive = "def alibi_slopes(n_heads):\n    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)\n"
    problems, passed, total = test.graded(record_in_process(test.task_entry(), namespace_from(SOLUTION, naive)))
    cases = test.inputs()["groups"]["slopes"]
    powers_of_two = [c for c in cases if c["args"][0] & (c["args"][0] - 1) == 0]
    assert problems and (passed, total) == (len(powers_of_two), len(cases))
    assert test.points_for(passed, total) == int(2 * test.points * passed / total) / 2 < test.points


def test_a_test_whose_cases_are_not_independent_stays_all_or_nothing():
    test = REGISTRY["hidden_pe_unique_bounded"]
    assert not test.partial and test.points_for(9, 10) == 0.0 and test.points_for(10, 10) == test.points
