"""`make collect`: an LMS zip of "<student>_<notebook>.ipynb" files lands in nbgrader's submitted/ layout."""
import csv
import os
import zipfile

import nbformat
from deadline import deadline
from fixture_submissions import make_course
from lms_zips import NB, make_zip
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.course import Course
from posenc_autograder.intake.collect import collect


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


def test_grade_says_what_went_wrong_and_a_fifo_blocks_nothing(tmp_path, capsys):
    """What `make grade` says, and what a hostile folder cannot block, in one class run (no sandbox: the
    notebooks are ours): nothing collected yet, a stale release, a FIFO named timestamp.txt, and a notebook that
    cannot be graded."""
    course = Course(make_course(tmp_path / "course"))
    root = ["--course", str(course.root), "--no-sandbox", "--jobs", "1"]
    assert cli.main(["grade", *root]) == 1
    assert "nothing submitted: run make collect first" in capsys.readouterr().err
    untouched = (ROOT / "exercises" / NB / f"{NB}.ipynb").read_text()
    members = {f"alice_{NB}.ipynb": untouched, f"bob_{NB}.ipynb": "{not json <<<<<<<"}
    assert collect(course, make_zip(tmp_path / "plain.zip", members), NB) == 0
    stamp = course.submitted / "alice" / NB / "timestamp.txt"
    stamp.unlink()
    os.mkfifo(stamp)                                       # what a `cp -a` hand-in can bring
    edited = nbformat.read(course.source_notebook(NB, NB), as_version=4)
    next(c for c in edited.cells if c.cell_type == "markdown").source += "\n\nA sentence added after the release."
    nbformat.write(edited, course.source_notebook(NB, NB))             # and `make release` forgotten
    with deadline(600):
        assert cli.main(["grade", *root]) == 0          # bob's broken file is bob's, not the run's
    captured = capsys.readouterr()
    said = captured.err
    [bob_line] = [line for line in captured.out.splitlines() if line.strip().startswith("bob ")]
    assert "not graded" in bob_line
    assert not any(f"0/{n}" in bob_line for n in range(1, 200))                      # a blank score, never 0
    report = (course.reports / "grading-report.md").read_text()
    assert "not graded, no score" in report and "NOT GRADED" not in report
    assert cli.main(["feedback", "--course", str(course.root)]) == 0     # make grade && make feedback goes on
    assert "Warning: exercises/ is not what solutions/ releases now" in said
    [sentence] = [line for line in said.splitlines() if line.startswith("Not graded: ")]
    assert sentence.startswith(f"Not graded: bob, {NB}/{NB}.ipynb: ") and "not valid notebook JSON" in sentence
    grades = {r["student"]: r for r in csv.DictReader(open(course.grades_csv))}
    assert (grades["bob"]["score"], grades["bob"]["status"]) == ("", "not graded") and grades["alice"]["score"] == "0"
    page = (course.feedback / "bob" / NB / f"{NB}.html").read_text()
    assert "Not graded: the notebook could not be read" in page and "Score:" not in page
