"""`make collect`: an LMS zip of "<student>_<notebook>.ipynb" files lands in nbgrader's submitted/ layout."""
import zipfile

from fixture_submissions import make_course
from notebook_tools import ROOT
from posenc_autograder.intake.collect import collect
from posenc_autograder.course import Course


def test_zip_from_lms_is_collected_per_student(tmp_path):
    course = Course(make_course(tmp_path / "course"))
    archive = tmp_path / "downloads.zip"
    notebook = (ROOT / "exercises" / "positional_encoding" / "positional_encoding.ipynb").read_text()
    with zipfile.ZipFile(archive, "w") as zf:
        for student in ("alice", "bob.smith"):
            zf.writestr(f"{student}_positional_encoding.ipynb", notebook)
    assert collect(course, archive, "positional_encoding") == 0
    collected = sorted(p.relative_to(course.submitted).as_posix() for p in course.submitted.rglob("*.ipynb"))
    assert collected == ["alice/positional_encoding/positional_encoding.ipynb",
                         "bob.smith/positional_encoding/positional_encoding.ipynb"]


def test_unknown_assignment_is_refused(tmp_path):
    course = Course(make_course(tmp_path / "course"))
    assert collect(course, tmp_path / "missing.zip", "no_such_assignment") == 2
