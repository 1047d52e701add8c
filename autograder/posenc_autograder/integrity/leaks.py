"""Leaked answers: a submission whose answers fit another student's variant, and not its own.

A test the student fails on their own inputs is judged again on each classmate's inputs; passing
there means the answers were computed for that classmate (copied outputs, or a notebook run on
someone else's inputs). Tests whose inputs are the same for everyone cannot tell and are skipped.
"""
from __future__ import annotations

import dataclasses
import functools

from posenc_autograder.checks import REGISTRY
from posenc_autograder.probes import codec
from posenc_autograder.records.evidence import StudentRecord, varies


@dataclasses.dataclass
class Leak:
    student: str
    source: str           # the classmate whose variant the answers fit
    test: str


@functools.lru_cache(maxsize=4096)
def _inputs_text(cell_id: str, variant: int | None) -> str:
    return codec.dumps(REGISTRY[cell_id].variant_inputs(variant))


def leaks(records: list[StudentRecord]) -> list[Leak]:
    varied = [r for r in records if r.variant is not None]
    found = []
    for record in varied:
        for cell_id, probe_record in sorted(record.own.items()):
            check = REGISTRY.get(cell_id)
            if check is None or not isinstance(probe_record, dict) or "observations" not in probe_record:
                continue
            if not varies(cell_id):
                continue                         # this test's inputs are the same for everyone
            if not check.verdict(probe_record, record.variant):
                continue                         # right on its own inputs
            own = _inputs_text(cell_id, record.variant)
            found += [Leak(record.student, other.student, cell_id) for other in varied
                      if other is not record and _inputs_text(cell_id, other.variant) != own
                      and not check.verdict(probe_record, other.variant)]
    return found
