"""Everything that holds students' names, LMS ids, code, grades or feedback is ignored by
git, and what the instructor must commit is not. Paths come from the grader's own definitions."""
import subprocess

import pytest
from notebook_tools import ROOT

from posenc_autograder import course as course_paths
from posenc_autograder.course import Course
from posenc_autograder.intake import lms
from posenc_autograder.intake.roster import ROSTER_FILE
from posenc_autograder.records import evidence, results_store
from posenc_autograder.reports import lms_bundles, lms_exports

COURSE = Course(ROOT)


def relative(path) -> str:
    return str(path.relative_to(ROOT))


PRIVATE = [
    ROSTER_FILE, course_paths.GRADEBOOK, course_paths.GRADEBOOK + "-journal",
    f"{course_paths.SUBMITTED_DIRECTORY}/alice/positional_encoding/positional_encoding.ipynb",
    f"{course_paths.SUBMITTED_DIRECTORY}/alice/positional_encoding/timestamp.txt",
    relative(results_store.path(COURSE, "alice", "positional_encoding", "positional_encoding")),
    f"{course_paths.FEEDBACK_DIRECTORY}/alice/positional_encoding/positional_encoding.html",
    f"{course_paths.DOWNLOADED_DIRECTORY}/positional_encoding/alice_positional_encoding.ipynb",
    relative(COURSE.grades_csv), relative(COURSE.reports / lms.canvas.GRADE_FILE),
    relative(COURSE.reports / lms.moodle.grade_file_name("positional_encoding")),
    relative(COURSE.reports / "class.html"),
    relative(COURSE.reports / "integrity.html"), relative(COURSE.reports / "grading-report.md"),
    relative(lms_bundles.folder(COURSE) / "canvas-positional_encoding.zip"),
    relative(evidence.folder(COURSE, "positional_encoding", "positional_encoding") / f"alice{evidence.SUFFIX}"),
    "autograder/grades.csv", "gradebook.db", "grades.csv", "submissions.zip", "autograder/variant_secret",
    course_paths.DATABASE_FILE, course_paths.EXCHANGE_ROOT_FILE,
] + ([f"{course_paths.EXCHANGE_DIRECTORY}/posenc-course/feedback/x.html"]
     if hasattr(course_paths, "EXCHANGE_DIRECTORY") else [])

COMMITTED = ["autograder/nbgrader_config.py", lms_exports.LMS_SETTINGS, "autograder/release_history/x/abc.json",
             "autograder/test_plan.csv", "solutions/positional_encoding/positional_encoding.ipynb",
             "exercises/positional_encoding/positional_encoding.ipynb"]


def ignored(path: str) -> bool:
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0


@pytest.mark.parametrize("path", PRIVATE)
def test_private_paths_are_ignored_by_git(path):
    assert ignored(path), f"{path} holds student data and must be in .gitignore"


@pytest.mark.parametrize("path", COMMITTED)
def test_what_the_instructor_commits_is_not_ignored(path):
    assert not ignored(path)
