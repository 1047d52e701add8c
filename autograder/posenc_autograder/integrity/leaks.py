"""Leaked answers: a submission whose answers fit another student's variant, and not its own.

A test the student fails on their own inputs is judged again on a classmate's inputs; passing there
means the answers were computed for that classmate (copied outputs, or a notebook run on someone
else's inputs). Only classmates whose own answers to that test share a value with the student's are
judged (an index of rounded digests, of one key format: linear in the class, not quadratic), so a notebook run on the
inputs of a classmate whose own answers differ is not searched for. Tests whose inputs are the same
for everyone cannot tell and are skipped.
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


def leaks(records: list[Evidence]) -> list[Leak]:
    varied = {r.student: r for r in records if r.variant is not None}
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
            sharing = sorted({s for key in record.own_keys.get(cell_id, ())
                              for s in index[(record.key_format, cell_id, key)]}
                             - {record.student})
            found += [Leak(record.student, other, cell_id) for other in sharing
                      if _inputs_text(cell_id, varied[other].variant) != own
                      and not check.verdict(probe_record, varied[other].variant)]
    return found
