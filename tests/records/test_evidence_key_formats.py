"""Evidence says how its answer keys were digested, and the integrity report compares keys of one format only: an
attempt kept by an older grader (the portal keeps every attempt's evidence, and one may count without being
regraded) is compared truthfully, with the students kept the same way, never through a chance equality of keys."""
import json

import numpy as np
import pytest

from posenc_autograder.integrity import behaviour
from posenc_autograder.probes import codec
from posenc_autograder.records import evidence


def _student(name: str, rare: str, key_format: str = evidence.KEY_FORMAT) -> evidence.Evidence:
    answers = [evidence.Answer("hidden_pe_values", "/tables[0]", [rare, rare + "'"], True, "returned a wrong table")]
    return evidence.Evidence(name, "a", "nb", None, f"# {name}'s own code\n", answers, {}, {}, key_format)


def test_evidence_written_now_carries_its_key_format_and_older_files_read_as_blake2b(tmp_path):
    evidence.write(tmp_path / "new.npz", _student("new", "k"))
    assert evidence.read(tmp_path / "new.npz").key_format == evidence.KEY_FORMAT
    payload = {"student": "old", "assignment": "a", "notebook": "nb", "variant": None, "code": "",
               "answers": [{"test": "t", "where": "/", "keys": ["k", "l"], "failed": True, "description": "d"}],
               "own_keys": {}, "own_failing": {}}          # what evidence.write wrote before keys had a format
    with open(tmp_path / "old.npz", "wb") as handle:
        np.savez(handle, skeleton=np.frombuffer(codec.dumps(payload).encode(), dtype=np.uint8))
    assert evidence.read(tmp_path / "old.npz").key_format == evidence.BLAKE2B_KEY_FORMAT
    assert evidence.BLAKE2B_KEY_FORMAT != evidence.KEY_FORMAT


def test_keys_of_different_formats_are_never_compared_and_rarity_counts_those_compared():
    today = [_student("ada", "shared"), _student("bo", "shared")] + [_student(f"s{i}", f"own{i}") for i in range(6)]
    older = [_student(name, "shared", evidence.BLAKE2B_KEY_FORMAT) for name in ("cy", "di")]  # the same key strings
    pairs = behaviour.pair_evidence(today + older)
    assert set(pairs) == {("ada", "bo"), ("cy", "di")}          # no pair across the formats
    (ada_bo,) = pairs[("ada", "bo")]
    assert (ada_bo.holders, ada_bo.among) == (2, 8)             # not 4 holders in a class of 10


def test_the_report_says_when_some_answers_were_digested_by_an_older_grader():
    from posenc_autograder.integrity import report  # copydetect, hence matplotlib: imported by the test using it
    today = [_student("ada", "x"), _student("bo", "y")]
    mixed = report.analyse(today + [_student("cy", "z", evidence.BLAKE2B_KEY_FORMAT)], "")
    html = report.page([mixed])
    assert "The answers of 1 of 3 students were kept by an older grader" in html
    assert "older grader, digested" not in report.page([report.analyse(today, "")])
    assert json.dumps(evidence.KEY_FORMAT) not in html           # no grader-internal names on the page


def test_answer_keys_of_today_format_stay_the_same_bytes_whatever_the_chunking(monkeypatch):
    """KEY_FORMAT's keys are compared with every attempt kept before: an array of several chunks (with NaN, an
    infinity, -0.0 and a subnormal) and a long run of floats digest to the keys of the whole answer fed at once, and
    of chunks that split it at odd places."""
    rng = np.random.default_rng(47)
    big = rng.standard_normal(100_000) * 10.0 ** rng.integers(-310, 300, 100_000)
    big[[3, 40_000, 70_000, 99_999]] = [np.nan, np.inf, -0.0, 5e-324]
    answer = {"table": big.reshape(1000, 100), "row": [float(x) for x in big[:50_000]], "n": 3, "s": "x"}
    assert evidence.DIGEST_CHUNK < 50_000                       # several chunks for both the array and the run
    keys = evidence.answer_keys(answer)
    for chunk in (1 << 30, 4_099):
        monkeypatch.setattr(evidence, "DIGEST_CHUNK", chunk)
        assert evidence.answer_keys(answer) == keys, chunk


def test_a_single_float_digests_to_the_keys_of_the_same_value_as_an_array(monkeypatch):
    """A record's single numbers take a short path of their own (no numpy call per number): each feeds the bytes the
    array path feeds for it as a 0-d array (NaN payloads, infinities, -0.0, tiny values, rounding carries)."""
    bits = [0x7FF4000000000001, 0xFFF8000000000123, 0x000FFFFFFFFFFFFF, 0x3FEFFFFFF0000000, 0x3FEFFFFFE0000000]
    odd = [float(np.array(b, dtype=np.uint64).view(np.float64)) for b in bits]
    rng = np.random.default_rng(47)
    values = [0.0, -0.0, 1.0, -2.5, 1e-300, -1e-300, 9e-301, 5e-324, np.nan, np.inf, -np.inf, 1.7976931348623157e308,
              1 + 2**-24, 1 + 3 * 2**-25, 1.9999999999999998, np.float64(0.1), *odd,
              *rng.standard_normal(200) * 10.0 ** rng.integers(-310, 300, 200)]
    as_arrays = [evidence.answer_keys({"v": np.asarray(v, dtype=np.float64), "w": [np.asarray(v, dtype=np.float64)]})
                 for v in values]
    monkeypatch.setattr(evidence, "_rounded", lambda array: pytest.fail("numpy rounding for one float"))
    assert [evidence.answer_keys({"v": v, "w": [v]}) for v in values] == as_arrays    # old code: _rounded called
