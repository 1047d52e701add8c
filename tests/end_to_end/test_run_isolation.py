"""A grader failure on one submission costs that submission only.

The judge and the preparation are made to fail for one student, as a hostile notebook that found a
bug in them would; the run must finish, grade the others, and store a 'not graded' result with
feedback for that student.
"""
import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course
from notebook_tools import ROOT

from posenc_autograder.course import Course
from posenc_autograder.grading import pipeline
from posenc_autograder.orchestration import grade
from posenc_autograder.settings import Limits

FAILING_STAGE = {"student_b": "judge", "student_c": "prepare_run"}  # one student per stage, in one run


@pytest.fixture
def course(tmp_path):
    course = Course(make_course(tmp_path / "course"))
    release = nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    for student in ("student_a", *FAILING_STAGE):
        (course.submitted / student / ASSIGNMENT).mkdir(parents=True)
        nbformat.write(release, course.submitted / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    return course


def _failing_for(stage, real):
    def step(course, sub, *args):
        if FAILING_STAGE.get(sub.student) == stage:
            raise RecursionError(f"a bug in {stage} the submission found")
        return real(course, sub, *args)
    return step


def test_a_failing_stage_costs_one_student(course, monkeypatch):
    for stage in set(FAILING_STAGE.values()):
        monkeypatch.setattr(grade, stage, _failing_for(stage, getattr(pipeline, stage)))
    results = {r.student: r for r in grade.grade_all(course, jobs=2, isolate=False,
                                                     limits=Limits(cell_seconds=10, notebook_seconds=60), quiet=True)}
    assert set(results) == {"student_a", *FAILING_STAGE}
    assert results["student_a"].graded
    for student in FAILING_STAGE:
        assert not results[student].graded
        assert any("RecursionError" in note.text for note in results[student].notes)
        assert (course.feedback / student / ASSIGNMENT / f"{NOTEBOOK}.html").is_file()
    assert (course.reports / "grading-report.md").read_text().count("RecursionError") == len(FAILING_STAGE)
