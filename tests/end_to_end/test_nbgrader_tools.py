"""nbgrader's own tools after `make collect` + `make grade`: release_feedback, export, generate_feedback,
the formgrader API, and `make feedback` after a manual grade. Sandboxing is irrelevant here (two
trusted notebooks), so the class is graded without it."""
import csv
import html
import io
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import nbformat
import pytest
from fixture_submissions import FULL, make_course, solved_notebook
from nbconvert.exporters import HTMLExporter
from notebook_tools import ROOT
from traitlets.config.loader import PyFileConfigLoader

from posenc_autograder import cli
from posenc_autograder.course import EXCHANGE_DIRECTORY, NBGRADER_EXPORT, Course, run_nbgrader
from posenc_autograder.intake.collect import collect
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.records import gradebook, nbgrader_files
from posenc_autograder.reports import dashboard, feedback
from posenc_autograder.reports import run_report as report
from posenc_autograder.settings import Limits

NB = "positional_encoding"
LIMITS = Limits(cell_seconds=8, notebook_seconds=30)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A Canvas download of two students (one solved, one untouched and late), collected and graded."""
    tmp = tmp_path_factory.mktemp("nbgrader_tools")
    course = Course(make_course(tmp / "course"))
    archive = tmp / "submissions.zip"
    untouched = (ROOT / "exercises" / NB / f"{NB}.ipynb").read_text()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"smithjohn_12345_67890_{NB}.ipynb", nbformat.writes(solved_notebook()))
        zf.writestr(f"doejane_late_23456_78901_{NB}.ipynb", untouched)
    assert collect(course, archive, NB, out=io.StringIO()) == 0
    results = {r.student: r for r in grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)}
    assert {s: r.score for s, r in results.items()} == {"smithjohn": FULL, "doejane": 0}
    return course, results, tmp


def nbgrader(course, *args):
    proc = run_nbgrader(course.root, *args, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def config(course):
    return PyFileConfigLoader("nbgrader_config.py", path=str(course.root / "autograder")).load_config()


def test_release_feedback_sends_every_page(graded):
    course, _, tmp = graded
    exchange = tmp / "exchange"
    exchange.mkdir(mode=0o777)            # as an instructor sets up nbgrader's exchange
    exchange.chmod(0o777)
    nbgrader(course, "release_feedback", NB, f"--Exchange.root={exchange}")
    released = sorted((exchange / "posenc-course" / "feedback").glob("*.html"))
    assert len(released) == 2
    pages = {p.read_text() for p in released}
    assert pages == {feedback.path(course.feedback, r).read_text() for r in graded[1].values()}


def test_export_does_not_clobber_our_grades(graded):
    course, results, _ = graded
    ours = course.grades_csv.read_bytes()
    nbgrader(course, "export")
    exported = {r["student_id"]: float(r["raw_score"])
                for r in csv.DictReader(open(course.root / "autograder" / "grades.csv")) if r["assignment"] == NB}
    assert exported == {s: r.score for s, r in results.items()}
    assert course.grades_csv.read_bytes() == ours
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO(ours.decode()))}
    assert rows["doejane"]["late"] == "yes" and rows["smithjohn"]["lms_user_id"] == "12345"


def test_formgrader_api_sees_autograded_submissions_with_times(graded):
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    course, results, _ = graded
    cfg = config(course)
    api = NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)
    for student, result in results.items():
        submission = api.get_submission(NB, student)
        assert submission["autograded"] and submission["timestamp"] is not None
        assert submission["score"] == result.score
    stamp = nbgrader_files.read_timestamp(course.submitted / "doejane" / NB)
    assert api.get_submission(NB, "doejane")["timestamp"] == stamp.isoformat()


def test_autograded_notebook_shows_diagnoses_and_only_text(graded):
    course, results, _ = graded
    nb = nbformat.read(course.autograded / "doejane" / NB / f"{NB}.ipynb", as_version=4)
    failed = next(t for t in results["doejane"].tests if t.hidden and not t.passed)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == failed.cell_id)
    shown = "".join(o.get("text", "") for o in cell.outputs)
    assert failed.problems[0].text in shown and "_posenc_probe" not in cell.source
    for c in nb.cells:
        for output in c.get("outputs", []):
            assert output.output_type in ("stream", "error")


def test_generate_feedback_keeps_the_diagnoses(graded):
    course, results, tmp = graded
    nbgrader(course, "generate_feedback", NB, "--force")
    page = (course.feedback / "doejane" / NB / f"{NB}.html").read_text()
    failed = next(t for t in results["doejane"].tests if t.hidden and not t.passed)
    assert failed.problems[0].text in html.unescape(page) and "answers recorded" not in page
    assert not list(course.feedback.rglob("*.result.json"))


def test_canvas_import_file_and_summary(graded):
    course, results, _ = graded
    rows = list(csv.reader(open(course.reports / "grades-canvas.csv")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", NB]
    assert rows[1][0].strip() == "Points Possible" and float(rows[1][5]) == FULL
    assert {r[1]: float(r[5]) for r in rows[2:]} == {"12345": results["smithjohn"].score,
                                                     "23456": results["doejane"].score}
    assert f"Class dashboard: {dashboard.path(course)}" in report.summary(course, list(results.values()))


def test_manual_grade_reaches_feedback_after_make_feedback(graded):
    course, results, _ = graded
    test = next(t for t in results["smithjohn"].tests if t.hidden)
    with gradebook.open_gradebook(course) as gb:
        grade = gb.find_grade(test.cell_id, NB, NB, "smithjohn")
        grade.manual_score = test.max_points - 1
        gb.db.commit()
    assert cli.main(["feedback", "--root", str(course.root)]) == 0
    page = (course.feedback / "smithjohn" / NB / f"{NB}.html").read_text()
    assert f"Score: {results['smithjohn'].score - 1:g} / {FULL:g}" in page and "set by your instructor" in page
    grades = {r["student"]: float(r["score"]) for r in csv.DictReader(open(course.grades_csv))}
    assert grades["smithjohn"] == results["smithjohn"].score - 1
    canvas = {r[1]: float(r[5]) for r in list(csv.reader(open(course.reports / "grades-canvas.csv")))[2:]}
    assert canvas["12345"] == results["smithjohn"].score - 1


def test_formgrader_renders_forged_html_inert(graded):
    course, _, _ = graded
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "display_data", data={"text/html": "<script>alert('forged')</script><b>bold</b>"})])])
    body, _ = HTMLExporter(config=config(course)).from_notebook_node(nb)
    assert "<script>alert('forged')" not in body and "<b>bold</b>" in body


def test_forged_outputs_leave_only_bounded_text():
    forged = [nbformat.v4.new_output("display_data", data={"text/html": "<script>x()</script>",
                                                           "application/javascript": "x()", "text/plain": "shown"}),
              {"output_type": "stream", "name": "<evil>", "text": ["a" * 30_000, "b"]},
              {"output_type": "error", "ename": "E" * 500, "evalue": "v", "traceback": ["\x1b[31mgrader source"]},
              {"output_type": "execute_result", "data": "not a dict"}, "not an output"]
    kept = nbgrader_files._plain_text(forged)
    assert [o["output_type"] for o in kept] == ["stream", "stream", "error"]
    assert kept[0]["text"] == "shown" and kept[1]["name"] == "stdout"
    assert len(kept[1]["text"]) == nbgrader_files.MAX_OUTPUT_CHARS and len(kept[2]["ename"]) == 200
    assert kept[2]["traceback"] == [] and "script" not in json.dumps(kept)


def nbgrader_at_root(course, *args):
    """nbgrader as an instructor runs it from the course root (no options: the root's nbgrader_config.py)."""
    bin_dir = pathlib.Path(sys.executable).parent
    proc = subprocess.run([str(bin_dir / "nbgrader"), *args], cwd=course.root, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_export_and_release_feedback_from_the_root(graded):
    course, results, _ = graded
    nbgrader_at_root(course, "export")
    assert not (course.root / "gradebook.db").exists() and not (course.root / "grades.csv").exists()
    exported = {r["student_id"]: float(r["raw_score"]) for r in csv.DictReader(open(course.path(NBGRADER_EXPORT)))
                if r["assignment"] == NB}
    ours = {r["student"]: float(r["score"]) for r in csv.DictReader(open(course.grades_csv))}   # manual grades too
    assert exported == ours and set(ours) == set(results)
    nbgrader_at_root(course, "release_feedback", NB)
    released = list((course.path(EXCHANGE_DIRECTORY) / "posenc-course" / "feedback").glob("*.html"))
    assert len(released) == len(results)
