"""`make collect ZIP=path ASSIGNMENT=name`: an LMS zip of submissions → autograder/submitted/ (nbgrader zip_collect)."""
from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys

from .course import DOWNLOADED_DIRECTORY, Course


def collect(course: Course, archive: pathlib.Path, assignment: str) -> int:
    if assignment not in course.assignments():
        print(f"unknown assignment '{assignment}'; known: {', '.join(course.assignments())}", file=sys.stderr)
        return 2
    target = course.path(DOWNLOADED_DIRECTORY) / assignment / "archive"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(archive, target / archive.name)
    nbgrader = pathlib.Path(sys.executable).parent / "nbgrader"
    result = subprocess.run([str(nbgrader), "zip_collect", assignment, "--force"], cwd=course.root / "autograder")
    if result.returncode == 0:
        students = sorted(p.parent.parent.name for p in course.submitted.glob(f"*/{assignment}/*.ipynb"))
        print(f"{len(students)} submission(s) of '{assignment}' now in {course.submitted}: run `make grade`")
    return result.returncode


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make collect")
    parser.add_argument("zip", type=pathlib.Path)
    parser.add_argument("assignment")
    args = parser.parse_args(argv)
    return collect(Course(), args.zip.resolve(), args.assignment)


if __name__ == "__main__":
    sys.exit(main())
