"""Find what each student handed in, and read it without trusting it."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

import nbformat

from .course import Course


@dataclasses.dataclass
class Submission:
    """One expected notebook of one student's assignment, and what was found for it."""
    student: str
    assignment: str
    notebook: str                        # the expected name, without .ipynb
    path: pathlib.Path | None            # the file graded (None: nothing usable was found)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return self.student, self.assignment, self.notebook


def discover(course: Course, assignments: list[str] | None = None,
             students: list[str] | None = None) -> list[Submission]:
    """Every (student, assignment, expected notebook) found under submitted/, in a stable order."""
    found = []
    if not course.submitted.is_dir():
        return found
    wanted = set(assignments or course.assignments())
    for student_dir in sorted(p for p in course.submitted.iterdir() if p.is_dir()):
        if students and student_dir.name not in students:
            continue
        for assignment_dir in sorted(p for p in student_dir.iterdir() if p.is_dir() and p.name in wanted):
            found.extend(_match_notebooks(course, student_dir.name, assignment_dir))
    return found


def _match_notebooks(course: Course, student: str, folder: pathlib.Path) -> list[Submission]:
    expected = course.notebooks(folder.name)
    present = {p.stem: p for p in folder.glob("*.ipynb")}
    unclaimed = sorted(set(present) - set(expected))
    result = []
    for name in expected:
        if name in present:
            result.append(Submission(student, folder.name, name, present[name]))
        elif len(unclaimed) == 1 and len([n for n in expected if n not in present]) == 1:
            other = unclaimed.pop()
            result.append(Submission(student, folder.name, name, present[other], [
                f"the notebook was renamed to '{other}.ipynb'; it was graded as '{name}.ipynb'. "
                f"Keep the original file name next time."]))
        else:
            hint = f" (found instead: {', '.join(p + '.ipynb' for p in unclaimed)})" if unclaimed else ""
            result.append(Submission(student, folder.name, name, None, [
                f"'{name}.ipynb' is missing from the submission{hint}; it was graded 0. "
                f"Submit the notebook with its original name."]))
    return result


def sha256(path: pathlib.Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class UnreadableNotebook(Exception):
    """The submission is not a notebook we can grade; the message is written for the student."""


def read_notebook(path: pathlib.Path, max_bytes: int = 20_000_000):
    """Parse a submitted notebook strictly, with a student-readable error when it cannot be."""
    size = path.stat().st_size
    if size > max_bytes:
        raise UnreadableNotebook(f"the file is {size / 1e6:.1f} MB, more than the {max_bytes / 1e6:.0f} MB "
                                 f"accepted; clear the outputs (Kernel > Restart & Clear Output) and resubmit")
    text = path.read_bytes().decode("utf-8", errors="replace")
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        hint = " It contains merge-conflict markers (<<<<<<<)." if "<<<<<<<" in text else ""
        raise UnreadableNotebook(f"the file is not valid notebook JSON (line {exc.lineno}, column {exc.colno}: "
                                 f"{exc.msg}).{hint} Open it in Jupyter, fix or re-download it, and resubmit.") from None
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises several kinds
        raise UnreadableNotebook(f"the file is JSON but not a Jupyter notebook ({type(exc).__name__}).") from None
    if not isinstance(nb.get("cells"), list):
        raise UnreadableNotebook("the notebook has no cells.")
    return nb
