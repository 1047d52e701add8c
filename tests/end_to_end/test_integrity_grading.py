"""`make grade` end to end on three notebooks, variants on then off (~20 s): the variants wired through grading."""
import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course, solved_notebook
from notebook_tools import grade_cells

from posenc_autograder import cli
from posenc_autograder.checks import variants
from posenc_autograder.course import Course
from posenc_autograder.integrity.report import REPORT_NAME
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.records import evidence as store
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=15, notebook_seconds=60)
STUDENTS = ("ann", "ben", "cy")


@pytest.mark.slow
def test_variants_on_and_off_grade_the_solution_fully_and_the_report_is_written(tmp_path, monkeypatch):
    course = Course(make_course(tmp_path))
    for student in STUDENTS:
        target = course.submitted / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(solved_notebook(), target)
    monkeypatch.delenv(variants.SECRET_ENV, raising=False)
    monkeypatch.setenv(variants.SWITCH_ENV, "1")
    on = {r.student: (r.score, r.max_score) for r in grade_all(course, jobs=2, limits=LIMITS, quiet=True)}
    kept = store.load_class(course, ASSIGNMENT, NOTEBOOK)
    assert cli.main(["integrity", "--course", str(course.root)]) == 0          # make integrity
    page = (course.reports / REPORT_NAME).read_text()

    monkeypatch.setenv(variants.SWITCH_ENV, "0")          # no --force: another setting is another grader
    off = {r.student: (r.score, r.max_score) for r in grade_all(course, jobs=2, limits=LIMITS, quiet=True,
                                                                 students=["ann"])}

    assert off == {"ann": on["ann"]} and on == {s: (on["ann"][1],) * 2 for s in STUDENTS}
    assert on["ann"][1] == sum(grade_cells(course.path(f"exercises/{ASSIGNMENT}/{NOTEBOOK}.ipynb")).values())
    assert course.path(variants.SECRET_FILE).exists()
    assert len({r.variant for r in kept}) == len(STUDENTS) and None not in {r.variant for r in kept}
    assert all(r.answers and not r.own_failing and "sinusoidal_positional_encoding" in r.code for r in kept)
    ann = next(r for r in kept if r.student == "ann")
    tests = {a.test for a in ann.answers}
    fixed, varied = ([c for c in tests if store.varies(c) is v] for v in (False, True))
    assert fixed and varied       # tests with the same inputs for all run once; the others again on shared inputs
    assert set(ann.own_keys) == set(varied) and not any(a.failed for a in ann.answers)
    shared_keys = {c: {k for a in ann.answers if a.test == c for k in a.keys} for c in varied}
    assert any(set(ann.own_keys[c]) != shared_keys[c] for c in varied)     # own inputs differ from the shared
    assert "Integrity report" in page and "3 students" in page
    assert [r.variant for r in store.load_class(course, ASSIGNMENT, NOTEBOOK) if r.student == "ann"] == [None]
    for student in STUDENTS:        # the shared probe cell ran, and the student sees it nowhere
        assert store.SHARED_CELL not in (course.feedback / student / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
        assert store.SHARED_CELL not in (course.autograded / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb").read_text()
