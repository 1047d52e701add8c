"""Text evidence's two looks at each student's code: the second (the class's common code left out too) winnows the
tokens of the first again, as fingerprinting the code afresh would."""
import types

import numpy as np

from posenc_autograder.integrity import text

INSTRUCTOR = "import numpy as np\n\ndef template(x):\n    raise NotImplementedError\n"
OWN = """
def angles(positions, d_model):
    rates = 1.0 / np.power(10000.0, np.arange(0, d_model, 2) / d_model)
    return np.outer(positions, rates)

def table(seq_len, d_model):
    out = np.zeros((seq_len, d_model))
    out[:, 0::2] = np.sin(angles(np.arange(seq_len), d_model))
    out[:, 1::2] = np.cos(angles(np.arange(seq_len), d_model))
    return out
"""
OTHER = """
def table(n, d):
    result = []
    for pos in range(n):
        row = [pos / 10000 ** (2 * (i // 2) / d) for i in range(d)]
        result.append([np.sin(v) if i % 2 == 0 else np.cos(v) for i, v in enumerate(row)])
    return np.array(result)
"""


def _same(a, b) -> bool:
    return (a.hashes == b.hashes and a.token_coverage == b.token_coverage and a.filtered_code == b.filtered_code
            and np.array_equal(a.offsets, b.offsets) and a.hash_idx.keys() == b.hash_idx.keys()
            and all(list(a.hash_idx[h]) == list(b.hash_idx[h]) for h in a.hash_idx))


def test_leaving_out_more_fingerprints_equals_fingerprinting_the_code_afresh_without_them():
    boilerplate = set(text.fingerprint(INSTRUCTOR).hashes)
    for code in (OWN, OTHER, INSTRUCTOR + OWN):
        first = text.fingerprint(code, boilerplate)
        common = set(sorted(first.hashes)[::2])
        again = text.without(first, boilerplate | common)
        assert 0 < len(again.hashes) < len(first.hashes)
        assert _same(again, text.fingerprint(code, boilerplate | common))
        assert _same(text.without(first, boilerplate), first)


def test_each_code_is_tokenised_once_however_many_students_hand_it_in(monkeypatch):
    """Tokenising is most of what a fingerprint costs: a class of 40 analysed took 8.1 CPU-s when each student's code
    was tokenised twice, 6.05 once; its 40 students' first fingerprints (27 distinct codes) 3.7 CPU-s, 2.1 once
    a code."""
    import copydetect.detector  # here, not at the top: it imports pyplot, which collecting the tests need not
    tokenised = []
    real = copydetect.detector.filter_code
    monkeypatch.setattr(copydetect.detector, "filter_code", lambda code, *a, **k: tokenised.append(code) or real(code,
                                                                                                             *a, **k))
    records = [types.SimpleNamespace(student=s, code=c) for s, c in (("ada", OWN), ("bob", OWN), ("cem", OTHER))]
    first = text.first_prints(records, INSTRUCTOR)
    found = text.matches(records, first, text.clusters(first.own()))
    assert sorted(tokenised) == sorted([INSTRUCTOR, OWN, OTHER])
    assert found[("ada", "bob")].similarity > 0.4 and ("ada", "cem") not in found
