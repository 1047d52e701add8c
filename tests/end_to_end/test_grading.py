"""`make grade` end to end on a class of fixture submissions: exact scores, report lines, feedback."""
import csv
import json
import re

import nbformat
import pytest
from fixture_submissions import EXPECTED, FULL, SLOW_CELL_SECONDS, SLOW_CELLS, build, make_course, solved_notebook
from notebook_tools import ROOT

from posenc_autograder.checks import total_points
from posenc_autograder.course import Course
from posenc_autograder.grading.regrade import keep_higher_scores
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.records import gradebook
from posenc_autograder.results import GradedTest, NotebookResult
from posenc_autograder.settings import Limits

# Short limits, as the slow and infinite notebooks wait them out: the slow one's cells each stay a second and more
# under the cell limit, and together run past the notebook limit by three seconds.
LIMITS = Limits(cell_seconds=5, notebook_seconds=15)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    root = make_course(tmp_path_factory.mktemp("course"))
    course = Course(root)
    build(course.submitted)
    results = grade_all(course, jobs=2, limits=LIMITS, quiet=True)
    return course, {r.student: r for r in results}


def test_the_slow_notebook_is_slow_by_its_whole_not_by_a_cell():
    assert SLOW_CELL_SECONDS + 1 <= LIMITS.cell_seconds
    assert SLOW_CELL_SECONDS * SLOW_CELLS >= LIMITS.notebook_seconds + 3


def test_every_fixture_gets_its_exact_outcome(graded_class):
    course, results = graded_class
    assert set(results) == set(EXPECTED)
    outcomes = {s: (r.score, r.graded) for s, r in results.items()}
    assert outcomes == {s: (score, graded) for s, (score, graded, _) in EXPECTED.items()}


def test_report_says_what_happened_and_what_to_do(graded_class):
    """The report lists the students someone must act on, each with what to do; a student whose notes only inform
    (cells restored, read-only cells edited, output cut, a later definition graded, a renamed file) is not in it."""
    course, results = graded_class
    entries = {e["student"]: e for e in json.loads((course.reports / "grading-report.json").read_text())}
    for student, (_, _, phrases) in EXPECTED.items():
        for phrase in phrases:
            assert any(phrase in note.text for note in results[student].notes), (student, phrase)
            assert student not in entries or any(phrase in note for note in entries[student]["what_happened"])
        if student in entries:
            assert entries[student]["what_to_do"].startswith("student:")
        if EXPECTED[student][0] == FULL and student in entries:       # nothing failed: nothing to fix
            assert "failed tests" not in entries[student]["what_to_do"], student
    assert set(entries) == {"os_exit_in_cell", "os_exit_in_function", "infinite_loop", "slow_notebook", "memory_hog",
                            "syntax_error", "indentation_error", "merge_conflict", "missing"}
    ran_fine = [n for n in results["code_in_added_cell"].notes if "of your own" in n.text]
    assert not ran_fine, "a cell of the student's own that ran fine is no note"
    report = (course.reports / "grading-report.md").read_text()
    assert not re.search(r"\w\\_\w|\\[.()!+-]", report), "escapes only where Markdown would misread the text"
    assert not re.search(r"What to do: *$", report, re.M), "never an empty 'What to do:'"


def test_grades_csv_has_every_student(graded_class):
    course, _ = graded_class
    rows = {r["student"]: r for r in csv.DictReader(open(course.grades_csv))}
    # an ungraded notebook's score is blank, never 0 (an LMS would record the 0)
    assert {s: r["score"] and float(r["score"]) for s, r in rows.items()} == {
        s: float(score) if graded else "" for s, (score, graded, _) in EXPECTED.items()}
    assert rows["missing"]["status"] == "not graded" and rows["correct"]["status"] == "graded"


def test_feedback_names_tests_and_hides_hidden_code(graded_class):
    course, _ = graded_class
    page = (course.feedback / "infinite_loop" / "positional_encoding" / "positional_encoding.html").read_text()
    assert "hidden_dot_product" in page and "hidden test" in page and "visible self-check" in page
    assert "ran longer than" in page
    for leak in ("BEGIN HIDDEN", "hidden_test(", "_posenc_probe", "ROTATION_OFFSETS", "default_rng"):
        assert leak not in page
    for student in EXPECTED:
        assert (course.feedback / student / "positional_encoding" / "positional_encoding.html").is_file()


def test_failed_test_feedback_explains_the_mistake(graded_class):
    course, results = graded_class
    memory = next(t for t in results["memory_hog"].tests if t.cell_id == "hidden_dot_product")
    assert "MemoryError" in memory.problems[0].text


def test_regrading_is_idempotent_and_keeps_manual_grades(graded_class):
    course, before = graded_class
    with gradebook.open_gradebook(course) as gb:
        grade = gb.find_grade("hidden_pe_values", "positional_encoding", "positional_encoding", "untouched")
        grade.manual_score = 3
        gb.db.commit()
    again = {r.student: r for r in grade_all(course, jobs=2, limits=LIMITS, quiet=True,
                                             students=["untouched", "correct"], force=True)}
    assert {s: r.score for s, r in again.items()} == {"untouched": 0, "correct": FULL}
    assert final_scores(course, "untouched", "positional_encoding") == (3.0, FULL)
    cached = {r.student: r.score for r in grade_all(course, jobs=2, limits=LIMITS, quiet=True)}
    assert cached == {s: e[0] for s, e in EXPECTED.items()}


def test_an_unchanged_file_never_loses_points():
    passed = GradedTest("hidden_x", "t", True, 2.0, 2.0, [])
    failed = GradedTest("hidden_x", "t", True, 0.0, 2.0, ["timed out"])
    previous = {"sha256": "abc", "result": {"tests": [passed.__dict__]}}
    result = NotebookResult("s", "a", "n", True, [failed], [])
    assert keep_higher_scores(result, previous, "abc").score == 2.0
    changed = NotebookResult("s", "a", "n", True, [GradedTest("hidden_x", "t", True, 0.0, 2.0, ["wrong"])], [])
    assert keep_higher_scores(changed, previous, "other").score == 0.0


def final_scores(course, student, assignment):
    with gradebook.open_gradebook(course) as gb:
        return gradebook.final_scores(gb, student, assignment)


def test_bonus_assignment_is_graded_end_to_end(tmp_path):
    course = Course(make_course(tmp_path))
    notebooks = {"solved": solved_notebook("rope_alibi"),
                 "untouched": nbformat.read(ROOT / "exercises" / "rope_alibi" / "rope_alibi.ipynb", as_version=4)}
    for student, nb in notebooks.items():
        (course.submitted / student / "rope_alibi").mkdir(parents=True)
        nbformat.write(nb, course.submitted / student / "rope_alibi" / "rope_alibi.ipynb")
    scores = {r.student: (r.score, r.max_score) for r in grade_all(course, jobs=2, limits=LIMITS, quiet=True)}
    bonus = total_points("rope_alibi")
    assert scores == {"solved": (bonus, bonus), "untouched": (0, bonus)}
