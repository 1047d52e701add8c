"""The shared probe set: every notebook also runs its varied hidden tests on the course-wide inputs
(never graded), so the integrity report can compare students' answers on the same inputs."""
from __future__ import annotations

import functools

from posenc_autograder.checks import REGISTRY

SHARED_CELL = "integrity_shared_probes"    # the probe cell appended to every assembled notebook


@functools.lru_cache(maxsize=None)
def varies(cell_id: str) -> bool:
    """Whether students get different inputs for this test (random values drawn per variant). When they
    do not, a student's own run already is their run on the course-wide inputs."""
    test = REGISTRY[cell_id]
    return test.inputs_frame(None) != test.inputs_frame(1)


def shared_probe_entry(task: dict, framed: bool = False) -> dict | None:
    """The task entry of the shared set: each graded test of the notebook whose inputs vary, on the
    course-wide inputs (None: no test varies, nothing to run again); framed: HiddenTest.task_entry's."""
    entries = {cell_id: REGISTRY[cell_id].task_entry(None, framed) for cell_id in task if varies(cell_id)}
    return {"module": "shared", "probe": "run_shared", "data": {"entries": entries}} if entries else None
