"""What nbgrader's generate_assignment makes of one assignment: the student files (exercises/) and the definition
of its cells the gradebook records. Made in-process, and kept under the digest of everything that decides it, so an
assignment whose inputs did not change is never generated again.

The digest covers the assignment's source folder (every file, as the release writes it), its hidden tests (the
assignment's package in checks/: a changed input regenerates that assignment and only it), the course's nbgrader
settings as loaded from nbgrader_config.py (with the course's own location written as a placeholder, so a path
does not count but every setting does), the header and footer files nbgrader would include, and the versions of
nbgrader, nbconvert and nbformat and of this code. A kept entry carries a checksum of its own content: an entry
edited, cut short or deleted is generated again, never trusted.
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

def generated(course: Course, assignment: str, source_root: pathlib.Path | None = None) -> Generated:
    """The assignment as nbgrader generates it from source_root/solutions/<assignment> (default: the course's):
    the kept entry when its digest is this one and it is intact, else generated now (and kept).
    GenerationFailed with nbgrader's words when it refuses."""
    source_root = source_root or course.root
    config = course_config(course)
    key = digest(course, assignment, source_root / SOURCE_DIRECTORY / assignment, config)
    found = _recall(course, assignment, key)
    if found is not None:
        return found
    course.work.mkdir(parents=True, exist_ok=True)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix=f"generate-{assignment}-", dir=course.work))
    try:
        made = _generate(assignment, source_root, config, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _keep(course, assignment, key, made)
    return made


# --- the digest --------------------------------------------------------------------------------------------

def course_config(course: Course):
    """The course's nbgrader settings, as nbgrader loads them from autograder/nbgrader_config.py."""
    from traitlets.config.loader import PyFileConfigLoader

    path = course.path(CONFIG)
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def digest(course: Course, assignment: str, source: pathlib.Path, config) -> str:
    """Everything the generated files and definition depend on, as one sha256."""
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
    for label, folder in (("source", source), ("hidden tests", PACKAGE / "checks" / assignment)):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and "__pycache__" not in path.parts:
                add(f"{label} {path.relative_to(folder)}", path.read_bytes())
    return hashed.hexdigest()


def _read(path: pathlib.Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b"(missing)"


# --- nbgrader, in-process ----------------------------------------------------------------------------------

def _generate(assignment: str, source_root: pathlib.Path, config, scratch: pathlib.Path) -> Generated:
    """nbgrader's own converter, configured as `nbgrader generate_assignment --force` is by the course's settings,
    writing into scratch: the student files, and the definition read back from a gradebook of its own."""
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


# --- kept entries ------------------------------------------------------------------------------------------

def _entry_file(course: Course, assignment: str) -> pathlib.Path:
    return course.work / KEPT / f"{assignment}.json"


def _payload(key: str, made: Generated) -> dict:
    return {"key": key,
            "files": {name: base64.b64encode(data).decode() for name, data in sorted(made.files.items())},
            "definitions": {name: definition.as_json() for name, definition in sorted(made.definitions.items())}}


def _checksum(payload: dict) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _keep(course: Course, assignment: str, key: str, made: Generated) -> None:
    payload = _payload(key, made)
    entry = {"payload": payload, "sha256": _checksum(payload)}
    write_replacing(_entry_file(course, assignment), json.dumps(entry).encode())


def _recall(course: Course, assignment: str, key: str) -> Generated | None:
    """The kept entry of this key, or None when there is none, it is another key's, or it is not intact."""
    try:
        stored = json.loads(_entry_file(course, assignment).read_text())
        payload = stored["payload"]
        if payload["key"] != key or stored["sha256"] != _checksum(payload):
            return None
        files = {name: base64.b64decode(text, validate=True) for name, text in payload["files"].items()}
        definitions = {name: Definition.from_json(data) for name, data in payload["definitions"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return Generated(files, definitions)


def forget(course: Course, assignment: str) -> None:
    _entry_file(course, assignment).unlink(missing_ok=True)
