"""What nbgrader's generate_assignment makes of one assignment: the student files (exercises/) and the definition
of its cells the gradebook records. Made in-process, and kept under the digest of everything that decides it, so an
assignment whose inputs did not change is never generated again.

The digest covers the assignment's source folder (every file, as the release writes it), its hidden tests (the
assignment's package in checks/: a changed input regenerates that assignment and only it), the course's nbgrader
settings as loaded from nbgrader_config.py (with the course's own location written as a placeholder, so a path
does not count but every setting does), the header and footer files nbgrader would include, and the versions of
nbgrader, nbconvert and nbformat and of this code. A kept entry carries a checksum of its own content: an entry
edited, cut short or deleted is generated again, never trusted.

When only points changed (the same digest with the source notebooks and hidden tests left out, and the notebooks the
same but for grade cells' points and title lines), the kept entry is re-weighed instead of generated: those cells'
points, title lines and checksums (nbgrader's own function), as nbgrader would write them.
"""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import importlib.metadata
import io
import json
import logging
import os
import pathlib
import shutil
import sqlite3
import tempfile
import uuid
import warnings
from collections.abc import Callable
from typing import Any

from posenc_autograder.course import CONFIG, COURSE_ID, SOURCE_DIRECTORY, Course, create_schema, write_replacing

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
KEPT = "generated"                        # under the course's work folder: <assignment>.json, the latest entry
TOOLS = ("nbgrader", "nbconvert", "nbformat")
# This module (how nbgrader is run, what is read back) decides the entry as much as nbgrader does.
OWN_CODE = (pathlib.Path(__file__),)
INCLUDED_FILES = (("IncludeHeaderFooter", "header"), ("IncludeHeaderFooter", "footer"))


class GenerationFailed(RuntimeError):
    """nbgrader refused the assignment; the message holds the last lines it logged."""


@dataclasses.dataclass(frozen=True)
class Generated:
    """One assignment as nbgrader generates it."""
    files: dict[str, bytes]                        # path under exercises/<assignment>/ -> content
    definitions: dict[str, "Definition"]           # notebook -> its cells as the gradebook records them
    made: bool = False                             # True: nbgrader ran for it now (not a kept entry)

    def write(self, folder: pathlib.Path) -> None:
        """The files under folder (made), as nbgrader writes them (read-write for the owner, readable by all)."""
        for relative, data in sorted(self.files.items()):
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o644)

    def same_as(self, folder: pathlib.Path) -> bool:
        """Whether folder holds exactly these files, byte for byte (nothing missing, changed or extra)."""
        present = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()
        return present == set(self.files) and all((folder / name).read_bytes() == data
                                                  for name, data in self.files.items())


@dataclasses.dataclass(frozen=True)
class Definition:
    """One notebook's cells as nbgrader records them: (kind, cell name) -> fields."""
    kernelspec: str
    cells: dict[tuple[str, str], dict]

    def points(self) -> dict[str, float]:
        return {name: fields["max_score"] for (kind, name), fields in self.cells.items() if kind == "grade"}

    def as_json(self) -> dict:
        return {"kernelspec": self.kernelspec, "cells": [[kind, name, fields] for (kind, name), fields
                                                         in sorted(self.cells.items())]}

    @classmethod
    def from_json(cls, data: dict) -> "Definition":
        return cls(data["kernelspec"], {(kind, name): fields for kind, name, fields in data["cells"]})


# --- a definition as nbgrader's gradebook records it (nbgrader imported only to read or change one) ------------

# kind -> (nbgrader's model of it, the fields nbgrader keeps for it, whether a submission holds a grade / a comment
# for it)
KINDS = {
    "grade": ("GradeCell", ("max_score", "cell_type"), True, False),
    "solution": ("SolutionCell", (), False, True),
    "task": ("TaskCell", ("max_score", "cell_type"), True, True),
    "source": ("SourceCell", ("cell_type", "locked", "source", "checksum"), False, False),
}


def model_of(kind: str):
    from nbgrader import api
    return getattr(api, KINDS[kind][0])


def read_definition(gb, assignment: str, notebook: str) -> Definition | None:
    """The notebook's definition as the gradebook `gb` holds it (None: the gradebook does not know it)."""
    from nbgrader.api import MissingEntry
    try:
        nb = gb.find_notebook(notebook, assignment)
    except MissingEntry:
        return None
    return Definition(nb.kernelspec, {key: {f: getattr(cell, f) for f in KINDS[key[0]][1]}
                                      for key, cell in cells_of(nb).items()})


def cells_of(nb) -> dict[tuple[str, str], Any]:
    cells = {}
    for kind in KINDS:
        cells.update({(kind, cell.name): cell for cell in getattr(nb, f"{kind}_cells")})
    return cells


# --- generated, or kept ------------------------------------------------------------------------------------

def kept(course: Course, assignment: str) -> Generated | None:
    """The kept entry of the assignment as its source is now (its digest this one, and intact), else None: nothing
    is generated."""
    config = course_config(course)
    found = _recall(course, assignment, digest(course, assignment, course.root / SOURCE_DIRECTORY / assignment, config))
    return found[0] if found is not None else None


def includes_files(config) -> bool:
    """Whether the settings name a header or footer file nbgrader adds to each released notebook."""
    return any(config.get(section, {}).get(key) for section, key in INCLUDED_FILES)


def generated(course: Course, assignment: str, source_root: pathlib.Path | None = None) -> Generated:
    """The assignment as nbgrader generates it from source_root/solutions/<assignment> (default: the course's):
    the kept entry when its digest is this one and it is intact, else generated now (and kept).
    GenerationFailed with nbgrader's words when it refuses."""
    source_root = source_root or course.root
    config = course_config(course)
    key = digest(course, assignment, source_root / SOURCE_DIRECTORY / assignment, config)
    found = _recall(course, assignment, key)
    if found is not None:
        return found[0]
    source = source_root / SOURCE_DIRECTORY / assignment
    unweighed = digest(course, assignment, source, config, weighed=False)
    sources = {path.name: path.read_text() for path in _notebooks(source)}
    course.work.mkdir(parents=True, exist_ok=True)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"generate-{assignment}-", dir=course.work))
    try:
        made = _generate(assignment, source_root, config, scratch,
                         reweigh=_reweighable(course, assignment, unweighed, sources))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _keep(course, assignment, key, made, unweighed, sources)
    return made


# --- the digest --------------------------------------------------------------------------------------------

def course_config(course: Course):
    """The course's nbgrader settings, as nbgrader loads them from autograder/nbgrader_config.py."""
    from traitlets.config.loader import PyFileConfigLoader

    path = course.path(CONFIG)
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def digest(course: Course, assignment: str, source: pathlib.Path, config, weighed: bool = True) -> str:
    """Everything the generated files and definition depend on, as one sha256. weighed=False leaves out what points
    are written in (the source folder's notebooks, the hidden tests): re-weighing compares those cell by cell."""
    hashed = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        hashed.update(f"{label}\0{len(data)}\0".encode())
        hashed.update(data)

    for tool in TOOLS:
        add("version", f"{tool} {importlib.metadata.version(tool)}".encode())
    for path in OWN_CODE:
        add("code", path.read_bytes())
    settings = json.dumps(config, sort_keys=True, default=repr).replace(str(course.root), "<course>")
    add("settings", settings.encode())
    for section, key in INCLUDED_FILES:
        named = config.get(section, {}).get(key)
        if named:
            add(f"{section}.{key}", _read(course.path(CONFIG).parent / named))
    notebooks = set(_notebooks(source))
    for label, folder in (("source", source), ("hidden tests", PACKAGE / "checks" / assignment))[:2 if weighed else 1]:
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and "__pycache__" not in path.parts and (weighed or path not in notebooks):
                add(f"{label} {path.relative_to(folder)}", path.read_bytes())
    return hashed.hexdigest()


def _notebooks(source: pathlib.Path) -> list[pathlib.Path]:
    """The notebooks nbgrader generates (the source folder's own; a notebook in a subfolder is copied as a file)."""
    return sorted(source.glob("*.ipynb")) if source.is_dir() else []


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b"(missing)"


# --- nbgrader, in-process ----------------------------------------------------------------------------------

def _generate(assignment: str, source_root: pathlib.Path, config, scratch: pathlib.Path,
              reweigh: Callable[[], Generated | None] | None = None) -> Generated:
    """The assignment made now: re-weighed from the kept entry when only points changed (`reweigh`), else by
    nbgrader's own converter, configured as `nbgrader generate_assignment --force` is by the course's settings,
    writing into scratch: the student files, and the definition read back from a gradebook of its own."""
    reweighed = reweigh() if reweigh is not None else None
    return reweighed if reweighed is not None else _converted(assignment, source_root, config, scratch)


def _converted(assignment: str, source_root: pathlib.Path, config, scratch: pathlib.Path) -> Generated:
    """nbgrader's generate_assignment, in-process (see _generate)."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    config = Config(config)
    config.CourseDirectory.root = str(source_root)
    config.CourseDirectory.release_directory = str(scratch / "exercises")
    config.CourseDirectory.course_id = COURSE_ID
    said = io.StringIO()
    log = logging.getLogger(f"{__name__}.{assignment}")
    log.propagate, log.handlers = False, [logging.StreamHandler(said)]
    log.setLevel(logging.WARNING)
    working = os.getcwd()                     # the converter changes directory while it works, and back
    with _scratch_gradebook() as database:
        config.CourseDirectory.db_url = database
        coursedir = CourseDirectory(config=config, log=log)
        coursedir.assignment_id = assignment
        converter = GenerateAssignment(coursedir=coursedir, config=config, log=log)
        converter.force = True
        try:
            converter.start()
        except Exception as exc:  # noqa: BLE001 - whatever nbgrader raises, its log says why
            lines = (said.getvalue().strip() or f"{type(exc).__name__}: {exc}").splitlines()[-8:]
            raise GenerationFailed(f"nbgrader could not release '{assignment}':\n" + "\n".join(lines)) from None
        finally:
            os.chdir(working)
        definitions = _definitions(database, assignment)
    released = scratch / "exercises" / assignment
    files = {str(p.relative_to(released)): p.read_bytes() for p in sorted(released.rglob("*")) if p.is_file()}
    return Generated(files, definitions, made=True)


@contextlib.contextmanager
def _scratch_gradebook():
    """The URL of an empty gradebook in memory, with nbgrader's schema, alive while the block runs: nbgrader's
    SaveCells commits once per cell, and on a file each commit waits for the disk (seconds per assignment on a
    busy machine) for a database that is read once and thrown away. SQLite's shared cache lets every engine
    nbgrader opens see the one database, which this connection keeps alive."""
    name = f"posenc-definitions-{uuid.uuid4().hex}"
    keeper = sqlite3.connect(f"file:{name}?mode=memory&cache=shared", uri=True)
    try:
        with warnings.catch_warnings():
            # SQLAlchemy says it will pick another pool for such a URL one day: either keeps the database alive.
            warnings.filterwarnings("ignore", message=".*SingletonThreadPool.*mode=memory")
            url = f"sqlite:///file:{name}?mode=memory&cache=shared&uri=true"
            create_schema(url)                # nbgrader's Gradebook would ask a subprocess for the revision
            yield url
    finally:
        keeper.close()


def _definitions(database: str, assignment: str) -> dict[str, Definition]:
    from nbgrader.api import Gradebook

    with Gradebook(database, course_id=COURSE_ID) as gb:
        return {nb.name: read_definition(gb, assignment, nb.name) for nb in gb.find_assignment(assignment).notebooks}


# --- re-weighed: only points changed --------------------------------------------------------------------

# A title line holding one of these may be one of nbgrader's region markers: such a cell is generated by nbgrader.
MARKERS = ("###", "BEGIN", "END", "AUTOTEST")


def _reweighable(course: Course, assignment: str, unweighed: str,
                 sources: dict[str, str]) -> Callable[[], Generated | None]:
    """How to re-weigh the kept entry made from everything else as now (the same unweighed digest) into these
    sources' points: None when anything but points and their title lines changed."""
    def reweigh() -> Generated | None:
        kept = _recall(course, assignment, unweighed, field="unweighed")
        if kept is None or set(kept[1].get("sources", {})) != set(sources):
            return None
        try:
            return _reweighed(kept[0], kept[1]["sources"], sources)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            return None
    return reweigh


def _reweighed(kept: Generated, old_sources: dict[str, str], sources: dict[str, str]) -> Generated | None:
    """The kept generated files and definitions with each re-weighed grade cell's points, title line and checksums
    as nbgrader would make them (its own checksum function); None where that cannot be said for sure."""
    files, definitions = dict(kept.files), dict(kept.definitions)
    for name, text in sorted(sources.items()):
        changed = _reweighed_cells(json.loads(old_sources[name]), json.loads(text))
        if changed is None:
            return None
        if not changed:
            continue
        notebook = pathlib.Path(name).stem
        made = _reweighed_notebook(files[name], definitions[notebook], changed)
        if made is None:
            return None
        files[name], definitions[notebook] = made
    return Generated(files, definitions, made=True)


def _weightless(cell: dict) -> dict:
    """A cell without its source and points: what must not change for a cell to be re-weighed."""
    cell = json.loads(json.dumps(cell))
    cell.pop("source", None)
    cell.get("metadata", {}).get("nbgrader", {}).pop("points", None)
    return cell


def _lines(source) -> list[str]:
    return ("".join(source) if isinstance(source, list) else source).split("\n")


def _reweighed_cells(old: dict, new: dict) -> list[tuple[list[str], dict]] | None:
    """Each cell of the new source notebook whose points changed, with the old cell's lines; None when the notebooks
    differ otherwise (another cell, the notebook's metadata, a line other than a grade cell's first)."""
    if {k: v for k, v in old.items() if k != "cells"} != {k: v for k, v in new.items() if k != "cells"} \
            or len(old["cells"]) != len(new["cells"]):
        return None
    changed = []
    for was, cell in zip(old["cells"], new["cells"], strict=True):
        if was == cell:
            continue
        flags = cell["metadata"]["nbgrader"]
        before, after = _lines(was["source"]), _lines(cell["source"])
        if not (flags.get("grade") is True and not flags.get("solution") and not flags.get("task")
                and _weightless(was) == _weightless(cell) and len(before) == len(after)
                and before[1:] == after[1:] and not any(m in line for m in MARKERS for line in (before[0], after[0]))):
            return None
        changed.append((before, cell))
    return changed


def _reweighed_notebook(data: bytes, definition: Definition,
                        changed: list[tuple[list[str], dict]]) -> tuple[bytes, Definition] | None:
    """The generated notebook and its definition with these cells re-weighed, checked first to be what nbgrader made
    of the old cells (the same title line kept, the checksums nbgrader's function gives) and to be written back byte
    for byte as nbgrader wrote it."""
    import nbformat
    from nbgrader.utils import compute_checksum

    text = data.decode()
    nb = nbformat.reads(text, as_version=4)
    if nbformat.writes(nb) + "\n" != text:
        return None
    cells = dict(definition.cells)
    for before, cell in changed:
        grade_id = cell["metadata"]["nbgrader"]["grade_id"]
        found = [c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id]
        if len(found) != 1:
            return None
        released = found[0]
        kept_lines = released.source.split("\n")
        full = nbformat.from_dict(json.loads(json.dumps(released)))
        full.source = "\n".join(before)
        source_key = ("source", grade_id)
        if kept_lines[0] != before[0] or compute_checksum(released) != released.metadata.nbgrader["checksum"] \
                or (source_key in cells and (cells[source_key]["source"] != full.source
                                             or cells[source_key]["checksum"] != compute_checksum(full))):
            return None
        points = cell["metadata"]["nbgrader"]["points"]
        title = _lines(cell["source"])[0]
        released.source = "\n".join([title, *kept_lines[1:]])
        released.metadata.nbgrader["points"] = points
        released.metadata.nbgrader["checksum"] = compute_checksum(released)
        cells[("grade", grade_id)] = {**cells[("grade", grade_id)], "max_score": float(points)}
        if source_key in cells:
            full.source = "\n".join([title, *before[1:]])
            full.metadata.nbgrader["points"] = points
            cells[source_key] = {**cells[source_key], "source": full.source, "checksum": compute_checksum(full)}
    return (nbformat.writes(nb) + "\n").encode(), Definition(definition.kernelspec, cells)


# --- kept entries ------------------------------------------------------------------------------------------

def _entry_file(course: Course, assignment: str) -> pathlib.Path:
    return course.work / KEPT / f"{assignment}.json"


def _payload(key: str, made: Generated, unweighed: str, sources: dict[str, str]) -> dict:
    return {"key": key, "unweighed": unweighed, "sources": sources,
            "files": {name: base64.b64encode(data).decode() for name, data in sorted(made.files.items())},
            "definitions": {name: definition.as_json() for name, definition in sorted(made.definitions.items())}}


def _checksum(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _keep(course: Course, assignment: str, key: str, made: Generated, unweighed: str, sources: dict[str, str]) -> None:
    payload = _payload(key, made, unweighed, sources)
    entry = {"payload": payload, "sha256": _checksum(payload)}
    write_replacing(_entry_file(course, assignment), json.dumps(entry).encode())


def _recall(course: Course, assignment: str, key: str, field: str = "key") -> tuple[Generated, dict] | None:
    """The kept entry whose `field` is `key` (the generated assignment, and its payload), or None when there is none,
    it is another key's, or it is not intact."""
    try:
        stored = json.loads(_entry_file(course, assignment).read_text())
        payload = stored["payload"]
        if payload.get(field) != key or stored["sha256"] != _checksum(payload):
            return None
        files = {name: base64.b64decode(text, validate=True) for name, text in payload["files"].items()}
        definitions = {name: Definition.from_json(data) for name, data in payload["definitions"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Generated(files, definitions), payload


def forget(course: Course, assignment: str) -> None:
    _entry_file(course, assignment).unlink(missing_ok=True)
