"""Build the notebook that is actually run: the released cells with the student's answers in them.

Every cell the student may not change (instructions, given code, visible and hidden tests) comes
from the released notebook in exercises/ (never the solutions), whatever the submission did to it
(deleted, edited, metadata changed). Every cell the student writes (solution cells, scratch cells, and
cells they added) comes from the submission, in place. This replaces nbgrader's OverwriteCells plus
checksum check, which fail a whole notebook over an edited metadata flag.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any

import nbformat
from nbformat.corpus.words import generate_corpus_id

from posenc_autograder.course import grade_id, nbgrader_meta
from posenc_autograder.results import Note, NoteKind


@dataclasses.dataclass
class Assembled:
    notebook: nbformat.NotebookNode
    notes: list[Note]


def _is_student_cell(released_cell) -> bool:
    nbg = nbgrader_meta(released_cell)
    return not nbg or bool(nbg.get("solution"))


def _student_cells_by_anchor(release, submission):
    """Map each released cell index to (the student's version, student cells added after it)."""
    by_grade_id = {grade_id(c): i for i, c in enumerate(release.cells) if grade_id(c)}
    by_cell_id = {c.get("id"): i for i, c in enumerate(release.cells) if c.get("id")}
    versions: dict[int, object] = {}
    added: dict[int, list] = {}
    anchor = -1
    for cell in submission.cells:
        index = by_grade_id.get(grade_id(cell)) if grade_id(cell) else None
        if index is None and cell.get("id") in by_cell_id and by_cell_id[cell.get("id")] not in versions:
            index = by_cell_id[cell.get("id")]
        if index is not None and index not in versions:
            versions[index] = cell
            anchor = index
        elif cell.get("cell_type") == "code" and source_text(cell).strip():
            added.setdefault(anchor, []).append(cell)
    return versions, added


def assemble(release, submission, earlier_releases: dict[str, list] | None = None) -> Assembled:
    """`earlier_releases`: grade id -> that cell in earlier releases (release_history); a copy of one is no edit."""
    versions, added = _student_cells_by_anchor(release, submission)
    notes = []
    cells = [_fresh_code_cell(c) for c in added.get(-1, [])]
    restored, edited = [], []
    for index, released_cell in enumerate(release.cells):
        student = versions.get(index)
        if _is_student_cell(released_cell):
            cell = _copied(released_cell)
            if student is not None:
                cell.source = source_text(student)
            elif nbgrader_meta(released_cell).get("solution"):
                notes.append(Note(NoteKind.ASSEMBLY, f"the answer cell '{grade_id(released_cell)}' was deleted; "
                                                       f"the template's stub was run"))
            cells.append(cell)
        else:
            cells.append(_copied(released_cell))
            name = grade_id(released_cell) or f"cell {index}"
            if student is None and released_cell.cell_type == "code":
                restored.append(name)
            elif student is not None and _differs(student, released_cell) and all(
                    _differs(student, old) for old in (earlier_releases or {}).get(name, [])):
                edited.append(name)
        cells.extend(_fresh_code_cell(c) for c in added.get(index, []))
    if restored:
        notes.append(Note(NoteKind.ASSEMBLY, f"deleted cells were restored and run: {', '.join(restored)}"))
    if edited:
        notes.append(Note(NoteKind.EDITED_READ_ONLY, f"read-only cells were edited (source or metadata); the "
                                                     f"original versions were used: {', '.join(edited)}"))
    # Cells the student added run in place with no note of their own: one that raised, ran out of time or printed
    # too much has that cause's note (own_cell_error_notes, the timeout and output notes); one that ran fine needs none.
    _check_release(release)
    nb = nbformat.NotebookNode(nbformat=4, nbformat_minor=5, metadata=_copied(release.metadata), cells=cells)
    _unique_ids(nb.cells)
    return Assembled(nb, notes)


# Valid by construction, checked once: what nbformat's schema validation of each assembled notebook checked is the
# same for every notebook of a release (its cells' types, metadata and ids, the notebook's metadata). A student gives
# only sources, each made a string here, and a cell they added is a fresh code cell; so the release is validated
# once (as nbformat.v4.new_notebook validated each notebook: it raises on an invalid release, every time), and each
# notebook gets the cell ids that validation would have given it (_unique_ids).
_VALID_RELEASES: collections.OrderedDict[int, Any] = collections.OrderedDict()   # id -> the release (held: no reuse)
_VALID_KEPT = 16
_VALID_LOCK = threading.Lock()


def _check_release(release) -> None:
    """nbformat's ValidationError unless the release's cells and metadata make a valid notebook; a release found valid
    is not validated again (released notebooks are shared and never changed)."""
    with _VALID_LOCK:
        if _VALID_RELEASES.get(id(release)) is release:
            return
    nbformat.v4.new_notebook(cells=[_copied(c) for c in release.cells], metadata=_copied(release.metadata))
    with _VALID_LOCK:
        _VALID_RELEASES[id(release)] = release
        while len(_VALID_RELEASES) > _VALID_KEPT:
            _VALID_RELEASES.popitem(last=False)


def _unique_ids(cells) -> None:
    """A new id for a cell with none or with the id of a cell above it, as nbformat's validation gives one (a release
    written before cell ids, or with a repeated one)."""
    seen = set()
    for cell in cells:
        if "id" not in cell or cell["id"] in seen:
            cell["id"] = generate_corpus_id()
        seen.add(cell["id"])


def code_cell(source: str, metadata: dict | None = None) -> nbformat.NotebookNode:
    """nbformat.v4.new_code_cell(source, metadata=...) without validating it: a code cell of a string and metadata the
    grader gives is valid as made (validating each took ~0.5 ms)."""
    cell = nbformat.NotebookNode(id=generate_corpus_id(), cell_type="code", metadata=nbformat.NotebookNode(),
                                 execution_count=None, source=source, outputs=[])
    if metadata is not None:
        cell["metadata"] = metadata
    return cell


def _copied(value):
    """A deep copy of a released cell or of the release's metadata, NotebookNodes as nbformat makes them: a notebook's
    values are JSON's (mappings, lists, strings, numbers), and copy.deepcopy took three times as long through
    NotebookNode's generic path (every released cell, every notebook prepared)."""
    if isinstance(value, dict):
        return nbformat.NotebookNode({key: _copied(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_copied(item) for item in value]
    return value


def answer_cells(notebook) -> dict[str, str]:
    """Each answer cell's text by its grade id."""
    return {grade_id(c): c.source.strip() for c in notebook.cells if nbgrader_meta(c).get("solution")}


def untouched(notebook, release) -> bool:
    """The notebook's answer cells hold what the released template's hold."""
    return answer_cells(notebook) == answer_cells(release)


def _differs(student, released_cell) -> bool:
    return _flags(student) != _flags(released_cell) or (
        released_cell.get("cell_type") == "code"
        and source_text(student) != source_text(released_cell))


def _flags(cell) -> dict:
    """The nbgrader fields that decide how a cell is graded."""
    meta = nbgrader_meta(cell)
    return {key: meta.get(key) for key in ("grade", "solution", "locked", "points", "task", "grade_id")}


def _fresh_code_cell(student_cell):
    return code_cell(source_text(student_cell))


def source_text(cell) -> str:
    """A cell's source as one text: a string as it is, a list of lines joined ("".join of a string walked it one
    character at a time: every read-only code cell of every notebook, twice, ~2 ms a notebook)."""
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)
