"""Feedback back through the LMS: `make feedback` writes, per LMS and assignment, what that LMS takes back,
in autograder/reports/return/ (git-ignored: it holds names, ids and feedback).

- an LMS that takes a zip back (its module's return_name names each page, e.g. Canvas's "Re-upload submissions",
  Moodle's "Upload multiple feedback files in a zip"): <lms>-<assignment>.zip, each page named as that LMS reads it;
- any other (Blackboard, plain zips, a roster from before prefixes): <lms>-<assignment>/<student>/<notebook>.html
  and mail-merge.csv (student, name, LMS user, file) for a mail merge or hand-out.
"""
from __future__ import annotations

import collections
import pathlib
import shutil
import zipfile

from posenc_autograder import csvsafe
from posenc_autograder.course import Course
from posenc_autograder.intake import lms, roster
from posenc_autograder.reports import feedback
from posenc_autograder.results import NotebookResult

MAIL_MERGE_FIELDS = ["student", "name", "lms_user_id", "file"]


def folder(course: Course) -> pathlib.Path:
    return course.reports / "return"


def bundle_entry(row: dict, student: str, notebook: str) -> tuple[str, str]:
    """(bundle kind, name inside it): the LMS's own naming when it takes a zip back and the roster has the
    download's prefix; else a folder per student."""
    module = lms.REGISTRY.get(row["lms"])
    name = module.return_name(row, notebook) if module is not None and row.get("lms_prefix") else None
    if name is not None:
        return row["lms"], name
    return f"{row['lms'] or lms.FALLBACK}-folder", f"{student}/{notebook}.html"


def pages(course: Course, results: list[NotebookResult]) -> dict[tuple[str, str], dict[str, pathlib.Path]]:
    """(bundle kind, assignment) -> {name in the bundle: feedback page} for every collected student with a page."""
    people = roster.load(course)
    bundles: dict[tuple[str, str], dict[str, pathlib.Path]] = collections.defaultdict(dict)
    for result in results:
        row = people.get((result.student, result.assignment))
        page = feedback.path(course.feedback, result)
        if row is not None and page.is_file():
            kind, name = bundle_entry(row, result.student, result.notebook)
            bundles[kind, result.assignment][name] = page
    return bundles


def write(course: Course, results: list[NotebookResult]) -> list[pathlib.Path]:
    """Every bundle, written afresh (an uncollected student's feedback leaves with the old bundle)."""
    target = folder(course)
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    people = roster.load(course)
    written = []
    for (kind, assignment), files in sorted(pages(course, results).items()):
        if not kind.endswith("-folder"):             # the LMS's own zip (bundle_entry named it)
            bundle = target / f"{kind}-{assignment}.zip"
            with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, page in sorted(files.items()):
                    zf.write(page, name)
        else:
            bundle = target / f"{kind.removesuffix('-folder')}-{assignment}"
            rows = []
            for name, page in sorted(files.items()):
                (bundle / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(page, bundle / name)
                student = name.split("/", 1)[0]
                person = people.get((student, assignment), {})
                rows.append({"student": student, "name": person.get("name", ""),
                             "lms_user_id": person.get("lms_user_id", ""), "file": str(bundle / name)})
            csvsafe.write(bundle / "mail-merge.csv", MAIL_MERGE_FIELDS, rows)
        written.append(bundle)
    return written
