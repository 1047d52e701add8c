"""The run report's closing lines say what was written, never an empty list."""
from posenc_autograder.course import Course
from posenc_autograder.reports import run_report
from posenc_autograder.results import GradedTest, Note, NotebookResult, NoteKind


def test_the_grades_line_names_the_lms_files_or_says_there_is_none(tmp_path):
    course = Course(tmp_path)
    course.reports.mkdir(parents=True)
    assert run_report.lms_files(course) == "no LMS import file written"
    (course.reports / "grades-canvas.csv").write_text("Student\n")
    assert run_report.lms_files(course) == f"LMS imports: {course.reports / 'grades-canvas.csv'}"


def test_an_entrys_score_is_named_the_automatic_one(tmp_path):
    """grading-report.md heads each entry with the notebook's automatic score; a student whose grade is lower after a
    manual grade and the late policy (42 automatic, 33.2 in grades.csv, the LMS files and every page) read
    '(graded, 42/42)' as if it were the grade. Its count agrees with its noun."""
    course = Course(tmp_path)
    result = NotebookResult("walker", "positional_encoding", "positional_encoding", True,
                            [GradedTest("hidden_x", "x", True, 42.0, 42.0, [])], [Note(NoteKind.OTHER, "something")])
    report = run_report.write_run_report(course, [result]).read_text()
    assert "## walker / positional_encoding / positional_encoding.ipynb (graded, automatic score 42/42)" in report
    assert "1 notebook, 1 graded" in report                                  # it said "1 notebooks"
