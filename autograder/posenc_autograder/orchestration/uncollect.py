"""`make uncollect STUDENT=... [ASSIGNMENT=...]` or `make uncollect ZIP=...`: undo a collect.

Removes, for each (student, assignment) named (or every one a zip brought in, by its roster rows): the
submission in submitted/, the roster row, the gradebook's submission (nbgrader export stops listing it),
autograded/ (result record included), feedback/, the integrity evidence; then the class files (grades,
LMS files, run report, dashboard) are written again without them. Says what it removed.
"""
from __future__ import annotations

import pathlib
import shutil
import sys

from nbgrader.api import MissingEntry

from posenc_autograder import words
from posenc_autograder.course import GRADEBOOK, Course, course_for_command
from posenc_autograder.intake import roster
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.orchestration.class_files import rebuild_class_files
from posenc_autograder.records import evidence, gradebook


def targets(course: Course, student: str | None, assignment: str | None, zip_name: str | None) -> list[tuple[str, str]]:
    """(student, assignment) pairs to remove: those the roster or submitted/ knows."""
    rows = roster.load(course)
    if zip_name:
        return sorted(k for k, row in rows.items() if row["source_zip"] == pathlib.Path(zip_name).name
                      and (assignment is None or k[1] == assignment))
    folders = {(student, p.name) for p in (course.submitted / student).glob("*") if p.is_dir()}
    return sorted(k for k in set(rows) | folders if k[0] == student and (assignment is None or k[1] == assignment))


def _remove_tree(path: pathlib.Path, removed: list[str], course: Course) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    else:
        return
    removed.append(str(path.relative_to(course.root)))


def _prune(folder: pathlib.Path) -> None:
    """A student's folder left empty goes too (nbgrader would list the student again)."""
    if folder.is_dir() and not folder.is_symlink() and not any(folder.iterdir()):
        folder.rmdir()


def _remove_from_gradebook(course: Course, student: str, assignment: str) -> list[str]:
    """The submission, and the student once they have none left (`nbgrader export` lists every student)."""
    removed = []
    with gradebook.open_gradebook(course) as gb:
        try:
            gb.remove_submission(assignment, student)
            removed.append(f"gradebook: the submission of {student} / {assignment}")
            if not gb.find_student(student).submissions:
                gb.remove_student(student)
                removed.append(f"gradebook: {student}, who has no other submission")
        except MissingEntry:
            pass
    return removed


def uncollect(course: Course, pairs: list[tuple[str, str]]) -> list[str]:
    """Remove every trace of each (student, assignment); what was removed, one line each."""
    removed: list[str] = []
    rows = roster.load(course)
    for student, assignment in pairs:
        for root in (course.submitted, course.autograded, course.feedback):
            _remove_tree(root / student / assignment, removed, course)
            _prune(root / student)
        for notebook in course.notebooks(assignment):
            _remove_tree(evidence.folder(course, assignment, notebook) / f"{student}{evidence.SUFFIX}", removed, course)
        if rows.pop((student, assignment), None) is not None:
            removed.append(f"{roster.ROSTER_FILE}: the row of {student} / {assignment}")
        if course.path(GRADEBOOK).exists() or not course.gradebook_in_course:
            removed += _remove_from_gradebook(course, student, assignment)
    roster.save(course, rows)
    if pairs:
        rebuild_class_files(course)
    return removed


def arguments(parser) -> None:
    parser.add_argument("--student", help="the student id (a folder of autograder/submitted)")
    parser.add_argument("--assignment", help="only this assignment (default: every assignment of the student)")
    parser.add_argument("--zip", help="every submission this zip brought in (by its file name, as the roster has it)")


def run_command(args) -> int:
    if bool(args.student) == bool(args.zip):
        print("say which: STUDENT=<id> [ASSIGNMENT=<name>], or ZIP=<the zip collected>", file=sys.stderr)
        return 2
    course = course_for_command(args.course, args.db_url)
    if args.student and not is_safe_id(args.student):
        print(f"'{args.student}' is not a student id", file=sys.stderr)
        return 2
    if args.assignment and args.assignment not in course.assignments():
        print(f"unknown assignment '{args.assignment}'; known: {', '.join(course.assignments())}", file=sys.stderr)
        return 2
    pairs = targets(course, args.student, args.assignment, args.zip)
    if not pairs:
        what = (f"from {args.zip}" if args.zip
                else f"of {args.student}" + (f" / {args.assignment}" if args.assignment else ""))
        print(f"Nothing collected {what}; nothing removed.", file=sys.stderr)
        return 1
    removed = uncollect(course, pairs)
    print(f"Removed {words.count(len(pairs), 'submission')}: {', '.join(f'{s} / {a}' for s, a in pairs)}")
    print("\n".join(f"  {line}" for line in removed))
    print("Grades, LMS files, the run report and the dashboard were written again without them; "
          "make integrity leaves them out of the copying report.")
    return 0

