"""Helpers for tests: read nbgrader notebooks and build namespaces from their code."""
from __future__ import annotations

import functools
import pathlib
import re
import subprocess
import sys

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
    stat = path.stat()
    return _implementation_source(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _implementation_source(path: pathlib.Path, _mtime_ns: int, _size: int) -> str:
    """Read once a process for each version of the file (hundreds of tests build namespaces from the solutions)."""
    nb = nbformat.read(path, as_version=4)
    return "\n\n".join(c.source for c in nb.cells
                       if c.cell_type == "code" and not nbgrader_meta(c).get("grade"))


def namespace_from(source: str, *overrides: str, namespace: dict | None = None) -> dict:
    """Execute the notebook's code, then each override (a student's variant of some functions), in `namespace` (a
    new dict unless given)."""
    ns = {} if namespace is None else namespace
    ns["__name__"] = "__student__"
    exec(_compiled(source, "<notebook>"), ns)  # noqa: S102 - test-only, trusted course code
    for code in overrides:
        exec(_compiled(code, "<variant>"), ns)  # noqa: S102
    return ns


def nbgrader_validate(folder: pathlib.Path, names: list[str]) -> dict[str, str]:
    """`nbgrader validate` on every notebook in one process, as a student runs it in their own folder (a bare
    environment, HOME there): file name -> what it printed for that notebook (one stream, each result after the
    log line naming its file)."""
    nbgrader = pathlib.Path(sys.executable).parent / "nbgrader"
    text = subprocess.run([str(nbgrader), "validate", *names], cwd=folder, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=900,
                          env={"PATH": f"{nbgrader.parent}:/usr/bin:/bin", "HOME": str(folder),
                               "PYTHONUNBUFFERED": "1"}).stdout
    parts = re.split(r"Validating '([^']+)'", text)
    return {pathlib.Path(parts[i]).name: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@functools.lru_cache(maxsize=256)
def _compiled(source: str, name: str):
    """A source compiled once a process: a code object is immutable, and each exec runs it in its own namespace (a
    solution's code was compiled again for each of the catalogue's 232 mistakes)."""
    return compile(source, name, "exec")
