"""A record on the course-wide inputs equal, bit for bit, to one digested before for the same test takes its answers'
keys without digesting them again (a class's notebooks send the same records, of small answers SEEN does not keep);
any other record, however close, is digested as it is, and its evidence is the same as without the kept keys."""
import numpy as np
import pytest

from posenc_autograder.records import evidence


@pytest.fixture
def kept(monkeypatch):
    fresh = evidence._SharedKeys()
    monkeypatch.setattr(evidence, "SHARED_KEYS", fresh)
    monkeypatch.setattr(evidence, "SEEN", evidence._SeenAnswers(limit=0))       # no answer kept on its own
    return fresh


def _observations(first: float = 0.0, note: str = "x", count: int = 3) -> dict:
    table = np.random.default_rng(47).standard_normal((4, 3))
    table[0, 0] = first
    return {"tables": [{"value": table}, {"value": table * 2}], "scale": {"value": 2.0}, "note": {"value": note},
            "count": {"value": count}, "odd": {"error": "ValueError: odd width"}}


def _digested_freshly(observations) -> list:
    return [(where, keys) for where, _, keys in evidence.compared_answers(observations)]


def test_an_equal_record_takes_the_keys_digested_before_without_digesting(kept, monkeypatch):
    first = [(where, keys) for where, _, keys in kept.compared("hidden_table", _observations())]
    assert first == _digested_freshly(_observations())
    monkeypatch.setattr(evidence, "_digest", lambda *args: pytest.fail("an equal record was digested again"))
    copy = _observations()
    found = kept.compared("hidden_table", copy)                   # old code: no SHARED_KEYS, every answer digested
    assert [(where, keys) for where, _, keys in found] == first
    assert [answer for _, answer, _ in found] == [answer for _, answer in evidence.leaves(copy)]   # its own answers


def test_a_record_that_differs_in_any_bit_type_or_test_is_digested_as_itself(kept, monkeypatch):
    kept.compared("hidden_table", _observations())
    others = [("hidden_table", _observations(np.nextafter(0.0, 1.0))), ("hidden_table", _observations(-0.0)),
              ("hidden_table", _observations(note="y")), ("hidden_table", _observations(count=True)),
              ("hidden_table", _observations(count=3.0)), ("hidden_other", _observations())]
    real = evidence._digest
    for test, observations in others:
        digested: list[int] = []

        def counted(*args, digested=digested):
            digested.append(1)
            return real(*args)
        with monkeypatch.context() as m:
            m.setattr(evidence, "_digest", counted)
            found = [(where, keys) for where, _, keys in kept.compared(test, observations)]
        assert digested and found == _digested_freshly(observations)


def test_the_evidence_is_the_same_with_the_kept_keys_and_what_is_kept_is_a_copy_and_bounded(kept, monkeypatch):
    record = evidence.StudentRecord("s1", "a", "nb", None, {}, {}, "", None)
    monkeypatch.setattr(evidence, "REGISTRY", {"hidden_table": object()})
    monkeypatch.setattr(evidence, "_failed", lambda *args, **kwargs: True)
    shared = {"hidden_table": {"observations": _observations()}}
    first = evidence.compact(evidence.dataclasses.replace(record, shared=shared))
    again = evidence.compact(evidence.dataclasses.replace(record, shared={"hidden_table": {"observations":
                                                                                           _observations()}}))
    monkeypatch.setattr(evidence, "SHARED_KEYS", evidence._SharedKeys(limit=0))                 # none kept
    assert first == again == evidence.compact(evidence.dataclasses.replace(record, shared=shared))
    observations = _observations()
    kept.compared("hidden_table", observations)
    observations["tables"][0]["value"][0, 0] = 5.0                # the job changes its record after
    assert [keys for _, _, keys in kept.compared("hidden_table", observations)] == \
        [keys for _, keys in _digested_freshly(observations)]
    small = evidence._SharedKeys(limit=3 * evidence._held_bytes(_observations()))
    for first_entry in range(10):
        small.compared("hidden_table", _observations(float(first_entry)))
    assert 0 < small.held <= small.limit


def test_a_record_nested_deeper_than_one_answer_takes_the_keys_digested_before(kept, monkeypatch):
    deep = {"calls": {f"function_{i}": {"kind": {"type": "ndarray", "shape": [4, 3]}, "value": _observations()
                                        ["tables"][0]["value"]} for i in range(12)}}
    first = [(where, keys) for where, _, keys in kept.compared("hidden_contracts", deep)]
    assert first == _digested_freshly(deep)
    monkeypatch.setattr(evidence, "_digest", lambda *args: pytest.fail("an equal record was digested again"))
    found = kept.compared("hidden_contracts", {**deep})             # old code: outlined no deeper than 4 levels
    assert [(where, keys) for where, _, keys in found] == first
