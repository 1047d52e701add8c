"""Behaviour evidence: the wrong answers two students share on the shared probe set, weighed by rarity.

Only answers within tests both students fail count, and only answers of their own (unfinished stubs
and missing functions are not). Answers are the same when they agree to 24 significant bits (records/
evidence.answer_keys: a shift of a few ulps changes nothing). Rarity counts every student who gave the
same answer, right or wrong, so a right answer next to a wrong one is never rare. A wrong answer given
in many independent submissions is a common mistake (sin and cos swapped) and weighs nothing; one shared
by two students of a large class is rare and weighs log((N - 1) / (n - 1)) for n students holding it.
Independent means clusters: a group of near-identical submissions counts once towards "common", so
copies cannot make their own mistake common. One test counts once per pair: its rarest shared answer.
Work is linear in the answers given, plus the pairs within each rare answer.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import math

from posenc_autograder.records.evidence import Evidence

COMMON_SHARE = 0.1          # held by more than this share of the class (and by 3 or more): a common mistake


@dataclasses.dataclass(frozen=True)
class Trait:
    test: str
    where: str            # the path of the answer inside the test's observations
    digest: str           # identity of the answer (one class of answers within the rounding)
    description: str


@dataclasses.dataclass
class SharedAnswer:
    trait: Trait
    holders: int
    weight: float
    among: int = 0        # the students whose answers were compared with theirs (their keys digested alike)


def common_threshold(class_size: int) -> int:
    return max(3, math.ceil(COMMON_SHARE * class_size))


class Classes:
    """Union-find over answer keys: two answers sharing either rounded digest are one answer."""

    def __init__(self):
        self.parent: dict = {}

    def find(self, key):
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def join(self, keys) -> None:
        first, *rest = [self.find(k) for k in keys]
        for other in rest:
            self.parent[other] = first


def by_key_format(records: list[Evidence]) -> dict[str, list[Evidence]]:
    """The records grouped by how their answer keys were digested (evidence.key_format): a key is compared only with
    keys of its own format (an attempt kept by an older grader and never regraded, say), and rarity is counted among
    the records compared."""
    groups: dict[str, list[Evidence]] = collections.defaultdict(list)
    for record in records:
        groups[record.key_format].append(record)
    return dict(groups)


def pair_evidence(records: list[Evidence],
                  cluster: dict[str, str] | None = None) -> dict[tuple[str, str], list[SharedAnswer]]:
    """(student, student) -> the rare wrong answers they share, one (the rarest) per test, within each group of
    records whose keys were digested alike. cluster: student -> their cluster of near-identical submissions (default:
    each their own)."""
    found = {}
    for group in by_key_format(records).values():
        found.update(_pair_evidence(group, cluster or {}))
    return found


def _pair_evidence(records: list[Evidence], cluster: dict[str, str]) -> dict[tuple[str, str], list[SharedAnswer]]:
    size = len(records)
    classes = Classes()
    for record in records:
        for answer in record.answers:
            classes.join([(answer.test, answer.where, key) for key in answer.keys])
    holders: dict = collections.defaultdict(set)       # answer class -> students (right or wrong)
    failing: dict = collections.defaultdict(dict)      # answer class -> student -> description, failed tests
    for record in records:
        for answer in record.answers:
            found = classes.find((answer.test, answer.where, answer.keys[0]))
            holders[found].add(record.student)
            if answer.failed:
                failing[found][record.student] = answer
    best: dict[tuple[str, str], dict[str, SharedAnswer]] = collections.defaultdict(dict)
    for found, students in failing.items():
        held = len(holders[found])
        independent = len({cluster.get(s, s) for s in holders[found]})
        if len(students) < 2 or independent >= common_threshold(size):
            continue
        weight = math.log((size - 1) / (held - 1))
        first = students[min(students)]
        trait = Trait(first.test, first.where, found[2], first.description)
        for pair in itertools.combinations(sorted(students), 2):
            kept = best[pair].get(trait.test)
            if kept is None or weight > kept.weight:
                best[pair][trait.test] = SharedAnswer(trait, held, weight, size)
    return {pair: sorted(by_test.values(), key=lambda s: -s.weight) for pair, by_test in best.items()}
