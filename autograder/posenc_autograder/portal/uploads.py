"""An uploaded notebook, bounded before any parsing, checked as intake checks a collected one, and written to
disk (synced) before the portal answers.

Size is capped by the app's body limit while the request streams in; the JSON nesting depth is measured on
the raw bytes (strings removed, brackets counted with numpy) before the JSON parser sees them; the cell count
and everything else is intake's `check_notebook`, the rules of `make grade`'s `read_notebook`.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import tempfile

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.intake.submissions import MAX_NOTEBOOK_BYTES, UnreadableNotebook, check_notebook
from posenc_autograder.probes.codec import SCAN_CHUNK, json_shape  # noqa: F401 - one scan, the codec's

MAX_UPLOAD_BYTES = MAX_NOTEBOOK_BYTES   # the default; a course's own is its [caps] notebook_bytes
MAX_JSON_DEPTH = 64                  # a notebook nests about 6 deep; this leaves room for any editor's metadata
MAX_JSON_VALUES = 500_000            # arrays, objects and their items: 2,000 cells of 200 source lines fit
UPLOADS_DIRECTORY = "autograder/uploads"
FIRST_LOOK = 4096                    # the bytes looked at before any scan: a notebook starts with {
WHITESPACE, BOM = b" \t\r\n", b"\xef\xbb\xbf"


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, without parsing it (linear time)."""
    return json_shape(data).depth


def problem(data: bytes, max_bytes: int = MAX_UPLOAD_BYTES) -> str | None:
    """Why these bytes cannot be a notebook to grade, before parsing them (None: parse on)."""
    if not data:
        return "the file is empty; choose your notebook (.ipynb) and upload it again"
    if len(data) > max_bytes:
        return (f"the file is larger than the {settings.size(max_bytes)} accepted; clear the outputs "
                f"(Kernel > Restart & Clear Output) and upload it again")
    if not data[:FIRST_LOOK].lstrip(WHITESPACE).removeprefix(BOM).lstrip(WHITESPACE).startswith(b"{"):
        return "the file is not a notebook (a notebook is a JSON object, starting with {); upload your .ipynb file"
    shape = json_shape(data, max_depth=MAX_JSON_DEPTH, max_values=MAX_JSON_VALUES)
    if shape.depth > MAX_JSON_DEPTH:
        return "the file nests JSON deeper than any notebook does; re-download or re-export it from Jupyter"
    if shape.values > MAX_JSON_VALUES:
        return (f"the file holds more than {MAX_JSON_VALUES:,} JSON values, far more than a notebook's cells need; "
                f"clear the outputs (Kernel > Restart & Clear Output) and upload it again")
    return None


def folder(course: Course, student: str, assignment: str) -> pathlib.Path:
    return course.path(UPLOADS_DIRECTORY) / student / assignment


def path(course: Course, student: str, assignment: str, sha256: str) -> pathlib.Path:
    return folder(course, student, assignment) / f"{sha256}.ipynb"


def executed_path(course: Course, student: str, assignment: str, attempt_id: int) -> pathlib.Path:
    """The notebook as the sandbox ran it (plain data from execute_task), for the autograded copy."""
    return folder(course, student, assignment) / f"attempt-{attempt_id}.executed.ipynb"


def evidence_path(course: Course, student: str, assignment: str, attempt_id: int) -> pathlib.Path:
    """The attempt's integrity evidence (records.evidence), copied where the report reads it while it counts."""
    return folder(course, student, assignment) / f"attempt-{attempt_id}.evidence.npz"


def store(course: Course, student: str, assignment: str, data: bytes) -> tuple[str, pathlib.Path]:
    """Check the bytes as a notebook and keep them, synced to disk; (sha256, path). Raises UnreadableNotebook
    with a message for the student."""
    caps = settings.load(course).caps
    reason = problem(data, caps.notebook_bytes)
    if reason:
        raise UnreadableNotebook(reason)
    digest = hashlib.sha256(data).hexdigest()
    target = path(course, student, assignment, digest)
    # cells, format, types: intake's rules (the normalised notebook itself is built where it is graded)
    write_durably(target, data, check=lambda scratch: check_notebook(scratch, caps.notebook_bytes, caps.cells))
    return digest, target


def write_durably(target: pathlib.Path, data: bytes, check=None) -> None:
    """Write, sync, and only then give the file its name (after `check(scratch path)` passes, if given)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if check is not None:
            check(pathlib.Path(scratch))
        os.replace(scratch, target)
    except BaseException:
        pathlib.Path(scratch).unlink(missing_ok=True)
        raise
    sync_folder(target.parent)


def sync_folder(folder_path: pathlib.Path) -> None:
    fd = os.open(folder_path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
