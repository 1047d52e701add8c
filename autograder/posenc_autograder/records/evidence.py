"""What the integrity report needs from each graded submission, kept beside the grading work files.

Per submission: the variant it was graded on, the probes' records on its own inputs and on the
shared set, and the code the student wrote (answer cells and added cells). Git-ignored (.work/).
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib
import sys

import numpy as np

from posenc_autograder.course import Course, nbgrader_meta
from posenc_autograder.checks import REGISTRY
from posenc_autograder.probes import codec
from posenc_autograder.intake.submissions import read_notebook

SHARED_CELL = "integrity_shared_probes"    # the probe cell appended to every assembled notebook
MAX_CODE_CHARACTERS = 200_000              # a student's code beyond this is not compared
SUFFIX = ".npz"                            # a JSON skeleton plus its float64 arrays, no pickles
MAX_EVIDENCE_BYTES = 64 * 2**20            # a correct notebook keeps ~8 MB; more is not kept (and reported)


class EvidenceTooLarge(ValueError):
    pass


@dataclasses.dataclass
class StudentRecord:
    student: str
    assignment: str
    notebook: str
    variant: int | None
    own: dict            # cell id -> probe record on the student's own inputs
    shared: dict         # cell id -> probe record on the course-wide inputs
    code: str            # what the student wrote, starter code included


def folder(course: Course, assignment: str, notebook: str) -> pathlib.Path:
    return course.work / "integrity" / assignment / notebook


def student_code(submitted_nb, release_nb) -> str:
    """The student's answer cells and added code cells (read-only cells are the release's, never theirs)."""
    locked = {nbgrader_meta(c).get("grade_id") for c in release_nb.cells
              if nbgrader_meta(c).get("grade_id") and not nbgrader_meta(c).get("solution")}
    parts = [str(c.get("source", "")) if isinstance(c.get("source", ""), str) else "".join(c["source"])
             for c in submitted_nb.cells
             if c.get("cell_type") == "code" and nbgrader_meta(c).get("grade_id") not in locked]
    return "\n\n".join(parts)[:MAX_CODE_CHARACTERS]


@functools.lru_cache(maxsize=None)
def varies(cell_id: str) -> bool:
    """Whether students get different inputs for this test (random values drawn per variant). When they
    do not, a student's own run already is their run on the course-wide inputs."""
    test = REGISTRY[cell_id]
    return codec.dumps(test.variant_inputs(None)) != codec.dumps(test.variant_inputs(1))


def shared_probe_entry(task: dict) -> dict | None:
    """The task entry of the shared set: each graded test of the notebook whose inputs vary, on the
    course-wide inputs (None: no test varies, nothing to run again)."""
    entries = {cell_id: REGISTRY[cell_id].task_entry(None) for cell_id in task if varies(cell_id)}
    return {"module": "shared", "probe": "run_shared", "data": {"entries": entries}} if entries else None


def save(course: Course, submission, execution, variant: int | None, submitted_nb, release) -> None:
    """Keep one graded submission's evidence (the shared set's records are its own when variants are off)."""
    observations = dict(execution.observations)
    shared = observations.pop(SHARED_CELL, None)
    shared = shared.get("observations") if isinstance(shared, dict) else None
    shared = shared if isinstance(shared, dict) else {}          # forged or malformed: no shared evidence
    if variant is None:              # the student's own inputs are the course-wide ones
        shared = observations
    else:                            # tests whose inputs do not vary were not run again: their own run counts
        shared = {cell_id: shared[cell_id] if varies(cell_id) else own
                  for cell_id, own in observations.items() if not varies(cell_id) or cell_id in shared}
    record = StudentRecord(submission.student, submission.assignment, submission.notebook, variant, observations,
                           shared, student_code(submitted_nb, release) if submitted_nb is not None else "")
    target = folder(course, submission.assignment, submission.notebook) / f"{submission.student}{SUFFIX}"
    target.parent.mkdir(parents=True, exist_ok=True)
    payload = {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}   # no deep copy
    payload["variant"] = None if variant is None else str(variant)     # JSON numbers lose 64-bit ints elsewhere
    arrays: list = []
    skeleton = codec.dumps(payload, arrays)
    size = len(skeleton) + sum(a.nbytes for a in arrays)
    if size > MAX_EVIDENCE_BYTES:
        raise EvidenceTooLarge(f"{size / 2**20:.0f} MiB of answers, over the {MAX_EVIDENCE_BYTES / 2**20:.0f} MiB kept")
    with open(target, "wb") as handle:       # arrays as raw float64 (no base64): a few ms, not 0.2 s, a student
        np.savez(handle, skeleton=np.frombuffer(skeleton.encode(), dtype=np.uint8),
                 **{f"a{i}": a for i, a in enumerate(arrays)})


def load_class(course: Course, assignment: str, notebook: str) -> list[StudentRecord]:
    records = []
    for path in sorted(folder(course, assignment, notebook).glob(f"*{SUFFIX}")):
        with np.load(path, allow_pickle=False) as stored:
            arrays = {int(name[1:]): stored[name] for name in stored.files if name != "skeleton"}
            payload = codec.loads(stored["skeleton"].tobytes().decode(), arrays)
        payload["variant"] = None if payload["variant"] is None else int(payload["variant"])
        records.append(StudentRecord(**payload))
    return records


def notebooks_stored(course: Course) -> list[tuple[str, str]]:
    base = course.work / "integrity"
    return sorted((p.parent.name, p.name) for p in base.glob("*/*") if p.is_dir()) if base.exists() else []


def keep(course: Course, submission, execution, variant: int | None, release) -> None:
    """save(), never failing grading: integrity evidence is a side product, and its loss is only reported."""
    try:
        submitted = read_notebook(submission.path) if submission.path is not None else None
        save(course, submission, execution, variant, submitted, release)
    except Exception as exc:  # noqa: BLE001 - a grade never depends on the integrity report
        why = str(exc) if isinstance(exc, EvidenceTooLarge) else type(exc).__name__    # never student text
        print(f"integrity evidence not kept for {submission.student}: {why}", file=sys.stderr)
