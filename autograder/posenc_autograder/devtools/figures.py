"""The benchmarks' figures, written by the benchmarks, read by the README: never typed in by hand.

A benchmark ends with `publish(course_root, name, text)`: its figures (a Markdown table and the line that says when,
where and at what load they were measured) go to `<name>.md` in FIGURES_DIRECTORY and into the README's block for
it, the lines between `<!-- figures: <name> -->` and `<!-- end figures -->`. tests/devtools/test_figures.py holds the
README to its files, so a hand-edited figure fails the suite.
"""
from __future__ import annotations

import os
import pathlib
import re
import time

FIGURES_DIRECTORY = "autograder/figures"
README = "README.md"
BLOCK = re.compile(r"(?P<open><!-- figures: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- end figures -->)", re.S)


def figures_file(course_root: pathlib.Path, name: str) -> pathlib.Path:
    return course_root / FIGURES_DIRECTORY / f"{name}.md"


def provenance(started: float, load_at_start: float) -> str:
    """When and where: the date, the machine's cores and the load average at the start and now."""
    return (f"Measured by `make {{name}}` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(started))}, "
            f"{os.cpu_count()} cores, load average {load_at_start:.1f} at the start and "
            f"{os.getloadavg()[0]:.1f} at the end.")


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows]) + "\n"


def blocks(text: str) -> dict[str, str]:
    """name -> body of each figures block of a README's text."""
    return {match["name"]: match["body"] for match in BLOCK.finditer(text)}


def with_figures(text: str, figures: dict[str, str]) -> str:
    """The README's text with each block whose name `figures` holds replaced by those figures; the rest untouched."""
    def body(match: re.Match) -> str:
        new = figures.get(match["name"], match["body"])
        return match["open"] + new + match["close"]
    return BLOCK.sub(body, text)


def written_figures(course_root: pathlib.Path) -> dict[str, str]:
    return {path.stem: path.read_text() for path in sorted((course_root / FIGURES_DIRECTORY).glob("*.md"))}


def publish(course_root: pathlib.Path, name: str, text: str) -> pathlib.Path:
    """Write a benchmark's figures to its file and into the README's block of that name (if the README has one)."""
    path = figures_file(course_root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    readme = course_root / README
    if readme.is_file():
        readme.write_text(with_figures(readme.read_text(), {name: text}))
    return path
