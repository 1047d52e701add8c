"""Helpers for tests: read nbgrader notebooks and build namespaces from their code."""
from __future__ import annotations

import pathlib

import nbformat

from posenc_autograder.course import grade_id, nbgrader_meta

ROOT = pathlib.Path(__file__).resolve().parents[2]


def solution_notebook(assignment: str) -> pathlib.Path:
    return ROOT / "solutions" / assignment / f"{assignment}.ipynb"


def grade_cells(path: pathlib.Path) -> dict[str, float]:
    """grade_id -> points of every graded cell of a notebook."""
    nb = nbformat.read(path, as_version=4)
    return {grade_id(c): nbgrader_meta(c)["points"] for c in nb.cells if nbgrader_meta(c).get("grade")}


def implementation_source(path: pathlib.Path) -> str:
    """The code a student writes or is given: every non-test code cell, in order."""
    nb = nbformat.read(path, as_version=4)
    return "\n\n".join(c.source for c in nb.cells
                       if c.cell_type == "code" and not nbgrader_meta(c).get("grade"))


def namespace_from(source: str, *overrides: str) -> dict:
    """Execute the notebook's code, then each override (a student's variant of some functions)."""
    ns: dict = {"__name__": "__student__"}
    exec(compile(source, "<notebook>", "exec"), ns)  # noqa: S102 - test-only, trusted course code
    for code in overrides:
        exec(compile(code, "<variant>", "exec"), ns)  # noqa: S102
    return ns
