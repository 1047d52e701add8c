"""An uploaded notebook, bounded before any parsing, checked as intake checks a collected one, and written to
disk (synced) before the portal answers.

Size is capped by the app's body limit while the request streams in; the JSON nesting depth is measured on
the raw bytes (strings removed, brackets counted with numpy) before the JSON parser sees them; the cell count
and everything else is intake's `read_notebook`, the same rules as `make grade`.
"""
from __future__ import annotations

import hashlib
import os
import pathlib
import re
import tempfile

import numpy as np

from posenc_autograder.course import Course
from posenc_autograder.intake.submissions import MAX_NOTEBOOK_BYTES, UnreadableNotebook, read_notebook

MAX_UPLOAD_BYTES = MAX_NOTEBOOK_BYTES
MAX_JSON_DEPTH = 64                  # a notebook nests about 6 deep; this leaves room for any editor's metadata
UPLOADS_DIRECTORY = "autograder/uploads"
JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
OPENING, CLOSING = np.frombuffer(b"[{", np.uint8), np.frombuffer(b"]}", np.uint8)


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, without parsing it."""
    skeleton = np.frombuffer(JSON_STRING.sub(b"", data), np.uint8)
    steps = np.isin(skeleton, OPENING).astype(np.int32) - np.isin(skeleton, CLOSING).astype(np.int32)
    return int(np.cumsum(steps).max(initial=0))


def problem(data: bytes) -> str | None:
    """Why these bytes cannot be a notebook to grade, before parsing them (None: parse on)."""
    if not data:
        return "the file is empty; choose your notebook (.ipynb) and upload it again"
    if len(data) > MAX_UPLOAD_BYTES:
        return (f"the file is larger than the {MAX_UPLOAD_BYTES / 1e6:.0f} MB accepted; clear the outputs "
                f"(Kernel > Restart & Clear Output) and upload it again")
    if json_depth(data) > MAX_JSON_DEPTH:
        return "the file nests JSON deeper than any notebook does; re-download or re-export it from Jupyter"
    return None


def folder(course: Course, student: str, assignment: str) -> pathlib.Path:
    return course.path(UPLOADS_DIRECTORY) / student / assignment


def path(course: Course, student: str, assignment: str, sha256: str) -> pathlib.Path:
    return folder(course, student, assignment) / f"{sha256}.ipynb"


def executed_path(course: Course, student: str, assignment: str, attempt_id: int) -> pathlib.Path:
    """The notebook as the sandbox ran it (plain data from execute_task), for the autograded copy."""
    return folder(course, student, assignment) / f"attempt-{attempt_id}.executed.ipynb"


def store(course: Course, student: str, assignment: str, data: bytes) -> tuple[str, pathlib.Path]:
    """Check the bytes as a notebook and keep them, synced to disk; (sha256, path). Raises UnreadableNotebook
    with a message for the student."""
    reason = problem(data)
    if reason:
        raise UnreadableNotebook(reason)
    digest = hashlib.sha256(data).hexdigest()
    target = path(course, student, assignment, digest)
    write_durably(target, data, check=read_notebook)      # cells, format, types: intake's rules
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
