"""Nothing is dropped from the grade files silently: a roster row without a submission, a submission without a
roster row (a mistyped id), a Canvas assignment without its id in lms.toml, an unknown --student: each is said
by `make grade` and `make feedback`, with the fix."""
import csv
import io

import pytest
from fixture_submissions import make_course
from lms_zips import CANVAS, NB, make_zip, roster_rows

from posenc_autograder import cli
from posenc_autograder.course import Course
from posenc_autograder.intake.collect import collect
from posenc_autograder.intake.roster import ROSTER_FILE
from posenc_autograder.orchestration import grade
from posenc_autograder.records import gradebook, results_store
from posenc_autograder.reports import roster_check
from posenc_autograder.reports.roster_check import Gap
from posenc_autograder.results import GradedTest, NotebookResult


@pytest.fixture
def course(tmp_path):
    """A Canvas download collected and every student given a stored result; lms.toml has no ids (none copied)."""
    course = Course(make_course(tmp_path / "course"))
    assert collect(course, make_zip(tmp_path / "canvas.zip", CANVAS), NB, out=io.StringIO()) == 0
    with gradebook.open_gradebook(course) as gb:
        for student in roster_rows(course):
            gradebook.record_scores(gb, student, NB, NB, {"hidden_pe_values": 4.0})
    for student in roster_rows(course):
        results_store.save(course, NotebookResult(student, NB, NB, True, [
            GradedTest("hidden_pe_values", "values", True, 4.0, 4.0, [])], []), None, "grader")
    return course


def _mistype(course, right, wrong):
    """The instructor edits roster.csv by hand and mistypes one id."""
    file = course.path(ROSTER_FILE)
    rows = list(csv.DictReader(open(file)))
    for row in rows:
        row["student_id"] = wrong if row["student_id"] == right else row["student_id"]
    with open(file, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_a_consistent_class_has_only_the_missing_canvas_id_to_report(course):
    findings = roster_check.class_findings(course, results_store.stored_results(course))
    assert findings == [roster_check.Finding(Gap.NO_LMS_SETTING, assignment=NB, lms="canvas")]


def test_a_mistyped_roster_id_is_named_from_both_sides_with_the_likely_intended_id(course):
    student = sorted(roster_rows(course))[0]
    _mistype(course, student, student + "x")
    findings = roster_check.class_findings(course, results_store.stored_results(course))
    gaps = {(f.gap, f.student, f.closest) for f in findings}
    assert (Gap.NO_SUBMISSION, student + "x", student) in gaps
    assert (Gap.NO_ROSTER_ROW, student, student + "x") in gaps
    text = next(f for f in findings if f.gap is Gap.NO_ROSTER_ROW).text(course)
    assert f"'{student}' was graded" in text and "correct the student id in autograder/roster.csv" in text


def test_make_feedback_says_what_the_lms_files_leave_out(course, capsys):
    student = sorted(roster_rows(course))[0]
    _mistype(course, student, student + "x")
    assert cli.main(["feedback", "--course", str(course.root)]) == 0
    said = capsys.readouterr().out
    assert "Left out of the LMS files" in said and f"'{student}' was graded" in said
    assert f"did you mean '{student}'?" in said and "autograder/lms.toml" in said


def test_make_grade_says_it_too(course, capsys, monkeypatch):
    student = sorted(roster_rows(course))[0]
    _mistype(course, student, student + "x")
    monkeypatch.setattr(grade, "grade_all", lambda course, **_: results_store.stored_results(course))
    monkeypatch.setattr(grade, "warn_if_unreleased", lambda *a: None)
    assert cli.main(["grade", "--course", str(course.root), "--no-sandbox"]) == 0
    said = capsys.readouterr().err
    assert f"'{student}' was graded" in said and "Canvas will add a new column" in said


def test_an_unknown_student_stops_make_grade_before_grading_and_names_the_closest(course, capsys, monkeypatch):
    student = sorted(roster_rows(course))[0]
    monkeypatch.setattr(grade, "grade_all", lambda *a, **k: pytest.fail("graded despite the unknown student"))
    typo = student[:-1] + ("z" if student[-1] != "z" else "y")
    assert cli.main(["grade", "--course", str(course.root), "--no-sandbox", "--student", typo]) == 1
    said = capsys.readouterr().err
    assert f"no submission of '{typo}'" in said and f"did you mean '{student}'?" in said
    assert "make collect first" not in said


def test_a_student_of_the_exchange_only_is_named_with_the_fix(course):
    """nbgrader's exchange gives a roster row but no LMS id: in a class Canvas grades, the Canvas file leaves them
    out, and the instructor is told whom and what to fill in."""
    from posenc_autograder.intake import roster
    rows = roster.load(course)
    rows["hopper", NB] = {"student_id": "hopper", "assignment": NB, "lms": "exchange",
                          "submitted_at": "2026-11-22T23:30:00+00:00"}
    roster.save(course, rows)
    results_store.save(course, NotebookResult("hopper", NB, NB, True, [
        GradedTest("hidden_pe_values", "values", True, 4.0, 4.0, [])], []), None, "grader")
    (course.submitted / "hopper" / NB).mkdir(parents=True)
    findings = roster_check.class_findings(course, results_store.stored_results(course))
    found = [f for f in findings if f.student == "hopper"]
    assert [(f.gap, f.lms, f.closest) for f in found] == [(Gap.NO_LMS_ID, "exchange", "canvas")]
    text = found[0].text(course)
    assert "through the exchange only" in text and "canvas grade files leave them out" in text
    assert "lms_user_id" in text
