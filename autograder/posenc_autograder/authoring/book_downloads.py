"""The exercise downloads of the built book, refreshed by `make release`: no student downloads an old notebook.

Each exercise page of the book (`make book`, in _build/html) offers its notebook from _sources/, where Sphinx copies
every page's source; the page itself, rendered from the notebook, shows the new text only once the book is built again.
"""
from __future__ import annotations

import os
import pathlib
import shutil

from posenc_autograder.course import Course

BOOK_HTML = "_build/html"            # where make book builds the book (the Makefile's BOOK_HTML)
SOURCES = "_sources"                 # Sphinx's copy of each page's source: an exercise page's download


def served(course: Course, notebook: pathlib.Path) -> pathlib.Path:
    """Where the built book hands out the released notebook `notebook` (exercises/<assignment>/<name>.ipynb)."""
    return course.path(BOOK_HTML) / SOURCES / notebook.relative_to(course.root)


def refresh(course: Course, notebooks: list[pathlib.Path]) -> list[str]:
    """Put each released notebook where the built book hands it out, when the book has a page for it; one line per
    download refreshed and one for what is left to `make book`. Nothing when the book was never built."""
    if not course.path(BOOK_HTML).is_dir():
        return []
    lines, unpublished = [], []
    for notebook in notebooks:
        target = served(course, notebook)
        if not target.parent.is_dir():
            unpublished.append(str(notebook.relative_to(course.root)))
            continue
        if target.is_file() and target.read_bytes() == notebook.read_bytes():
            continue
        try:
            partial = target.with_name(f".{target.name}.partial")
            shutil.copyfile(notebook, partial)
            os.replace(partial, target)
        except OSError as exc:          # the release stands; only the book's copy is left behind
            lines.append(f"book: {target.relative_to(course.root)} could not be refreshed ({exc.strerror}): it hands "
                         f"out the old notebook until make book")
            continue
        lines.append(f"book: {target.relative_to(course.root)} now hands out the new "
                     f"{notebook.relative_to(course.root)}")
    if lines or unpublished:
        lines.append("book: its exercise pages show the old text until make book (publish _build/html after "
                     "either)" + (f"; no page hands out {', '.join(unpublished)} yet (add it to _toc.yml)"
                                  if unpublished else ""))
    return lines

