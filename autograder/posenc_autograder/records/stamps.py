"""Remembering that a piece of work was done on exactly these inputs, so a rerun can skip it.

A stamp is a digest of what the work read (file contents or file states, and plain values); it is kept
in the course's work folder under the work's name. A stamp that cannot be read, or any input that
changed, means the work is done again: skipping is only ever an optimisation.
"""
from __future__ import annotations

import hashlib
import json
import pathlib
from collections.abc import Iterable
from typing import Any

from posenc_autograder.course import Course, write_replacing


def file_states(paths: Iterable[str | pathlib.Path]) -> list[tuple[str, int, int]]:
    """(path, size, modification time in ns) of each existing regular file: cheap, and changed by any write."""
    states = []
    for path in sorted(map(pathlib.Path, paths)):
        try:
            info = path.lstat()
        except OSError:
            continue
        states.append((str(path), info.st_size, info.st_mtime_ns))
    return states


def file_contents(paths: Iterable[str | pathlib.Path]) -> list[tuple[str, str | None]]:
    """(path, sha256) of each readable file: for inputs whose times say nothing (a git checkout)."""
    found: list[tuple[str, str | None]] = []
    for path in sorted(map(pathlib.Path, paths)):
        try:
            found.append((str(path), hashlib.sha256(path.read_bytes()).hexdigest()))
        except OSError:
            found.append((str(path), None))
    return found


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _file(course: Course, name: str) -> pathlib.Path:
    return course.work / "stamps" / f"{name}.json"


def recall(course: Course, name: str, stamp: str) -> Any:
    """What the work kept with this exact stamp (any JSON value), or None."""
    try:
        stored = json.loads(_file(course, name).read_text())
    except (OSError, ValueError):
        return None
    return stored.get("value") if isinstance(stored, dict) and stored.get("stamp") == stamp else None


def remember(course: Course, name: str, stamp: str, value: object = True) -> None:
    write_replacing(_file(course, name), json.dumps({"stamp": stamp, "value": value}).encode())


def forget(course: Course, name: str) -> None:
    _file(course, name).unlink(missing_ok=True)
