"""Leaked answers: a submission whose answers fit another student's variant, and not its own.

A test the student fails on their own inputs is judged again on a classmate's inputs; passing there
means the answers were computed for that classmate (copied outputs, or a notebook run on someone
else's inputs). Only classmates whose own answers to that test share a value with the student's are
judged (an index of rounded digests, of one key format), so a notebook run on the inputs of a classmate whose
own answers differ is not searched for. A value held by many students (see `most_holders`) points to no one:
it is an answer to a special case every variant shares, or a common mistake on one, and judging each of its
holders again would make the check quadratic in the class. Tests whose inputs are the same for everyone
cannot tell and are skipped.
"""
from __future__ import annotations

import collections
import dataclasses
import functools

from posenc_autograder.checks import REGISTRY
from posenc_autograder.probes import codec
from posenc_autograder.records.evidence import Evidence


@dataclasses.dataclass
class Leak:
    student: str
    source: str           # the classmate whose variant the answers fit
    test: str


@functools.lru_cache(maxsize=4096)
def _inputs_text(cell_id: str, variant: int | None) -> str:
    return codec.dumps(REGISTRY[cell_id].variant_inputs(variant))


FEWEST_HOLDERS_IGNORED = 12    # a value held by this many students or more is not linked, however small the class
IGNORED_SHARE = 20             # ... nor one held by a twentieth of the class or more


def most_holders(class_size: int) -> int:
    """The most students one value may be held by and still link them (11 in a class of 200, 19 in one of 400). A
    source copied by more students than that shares its values with too many to be told from a common answer
    here; the copies' shared-set answers and code still pair them in the report."""
    return max(FEWEST_HOLDERS_IGNORED, class_size // IGNORED_SHARE) - 1


def leaks(records: list[Evidence]) -> list[Leak]:
    varied = {r.student: r for r in records if r.variant is not None}
    limit = most_holders(len(varied))
    index: dict = collections.defaultdict(set)          # (key format, test, digest) -> students whose answers hold it
    for record in varied.values():
        for cell_id, keys in record.own_keys.items():
            for key in keys:
                index[(record.key_format, cell_id, key)].add(record.student)
    found = []
    for record in sorted(varied.values(), key=lambda r: r.student):
        for cell_id, probe_record in sorted(record.own_failing.items()):
            check = REGISTRY.get(cell_id)
            if check is None or not isinstance(probe_record, dict) or "observations" not in probe_record:
                continue
            own = _inputs_text(cell_id, record.variant)
            holders = [index[(record.key_format, cell_id, key)] for key in record.own_keys.get(cell_id, ())]
            sharing = sorted(set().union(*(held for held in holders if len(held) <= limit)) - {record.student})
            found += [Leak(record.student, other, cell_id) for other in sharing
                      if _inputs_text(cell_id, varied[other].variant) != own
                      and not check.verdict(probe_record, varied[other].variant)]
    return found
