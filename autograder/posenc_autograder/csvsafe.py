"""CSV files instructors open in a spreadsheet: cells a student controls must not become formulas."""
from __future__ import annotations

import csv
import io
import pathlib
from collections.abc import Mapping, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def cell(value) -> str:
    """The value as text, prefixed with ' when a spreadsheet would read it as a formula (OWASP advice).

    Numbers are left alone: a negative score is a number, not a formula.
    """
    if value.__class__ is str:                   # the common case first (a class's roster is 26,000 cells)
        return "'" + value if value.startswith(FORMULA_STARTS) else value
    if isinstance(value, (int, float)):
        return f"{value:g}" if isinstance(value, float) else str(value)
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def write(path: pathlib.Path, fieldnames: list[str], rows: list[dict], preamble: Sequence[list[str]] = ()
          ) -> pathlib.Path:
    """Write rows (every cell made safe); `preamble` rows come right after the header (Canvas wants that)."""
    return write_cells(path, fieldnames, [cells(fieldnames, row) for row in rows], preamble)


def cells(fieldnames: list[str], row: Mapping) -> list[str]:
    """One row's cells as write() writes them."""
    return [cell(row.get(name, "")) for name in fieldnames]


def line(values: list[str]) -> str:
    """One row of cells as write() writes it, its line ending included."""
    out = io.StringIO()
    csv.writer(out).writerow(values)
    return out.getvalue()


def write_cells(path: pathlib.Path, fieldnames: list[str], lines: list[list[str]], preamble: Sequence[list[str]] = ()
                ) -> pathlib.Path:
    """Write rows already made safe (cells())."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(fieldnames)
        writer.writerows([[cell(v) for v in row] for row in preamble])
        writer.writerows(lines)
    return path
