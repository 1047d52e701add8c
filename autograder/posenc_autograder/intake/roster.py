"""autograder/roster.csv: who each collected submission belongs to in the LMS, and when it was handed in.

One row per (student id, assignment), written by `make collect`, read by the grade exports and the
dashboard. The LMS's ids are kept so grades can go back to the right person.
"""
from __future__ import annotations

import csv
import io
import os
import pathlib
import threading
import time
import types
from collections.abc import Mapping

from posenc_autograder import csvsafe
from posenc_autograder.course import Course, write_replacing

ROSTER_FILE = "autograder/roster.csv"
FIELDS = ["student_id", "assignment", "lms", "lms_user_id", "name", "submitted_at", "late", "attempt",
          "file_name", "source_zip", "sha256", "lms_prefix", "extension"]  # extension: a later deadline, ISO 8601


def path(course: Course) -> pathlib.Path:
    return course.path(ROSTER_FILE)


def _unquote(value: str) -> str:
    """Undo csvsafe's leading quote on the way back in."""
    return value[1:] if value.startswith("'") and value[1:2] in csvsafe.FORMULA_STARTS else value


Rows = Mapping[tuple[str, str], Mapping[str, str]]
RACY_SECONDS = 2.0                  # a file changed this recently may change again within its timestamps' tick


def load(course: Course) -> dict[tuple[str, str], dict]:
    """(student id, assignment) -> row; empty when nothing was collected yet. A copy the caller may change."""
    return {key: dict(row) for key, row in rows(course).items()}


def rows(course: Course) -> Rows:
    """The roster as load() reads it, read-only: parsed again only when the file changed (a portal in a rush reads
    it for every page and status, and a class's roster takes ~20 ms to parse)."""
    return _cache.rows(path(course))


def save(course: Course, rows: Mapping[tuple[str, str], Mapping]) -> pathlib.Path:
    """Write the roster whole, atomically (a reader never sees half a file). What load() will read of it is kept, and
    the line of a row unchanged since the last write is not made again (the portal saves once a job)."""
    file = path(course)
    known = _cache.known(file)
    lines = {}
    for key in sorted(rows):
        row, kept = rows[key], known.get(key)
        # the very row read back (rows() hands out the kept rows) needs no comparing: ~1 us a row, 2,000 a store
        lines[key] = kept if kept is not None and (kept[0] is row or kept[0] == row) else _line(row)
    written = write_replacing(file, (csvsafe.line(FIELDS) + "".join([text for _, text in lines.values()])).encode())
    signature = _signature(written)
    _cache.written(file, signature, lines)
    return file


def _line(row: Mapping) -> tuple[Mapping[str, str], str]:
    """(the row as load() reads it back, its line in the file): csv keeps text exactly, csvsafe's quote comes off."""
    cells = csvsafe.cells(FIELDS, row)
    return types.MappingProxyType(dict(zip(FIELDS, map(_unquote, cells), strict=True))), csvsafe.line(cells)


Made = dict[tuple[str, ...], Mapping[str, str]]     # a line's cells -> its row, read-only


def _read(data: bytes, known: Made | None = None) -> tuple[dict[tuple[str, str], Mapping[str, str]], Made]:
    """The rows of a roster file's bytes, and each line's cells with its row; `known`: the rows of an earlier read,
    reused for a line of the same cells (a roster the portal rewrites for each store changes a row or two: making its
    2,000 rows again was most of a read)."""
    known, made = known or {}, {}
    with io.TextIOWrapper(io.BytesIO(data), newline="") as src:         # decoded as open() decodes the file
        lines = csv.reader(src)
        if next(lines, None) != FIELDS:              # an older or hand-made file: by its own column names
            src.seek(0)
            read = [{k: _unquote(v or "") for k, v in row.items() if k in FIELDS} for row in csv.DictReader(src)]
            return {(r["student_id"], r["assignment"]): types.MappingProxyType(r) for r in read}, made
        for cells in lines:
            if not cells:                            # a blank line, as DictReader skips it
                continue
            key = tuple(cells)
            row = known.get(key)
            if row is None:
                row = types.MappingProxyType({k: _unquote(cells[i]) if i < len(cells) else ""    # short: as DictReader
                                              for i, k in enumerate(FIELDS)})
            made[key] = row
    return {(r["student_id"], r["assignment"]): r for r in made.values()}, made


def _signature(found: os.stat_result) -> tuple:
    return found.st_ino, found.st_size, found.st_mtime_ns


class _Cache:
    """The last rosters read or written per file, by the file's signature (inode, size, modification time: save()
    replaces the file, so each write is a new inode). A file changed within RACY_SECONDS of being parsed is read
    again next time, as its time may not show a second change in the same tick (a writer that is not save()), and
    parsed again only if its bytes changed: in a rush the portal's graders rewrite it every few tenths of a second,
    and each page parsed a class's roster again (a 2,000-row parse is ~5 ms; comparing its bytes, ~0.1)."""
    KEEP = 4                          # signatures kept per file: a reader of the file just replaced finds its own

    def __init__(self):
        self.lock = threading.Lock()
        self.kept: dict[pathlib.Path, dict[tuple, tuple[Rows, bool]]] = {}   # file -> signature -> (rows, trusted)
        self.lines: dict[pathlib.Path, dict] = {}     # file -> {key: (row as read back, its line)}, last write
        self.made: dict[pathlib.Path, Made] = {}      # file -> its lines' cells and rows, last read
        self.parsed: dict[pathlib.Path, tuple[bytes, Rows]] = {}   # file -> the bytes last parsed, their rows

    def rows(self, file: pathlib.Path) -> Rows:
        try:
            signature = _signature(file.stat())
        except FileNotFoundError:
            return types.MappingProxyType({})
        with self.lock:
            kept = self.kept.get(file, {}).get(signature)
        if kept is not None and kept[1]:
            return kept[0]
        data = file.read_bytes()
        with self.lock:
            known, last = self.made.get(file), self.parsed.get(file)
        if last is not None and last[0] == data:      # read again (recently changed), the same bytes: the same rows
            read = last[1]
        else:
            found, made = _read(data, known)
            read = types.MappingProxyType(found)
            with self.lock:
                self.made[file], self.parsed[file] = made, (data, read)
        after = file.stat()
        if _signature(after) == signature:            # not replaced while it was read
            self._keep(file, signature, read, time.time() - after.st_mtime_ns / 1e9 > RACY_SECONDS)
        return read

    def known(self, file: pathlib.Path) -> dict:
        """{key: (row as read back, its line)} of the last write, for rows saved again unchanged."""
        with self.lock:
            return self.lines.get(file, {})

    def written(self, file: pathlib.Path, signature: tuple, lines: dict) -> None:
        read = {(row["student_id"], row["assignment"]): row for row, _ in lines.values()}     # as load() reads it
        self._keep(file, signature, types.MappingProxyType(read), True)
        with self.lock:
            self.lines[file] = lines

    def _keep(self, file: pathlib.Path, signature: tuple, read: Rows, trusted: bool) -> None:
        with self.lock:
            kept = self.kept.setdefault(file, {})
            if not kept.get(signature, (None, False))[1]:          # never replace what a write knows
                kept[signature] = (read, trusted)
            while len(kept) > self.KEEP:
                del kept[next(iter(kept))]


_cache = _Cache()
