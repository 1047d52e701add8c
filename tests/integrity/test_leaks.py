"""The leak check judges a failing answer again only on the inputs of classmates who hold one of its rarer values:
a value held by much of the class (a special case every variant shares, or a common mistake on it) links no one,
so the check stays linear in the class, and a copy of one classmate's own answers is still found."""
import types

import pytest

from posenc_autograder.checks import REGISTRY
from posenc_autograder.grading.shared_probes import varies
from posenc_autograder.integrity import leaks
from posenc_autograder.records.evidence import Evidence

TEST = next(cell_id for cell_id in sorted(REGISTRY) if varies(cell_id))


def failing(student: str, variant: int, keys: list[str]) -> Evidence:
    return Evidence(student, "a", "nb", variant, "", [], {TEST: keys}, {TEST: {"observations": {}}})


@pytest.fixture
def judged(monkeypatch):
    """The (failing student, classmate's variant) pairs judged again; only 'copier' on variant 7 passes."""
    calls = []

    def verdict(record, variant=None, verdicts=None):
        calls.append((record["student"], variant))
        return [] if (record["student"], variant) == ("copier", 7) else ["still wrong"]

    monkeypatch.setitem(leaks.REGISTRY, TEST, types.SimpleNamespace(verdict=verdict))
    monkeypatch.setattr(leaks, "_inputs_text", lambda cell_id, variant: str(variant))
    return calls


def a_class(size: int) -> list[Evidence]:
    """Every student fails the test with one value the whole class shares and one of their own; the copier holds
    student 7's own value."""
    records = [failing(f"s{i:03d}", i, ["everyone", f"own-{i}"]) for i in range(size)]
    records.append(failing("copier", 1000, ["everyone", "own-7", "own-copier"]))
    for record in records:
        record.own_failing[TEST]["student"] = record.student
    return records


@pytest.mark.parametrize("size", [40, 400])
def test_a_value_the_whole_class_holds_links_no_one_and_a_copy_is_still_found(judged, size):
    found = leaks.leaks(a_class(size))
    assert [(leak.student, leak.source) for leak in found] == [("copier", "s007")]
    assert sorted(judged) == [("copier", 7), ("s007", 1000)], len(judged)


def test_a_value_a_few_students_hold_still_links_them(judged):
    records = a_class(40)
    for record in records[:leaks.most_holders(40)]:             # 'everyone' is now held by few enough
        record.own_keys[TEST] = ["few", *record.own_keys[TEST][1:]]
    for record in records[leaks.most_holders(40):]:
        record.own_keys[TEST] = record.own_keys[TEST][1:]
    leaks.leaks(records)
    holders = leaks.most_holders(40)
    assert len(judged) == holders * (holders - 1) + 2


def test_the_limit_grows_with_the_class_but_never_below_eleven():
    assert [leaks.most_holders(n) for n in (5, 200, 240, 400, 1000)] == [11, 11, 11, 19, 49]
