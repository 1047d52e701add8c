"""Behaviour evidence: the exact wrong answers two students share on the shared probe set, weighed by rarity.

Only answers within tests both students fail count, and only answers of their own (unfinished stubs
and missing functions are not). Rarity counts every student who gave the same answer, right or wrong,
so a right answer next to a wrong one is never rare. A wrong answer given by many students is a common
mistake (sin and cos swapped) and weighs nothing; one shared by two students of a large class is rare
and weighs log((N - 1) / (n - 1)) for n students holding it. One test counts once per pair: its
rarest shared answer.
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import math

import numpy as np

from posenc_autograder.checks import REGISTRY
from posenc_autograder.probes import codec
from posenc_autograder.records.evidence import StudentRecord

COMMON_SHARE = 0.1          # held by more than this share of the class (and by 3 or more): a common mistake
NOT_EVIDENCE = ("NotImplementedError", "NameError")


@dataclasses.dataclass(frozen=True)
class Trait:
    test: str
    where: str            # the path of the answer inside the test's observations
    digest: str           # bit-exact identity of the answer
    description: str


@dataclasses.dataclass
class SharedAnswer:
    trait: Trait
    holders: int
    weight: float


def _leaves(value, path=""):
    """The answers inside a probe's observations: attempt records and bare values, with their paths."""
    if isinstance(value, dict) and not ({"value", "error"} & set(value)):
        for key in sorted(value):
            yield from _leaves(value[key], f"{path}/{key}")
    elif isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}[{index}]")
    else:
        yield path or "/", value


def describe(answer) -> str:
    """A short, plain description of an answer (escaped later, where it is shown)."""
    if isinstance(answer, dict) and "error" in answer:
        return f"raised {str(answer['error'])[:160]}"
    return f"returned {_show(answer.get('value') if isinstance(answer, dict) and 'value' in answer else answer)}"[:240]


def _show(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} starting {np.array2string(value.ravel()[:3], precision=17)}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in list(value.items())[:6]) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value[:4]) + (", ..." if len(value) > 4 else "") + "]"
    return repr(value)


def _unfinished(answer) -> bool:
    return isinstance(answer, dict) and str(answer.get("error", "")).startswith(NOT_EVIDENCE)


def answers(record: StudentRecord) -> tuple[set[Trait], set[str]]:
    """Every answer the student gave on the shared set, and the tests they fail there."""
    given, failed = set(), set()
    for cell_id, probe_record in sorted(record.shared.items()):
        check = REGISTRY.get(cell_id)
        if check is None or not isinstance(probe_record, dict) or "observations" not in probe_record:
            continue
        if check.verdict(probe_record, None):
            failed.add(cell_id)
        for where, answer in _leaves(probe_record["observations"]):
            if not _unfinished(answer):
                digest = hashlib.sha256(codec.dumps(answer).encode()).hexdigest()
                given.add(Trait(cell_id, where, digest, describe(answer)))
    return given, failed


def common_threshold(class_size: int) -> int:
    return max(3, math.ceil(COMMON_SHARE * class_size))


def pair_evidence(records: list[StudentRecord]) -> dict[tuple[str, str], list[SharedAnswer]]:
    """(student, student) -> the rare wrong answers they share, one (the rarest) per test."""
    size = len(records)
    holders: dict[Trait, list[str]] = collections.defaultdict(list)    # rarity counts every student's answer
    failing: dict[Trait, list[str]] = collections.defaultdict(list)    # evidence only where the test failed
    for record in records:
        given, failed = answers(record)
        for trait in given:
            holders[trait].append(record.student)
            if trait.test in failed:
                failing[trait].append(record.student)
    best: dict[tuple[str, str], dict[str, SharedAnswer]] = collections.defaultdict(dict)
    for trait, students in failing.items():
        held = len(holders[trait])
        if not 2 <= len(students) or held >= common_threshold(size):
            continue
        weight = math.log((size - 1) / (held - 1))
        for pair in itertools.combinations(sorted(students), 2):
            kept = best[pair].get(trait.test)
            if kept is None or weight > kept.weight:
                best[pair][trait.test] = SharedAnswer(trait, held, weight)
    return {pair: sorted(by_test.values(), key=lambda s: -s.weight) for pair, by_test in best.items()}
