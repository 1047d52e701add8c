"""Every release of each assignment's read-only cells, kept in the course (autograder/release_history/).

`make release` records the released notebooks' read-only cells (instructions, given code, visible and
hidden test cells as students see them) in <assignment>/<hash>.json, named by content so an unchanged
release adds nothing; commit these files. When grading, a read-only cell that matches any recorded
release is the student's old copy, not an edit: only real edits are reported.
"""
from __future__ import annotations

import hashlib
import json
import pathlib

import nbformat

from posenc_autograder.course import RELEASE_DIRECTORY, Course, grade_id, nbgrader_meta

HISTORY_DIRECTORY = "autograder/release_history"


def folder(course: Course, assignment: str) -> pathlib.Path:
    return course.path(HISTORY_DIRECTORY) / assignment


def read_only_cells(nb) -> list[dict]:
    """The cells a student may not change, as plain dicts (source joined, nbgrader metadata only)."""
    cells = []
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta and not meta.get("solution"):
            cells.append({"cell_type": cell.cell_type, "source": "".join(cell.source),
                          "metadata": {"nbgrader": dict(meta)}})
    return cells


def pending(course: Course, assignment: str, released: pathlib.Path) -> dict[pathlib.Path, str]:
    """history file -> its text, for each notebook released in `released` that is not recorded yet."""
    found = {}
    for path in sorted(released.glob("*.ipynb")):
        entry = {"assignment": assignment, "notebook": path.stem,
                 "cells": read_only_cells(nbformat.read(path, as_version=4))}
        text = json.dumps(entry, indent=1, sort_keys=True) + "\n"
        target = folder(course, assignment) / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.json"
        if not target.exists():
            found[target] = text
    return found


def record(course: Course, assignment: str) -> list[pathlib.Path]:
    """Store the current release of every notebook of the assignment (no-op when already stored)."""
    written = pending(course, assignment, course.path(RELEASE_DIRECTORY) / assignment)
    for target, text in written.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return list(written)


def earlier_cells(course: Course, assignment: str, notebook: str) -> dict[str, list[dict]]:
    """grade id -> that cell in every recorded release of the notebook (for assemble's edit check)."""
    found: dict[str, list[dict]] = {}
    for path in sorted(folder(course, assignment).glob("*.json")):
        try:
            entry = json.loads(path.read_text())
        except ValueError:
            continue
        if entry.get("notebook") != notebook:
            continue
        for cell in entry.get("cells", []):
            cell_id = grade_id(cell)
            if cell_id:
                found.setdefault(cell_id, []).append(cell)
    return found

