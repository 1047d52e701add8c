"""A record on the course-wide inputs equal, bit for bit, to one judged before takes that verdict without being judged
again (a class's correct notebooks send the same records); any other record, however close, is judged as it is."""
import numpy as np
import pytest

from posenc_autograder.records import evidence


class Judge:
    """A test's judge, counted: a record fails when its table's first entry is not 0."""
    id = "hidden_table"

    def __init__(self):
        self.judged = 0

    def verdict(self, record, variant):
        assert variant is None                      # the course-wide inputs
        self.judged += 1
        return ["wrong"] if record["observations"]["table"][0, 0] != 0 else []


@pytest.fixture
def verdicts(monkeypatch):
    fresh = evidence._SharedVerdicts()
    monkeypatch.setattr(evidence, "SHARED_VERDICTS", fresh)
    return fresh


def _record(first: float = 0.0, scale: float = 2.0) -> dict:
    table = np.random.default_rng(47).standard_normal((50, 16))
    table[0, 0] = first
    return {"observations": {"table": table, "scale": scale, "note": "x"}}


def test_an_equal_record_takes_the_verdict_judged_before(verdicts):
    judge = Judge()
    assert verdicts.failed(judge, _record(1.0)) is True
    assert verdicts.failed(judge, _record(1.0)) is True         # a copy, equal bit for bit
    assert verdicts.failed(judge, _record(0.0)) is False
    assert verdicts.failed(judge, _record(0.0)) is False
    assert judge.judged == 2                                     # old code: each judged (4)


def test_a_record_that_differs_in_any_bit_or_type_is_judged_as_itself(verdicts):
    judge = Judge()
    assert verdicts.failed(judge, _record(0.0)) is False
    nudged = _record(np.nextafter(0.0, 1.0))                     # the smallest float above 0: fails
    assert verdicts.failed(judge, nudged) is True
    negative_zero = _record(-0.0)                                # passes, but is not the same bits
    assert verdicts.failed(judge, negative_zero) is False
    assert verdicts.failed(judge, _record(0.0, scale=2)) is False           # an int where a float was
    assert judge.judged == 4


def test_what_is_kept_is_a_copy_and_bounded(verdicts):
    judge = Judge()
    record = _record(0.0)
    verdicts.failed(judge, record)
    record["observations"]["table"][0, 0] = 5.0                  # the job changes its record after
    assert verdicts.failed(judge, record) is True and judge.judged == 2
    small = evidence._SharedVerdicts(limit=3 * _record()["observations"]["table"].nbytes)
    for first in range(10):
        small.failed(judge, _record(float(first)))
    assert small.held <= small.limit


def _contracts_like(first: float = 0.0) -> dict:
    """A record nested as the contracts test's is (call, kind, shape: deeper than one answer's outline)."""
    table = np.random.default_rng(47).standard_normal((6, 4))
    table[0, 0] = first
    call = {"kind": {"type": "ndarray", "dtype": "float64", "shape": [6, 4]}, "value": table, "again": {"value": table}}
    return {"observations": {"table": table, "calls": {f"function_{i}": call for i in range(12)}}}


def test_a_record_nested_as_a_contracts_record_takes_the_verdict_judged_before(verdicts):
    judge = Judge()
    assert verdicts.failed(judge, _contracts_like(1.0)) is True
    assert verdicts.failed(judge, _contracts_like(1.0)) is True
    assert verdicts.failed(judge, _contracts_like(0.0)) is False
    assert judge.judged == 2                                     # old code: outlined no deeper than 4 levels (3)


def test_a_record_past_the_items_an_outline_walks_is_judged_each_time(verdicts):
    judge = Judge()
    wide = {"observations": {"table": _record()["observations"]["table"],
                             "groups": [[[{"value": 1.0}] * 16] * 16] * 16}}     # 16 x 16 x 16 items
    assert verdicts.failed(judge, wide) is False and verdicts.failed(judge, wide) is False
    assert judge.judged == 2 and not verdicts.kept


def test_records_without_arrays_are_bounded_too(verdicts):
    judge = Judge()
    small = evidence._SharedVerdicts(limit=4096)
    for i in range(200):
        small.failed(judge, {"observations": {"table": np.zeros((1, 1)), f"note_{i}": "x" * 100}})
    assert 0 < small.held <= small.limit and len(small.kept) < 200   # old code: only arrays counted, all 200 kept
