"""An answer equal, bit for bit, to one digested before takes its keys without being digested again (a class's correct
notebooks return the same tables); any other answer, however close, is digested as it is."""
import numpy as np
import pytest

from posenc_autograder.records import evidence


@pytest.fixture
def seen(monkeypatch):
    fresh = evidence._SeenAnswers()
    monkeypatch.setattr(evidence, "SEEN", fresh)
    return fresh


def _digested_freshly(answer, monkeypatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(evidence, "SEEN", evidence._SeenAnswers(limit=0))
        return evidence.answer_keys(answer)


def _table(seed: int = 47) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((200, 64))


def test_an_equal_answer_takes_the_keys_of_the_one_digested_before_without_digesting(seen, monkeypatch):
    answer = {"value": _table(), "scale": 2.0, "note": "x", "n": 3, "rows": [_table(1)[:40], None]}
    keys = evidence.answer_keys(answer)
    copy = {"value": _table().copy(), "scale": 2.0, "note": "x", "n": 3, "rows": [_table(1)[:40].copy(), None]}
    monkeypatch.setattr(evidence, "_digest", lambda *args: pytest.fail("an equal answer was digested again"))
    walk = evidence._Walk()
    assert evidence.answer_keys(copy, walk) == keys            # old code: digested again
    fresh = evidence._Walk()
    monkeypatch.undo()
    evidence._digest([evidence.hashlib.sha256(), evidence.hashlib.sha256()], copy, fresh)
    assert (walk.items, walk.array_bytes) == (fresh.items, fresh.array_bytes)   # the bounds count it the same


def test_an_answer_that_differs_in_any_bit_type_or_key_order_is_digested_as_itself(seen, monkeypatch):
    table = _table()
    evidence.answer_keys({"value": table, "scale": 2.0})
    nudged = table.copy()
    nudged[199, 63] = np.nextafter(nudged[199, 63], np.inf)
    zero, negative_zero = table.copy(), table.copy()
    zero[0, 0], negative_zero[0, 0] = 0.0, -0.0
    nan, other_nan = table.copy(), table.copy()
    nan[5, 5] = np.nan
    other_nan[5, 5] = np.frombuffer(np.uint64(0x7FF0000000000001).tobytes())[0]
    evidence.answer_keys({"value": zero, "scale": 2.0})
    evidence.answer_keys({"value": nan, "scale": 2.0})
    others = [{"value": nudged, "scale": 2.0}, {"value": table, "scale": 2.0000000000000004},
              {"value": table, "scale": 2}, {"scale": 2.0, "value": table},
              {"value": table.reshape(64, 200), "scale": 2.0},
              {"value": table.astype(np.float32), "scale": 2.0}, {"value": [table], "scale": 2.0},
              {"value": negative_zero, "scale": 2.0}, {"value": other_nan, "scale": 2.0},
              {"value": table, "scale": -0.0}]
    for answer in others:
        assert evidence.answer_keys(answer) == _digested_freshly(answer, monkeypatch)


def test_an_answer_seen_before_is_past_the_walks_bound_as_when_digested(seen):
    answer = {"value": [_table()[:10] for _ in range(5)]}
    evidence.answer_keys(answer)
    with pytest.raises(evidence.TooLargeToCompare):
        evidence.answer_keys(answer, evidence._Walk(items=3))


def test_what_is_kept_is_bounded_and_a_copy(seen, monkeypatch):
    monkeypatch.setattr(seen, "limit", 3 * _table().nbytes)
    tables = [_table(seed) for seed in range(6)]
    for table in tables:
        evidence.answer_keys({"value": table})
    assert seen.held <= seen.limit
    kept = [entry[0]["value"] for entries in seen.kept.values() for entry in entries]
    assert kept and all(not array.flags.writeable and not np.shares_memory(array, table)
                        for array in kept for table in tables)
    tables[-1][0, 0] += 1.0                        # a job changing its records later changes nothing kept
    assert evidence.answer_keys({"value": tables[-1]}) == _digested_freshly({"value": tables[-1]}, monkeypatch)
