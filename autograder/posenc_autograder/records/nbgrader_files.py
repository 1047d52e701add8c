"""What nbgrader's own tools expect next to our results, so they work after `make grade`.

- timestamp.txt and submission_secret.txt in autograded/ and feedback/ (as nbgrader's autograde and
  generate_feedback leave them): `release_feedback` and formgrader read them. The secret is the one nbgrader's
  `submit` wrote, when the work came through the exchange (`nbgrader collect` copies it into submitted/):
  `release_feedback` names the page after it and the student's `fetch_feedback` looks for that name. submitted/ is
  the students' (`make collect` writes its timestamp.txt); grading reads it without following links or waiting on
  FIFOs;
- the autograded notebook: released cell sources, plain-text outputs only, and each hidden test's
  diagnosis as that cell's output, so formgrader and `generate_feedback` show what went wrong.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import secrets
import stat
from typing import Any

import nbformat
from nbgrader.utils import parse_utc

from posenc_autograder.course import Course, grade_id
from posenc_autograder.grading.pipeline import executed
from posenc_autograder.grading.shared_probes import SHARED_CELL
from posenc_autograder.intake import exchange
from posenc_autograder.intake.submissions import UnreadableNotebook, read_bytes_safely
from posenc_autograder.results import GradedTest, NotebookResult

TIMESTAMP = "timestamp.txt"
SECRET = exchange.SECRET
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"      # nbgrader's own format (exchange submit)
MAX_TIMESTAMP_BYTES = 200


def format_timestamp(when: dt.datetime) -> str:
    return when.strftime(TIMESTAMP_FORMAT)


def read_timestamp(folder: pathlib.Path) -> dt.datetime | None:
    """The submission time nbgrader would read from the folder (None: missing, unreadable, or not a regular
    file: a link or a FIFO someone put there is never followed or waited on)."""
    try:
        text = read_bytes_safely(folder / TIMESTAMP, MAX_TIMESTAMP_BYTES).decode("utf-8", "replace")
        when: dt.datetime = parse_utc(text.strip())
        return when
    except (UnreadableNotebook, ValueError, OverflowError, OSError, TypeError):
        return None


def _write(path: pathlib.Path, text: str) -> None:
    """The file holding `text`: one that holds it already is left as it is (a regrade rewrote four a notebook, the
    most costly part of storing one on a busy disk)."""
    data = text.encode()
    try:
        if read_bytes_safely(path, len(data)) == data:
            return
    except (UnreadableNotebook, OSError):
        pass                                  # missing, longer, or not a regular file: written below as before
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as out:
        out.write(text)


def submission_time(course: Course, student: str, assignment: str) -> dt.datetime | None:
    """timestamp.txt of the submission; without one, the latest time a notebook there was modified. Nothing
    in the student's folder is written to: a FIFO or link named timestamp.txt is left alone."""
    folder = course.submitted / student / assignment
    found = read_timestamp(folder)
    if found is None and folder.is_dir() and not folder.is_symlink():
        notebooks = [p.lstat() for p in folder.glob("*.ipynb")]
        mtime = max((info.st_mtime for info in notebooks if stat.S_ISREG(info.st_mode)),
                    default=folder.lstat().st_mtime)
        found = dt.datetime.fromtimestamp(mtime, dt.timezone.utc).replace(tzinfo=None)
    return found


def exchange_secret(course: Course, student: str, assignment: str) -> str | None:
    """The secret nbgrader's `submit` wrote beside the submission (None: not from the exchange)."""
    return exchange.read_secret(course.submitted / student / assignment)


def place_beside(course: Course, student: str, assignment: str, when: dt.datetime | None) -> None:
    """timestamp.txt and a submission secret in autograded/ and feedback/, as nbgrader's apps leave them: the
    exchange's secret when the work came through it, else the one placed before, else a new one."""
    secret = exchange_secret(course, student, assignment)
    for root in (course.autograded, course.feedback):
        folder = root / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        if when is not None:
            _write(folder / TIMESTAMP, format_timestamp(when))
        if (folder / SECRET).is_file():
            secret = secret or (folder / SECRET).read_text()
    secret = secret or secrets.token_hex(32)
    for root in (course.autograded, course.feedback):
        _write(root / student / assignment / SECRET, secret)


# --- the autograded notebook ----------------------------------------------------------------------

MAX_OUTPUT_CHARS = 20_000


def _text(value: object, limit: int = MAX_OUTPUT_CHARS) -> str:
    """Output text as nbformat stores it (a string or a list of lines), bounded."""
    return ("".join(map(str, value)) if isinstance(value, list) else str(value or ""))[:limit]


def _stream(name: str, text: str) -> nbformat.NotebookNode:
    """A stream output as nbformat.v4.new_output makes it, without validating each one (~80 us apiece; the
    notebook is validated once, when it is written)."""
    return nbformat.NotebookNode(output_type="stream", name=name, text=text)


def _plain_text(outputs: object) -> list[nbformat.NotebookNode]:
    """Only text survives: html, javascript, images and widgets a student forged never reach formgrader."""
    kept = []
    for output in outputs if isinstance(outputs, list) else []:
        kind = output.get("output_type") if isinstance(output, dict) else None
        if kind == "stream":
            kept.append(_stream("stderr" if output.get("name") == "stderr" else "stdout", _text(output.get("text"))))
        elif kind == "error":
            kept.append(nbformat.NotebookNode(output_type="error", ename=_text(output.get("ename"), 200),
                                              evalue=_text(output.get("evalue"), 2_000), traceback=[]))
        elif kind in ("execute_result", "display_data") and isinstance(output.get("data"), dict):
            text = _text(output["data"].get("text/plain"))
            if text:
                kept.append(_stream("stdout", text))
    return kept


def diagnosis_text(test: GradedTest) -> str:
    if test.passed:
        return f"{test.cell_id}: passed ({test.points:g}/{test.max_points:g} points)\n"
    return (f"{test.cell_id}: failed ({test.points:g}/{test.max_points:g} points)\n"
            + "".join(f"- {problem}\n" for problem in test.problems))


def autograded_notebook(executed_json: str | nbformat.NotebookNode | None, release: nbformat.NotebookNode,
                        result: NotebookResult) -> nbformat.NotebookNode:
    """The notebook formgrader and generate_feedback open: released test cells showing our diagnoses. executed_json:
    the executed notebook's text, or the notebook a re-judge built on the trusted side (kept_records.with_outputs)."""
    # Not run (missing or unreadable submission): the released notebook carries the diagnoses. Parsed once, shared:
    # never changed here.
    parsed = executed_json if isinstance(executed_json, dict) else executed(executed_json) if executed_json \
        else release
    released = {grade_id(c): c for c in release.cells if grade_id(c)}
    tests = {t.cell_id: t for t in result.tests}
    # New notebook and cell objects over the parsed ones' values: a cell's outputs and source are replaced, never
    # edited in place, so no deep copy is needed (nbformat's writer makes its own). The integrity probes' cell
    # is not the student's.
    nb = nbformat.NotebookNode({**parsed, "cells": [nbformat.NotebookNode(c) for c in parsed.cells
                                                    if grade_id(c) != SHARED_CELL]})
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell_id = grade_id(cell)
        cell.outputs = _plain_text(cell.get("outputs", []))
        if cell_id in tests and tests[cell_id].hidden:
            cell.source = released[cell_id].source if cell_id in released else ""
            cell.outputs = [_stream("stdout", diagnosis_text(tests[cell_id]))]
    return nb


TRANSIENT = ("orig_nbformat", "orig_nbformat_minor", "signature")       # nbformat's strip_transient: never stored


def write_notebook(nb: nbformat.NotebookNode, target: pathlib.Path) -> None:
    """The autograded notebook stored as nbformat.write stores it for every reader (its transient fields left out),
    without what cost a re-judged notebook most of its storing and changes nothing read back: nbformat's validation,
    which only logs, and its indented form, which goes through Python's slow encoder (compact: the C one)."""
    target.write_text(notebook_text(nb), encoding="utf-8")


def notebook_text(nb: nbformat.NotebookNode) -> str:
    """What write_notebook writes of nb."""
    cells = [{**c, "metadata": _without(c.get("metadata", {}), ("trusted",))} for c in nb.cells]
    stored = {**nb, "metadata": _without(nb.get("metadata", {}), TRANSIENT), "cells": cells}
    return json.dumps(stored, ensure_ascii=False, sort_keys=True) + "\n"


def _without(metadata: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in names}
