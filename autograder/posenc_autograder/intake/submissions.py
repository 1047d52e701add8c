"""Find what each student handed in, and read it without trusting it."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib
import re
import stat
import uuid

import nbformat

from posenc_autograder.course import Course
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.results import Note, NoteKind
from posenc_autograder.settings import Caps


@dataclasses.dataclass
class Submission:
    """One expected notebook of one student's assignment, and what was found for it."""
    student: str
    assignment: str
    notebook: str                        # the expected name, without .ipynb
    path: pathlib.Path | None            # the file graded (None: nothing usable was found)
    notes: list[Note] = dataclasses.field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.student, self.assignment, self.notebook


def discover(course: Course, assignments: list[str] | None = None, students: list[str] | None = None,
             refused: list[str] | None = None) -> list[Submission]:
    """Every (student, assignment, expected notebook) found under submitted/, in a stable order.

    Folders that are links, or whose names are not safe student ids, are not graded: each is
    described in `refused` for the instructor instead (a name is shown escaped with repr()).
    """
    found = []
    refused = [] if refused is None else refused
    if not course.submitted.is_dir():
        return found
    wanted = set(assignments or course.assignments())
    for student_dir in _real_folders(course.submitted, refused):
        if not is_safe_id(student_dir.name):
            refused.append(f"{student_dir.name!r}: not a safe student id (letters, digits, '.', '_', '-'; "
                           f"no leading '.' or '-'); rename the folder to grade it")
            continue
        if students and student_dir.name not in students:
            continue
        for entry in sorted(student_dir.iterdir()):
            if entry.name not in wanted:
                continue
            if entry.is_symlink() or not entry.is_dir():
                found.extend(Submission(student_dir.name, entry.name, name, None, [Note(NoteKind.SUBMISSION,
                    f"the '{entry.name}' folder is a link or not a folder, so nothing in it was graded; "
                    f"submit the notebook itself")]) for name in course.notebooks(entry.name))
            else:
                found.extend(_match_notebooks(course, student_dir.name, entry))
    return found


def _real_folders(parent: pathlib.Path, refused: list[str]) -> list[pathlib.Path]:
    """Sub-folders that are real folders, not links to somewhere else."""
    folders = []
    for entry in sorted(parent.iterdir()):
        if entry.is_symlink():
            refused.append(f"{str(entry.relative_to(entry.parents[1]))!r}: a symbolic link, not a folder")
        elif entry.is_dir():
            folders.append(entry)
    return folders


def _match_notebooks(course: Course, student: str, folder: pathlib.Path) -> list[Submission]:
    expected = course.notebooks(folder.name)
    present = {p.stem: p for p in folder.glob("*.ipynb")}
    unclaimed = sorted(set(present) - set(expected))
    result = []
    for name in expected:
        if name in present:
            result.append(Submission(student, folder.name, name, present[name]))
        elif len(unclaimed) == 1 and len([n for n in expected if n not in present]) == 1:
            other = unclaimed.pop()
            result.append(Submission(student, folder.name, name, present[other], [Note(NoteKind.SUBMISSION,
                f"the notebook was renamed to '{other}.ipynb'; it was graded as '{name}.ipynb'. "
                f"Keep the original file name next time.")]))
        else:
            hint = f" (found instead: {', '.join(p + '.ipynb' for p in unclaimed)})" if unclaimed else ""
            result.append(Submission(student, folder.name, name, None, [Note(NoteKind.SUBMISSION,
                f"'{name}.ipynb' is missing from the submission{hint}; nothing was graded. "
                f"Submit the notebook with its original name.")]))
    return result


# The defaults; a course's own are settings.load(course).caps ([caps] in course.toml).
MAX_NOTEBOOK_BYTES = Caps().notebook_bytes     # zips and uploads too
MAX_CELLS = Caps().cells
CELL_TYPES = ("code", "markdown", "raw")
CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
GRADING_FLAGS: dict[str, type | tuple[type, ...]] = {
    "grade": bool, "solution": bool, "locked": bool, "task": bool, "points": (int, float), "grade_id": str,
    "schema_version": int}


def regular_file_problem(path: pathlib.Path, max_bytes: int = MAX_NOTEBOOK_BYTES) -> str | None:
    """Why a submitted path cannot be read safely (a link, not a regular file, too large), or None."""
    try:
        info = path.lstat()
    except OSError as exc:
        return f"the file could not be opened ({exc.strerror})"
    if stat.S_ISLNK(info.st_mode):
        return "the submission is a symbolic link, not a notebook file; submit the notebook itself"
    if not stat.S_ISREG(info.st_mode):
        return "the submission is not a regular file; submit the notebook itself"
    if info.st_size > max_bytes:
        return (f"the file is {info.st_size / 1e6:.1f} MB, more than the {max_bytes / 1e6:.0f} MB accepted; "
                f"clear the outputs (Kernel > Restart & Clear Output) and resubmit")
    return None


def read_bytes_safely(path: pathlib.Path, max_bytes: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The file's bytes, opened without following links and read no further than the cap."""
    problem = regular_file_problem(path, max_bytes)
    if problem:
        raise UnreadableNotebook(problem)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise UnreadableNotebook(f"the file could not be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UnreadableNotebook("the submission is not a regular file; submit the notebook itself")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnreadableNotebook(f"the file is larger than the {max_bytes / 1e6:.0f} MB accepted")
    return data


def sha256(path: pathlib.Path) -> str | None:
    """Digest of a submission that can be read safely; None for one that cannot (it is reported later)."""
    try:
        return hashlib.sha256(read_bytes_safely(path)).hexdigest()
    except UnreadableNotebook:
        return None


class UnreadableNotebook(Exception):
    """The submission is not a notebook we can grade; the message is written for the student."""


def read_notebook(path: pathlib.Path, max_bytes: int = MAX_NOTEBOOK_BYTES, max_cells: int = MAX_CELLS):
    """Parse a submitted notebook strictly into a normalised one, with a student-readable error when it cannot be."""
    return normalise(parsed(path, max_bytes), max_cells)


def check_notebook(path: pathlib.Path, max_bytes: int = MAX_NOTEBOOK_BYTES, max_cells: int = MAX_CELLS) -> None:
    """UnreadableNotebook exactly when read_notebook would raise it, without building the normalised notebook (which
    only grading needs): the portal checks every upload with it before answering."""
    notebook_shape(parsed(path, max_bytes), max_cells)


def parsed(path: pathlib.Path, max_bytes: int = MAX_NOTEBOOK_BYTES) -> object:
    """The file's JSON, read safely within `max_bytes`; UnreadableNotebook with a student-readable error."""
    text = read_bytes_safely(path, max_bytes).decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " It contains merge-conflict markers (<<<<<<<)." if "<<<<<<<" in text else ""
        raise UnreadableNotebook(f"the file is not valid notebook JSON (line {exc.lineno}, column {exc.colno}: "
                                 f"{exc.msg}).{hint} Open it in Jupyter, fix or re-download it, "
                                 "and resubmit.") from None
    except RecursionError:          # the C decoder stops at Python's recursion limit, cheaply
        raise UnreadableNotebook("the file nests JSON deeper than any notebook does; re-download or re-export "
                                 "it from Jupyter and resubmit") from None
    except ValueError:
        raise UnreadableNotebook("the file is not valid notebook JSON; re-download it and resubmit") from None


def valid_text(text: str) -> str:
    """Text every later step can encode: JSON's \\ud800-style escapes can make lone surrogates, which UTF-8
    refuses; each becomes '?'."""
    return text.encode("utf-8", "replace").decode("utf-8")


def notebook_shape(data: object, max_cells: int = MAX_CELLS) -> None:
    """UnreadableNotebook unless the JSON is a notebook normalise can keep: an object with a list of cells, format 4,
    at most `max_cells` cells (everything else in it normalise drops or repairs)."""
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise UnreadableNotebook("the file is JSON but not a Jupyter notebook (it has no list of cells).")
    if data.get("nbformat") != 4:
        raise UnreadableNotebook(f"the notebook is in format {str(data.get('nbformat'))[:10]!r}, not 4; "
                                 f"open and save it in a current Jupyter and resubmit")
    if len(data["cells"]) > max_cells:
        raise UnreadableNotebook(f"the notebook has {len(data['cells'])} cells, more than the {max_cells} accepted")


def normalise(data, max_cells: int = MAX_CELLS):
    """Keep only what grading reads, in the types it expects: cells with a known type, text source,
    an id, and nbgrader flags of the right types. Anything else a student (or an editor) put there,
    however nested or oddly typed, is dropped here, so no later stage meets it."""
    notebook_shape(data, max_cells)
    cells, seen_ids = [], set()
    for raw in data["cells"]:
        if not isinstance(raw, dict) or raw.get("cell_type") not in CELL_TYPES:
            continue
        source = raw.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        # Built directly: nbformat's new_*_cell validate each cell against the schema (0.1 s a notebook),
        # and what is built here is valid by construction. Plain dicts, made NotebookNodes once at the end.
        cell: dict = {"cell_type": raw["cell_type"], "metadata": {},
                      "source": valid_text(source) if isinstance(source, str) else ""}
        if raw["cell_type"] == "code":
            cell.update(outputs=[], execution_count=None)
        given = raw.get("id")
        cell["id"] = given if isinstance(given, str) and CELL_ID.fullmatch(given) and given not in seen_ids \
            else uuid.uuid4().hex[:8]                # nbformat's rule; a duplicate gets a fresh id
        seen_ids.add(cell["id"])
        meta = raw.get("metadata")
        flags = meta.get("nbgrader") if isinstance(meta, dict) else None
        if isinstance(flags, dict):
            cell["metadata"]["nbgrader"] = {k: v for k, v in flags.items()
                                            if k in GRADING_FLAGS and isinstance(v, GRADING_FLAGS[k])}
        cells.append(cell)
    return nbformat.from_dict({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
