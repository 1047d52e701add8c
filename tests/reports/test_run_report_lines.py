"""The run report's closing lines say what was written, never an empty list."""
from posenc_autograder.course import Course
from posenc_autograder.reports import run_report


def test_the_grades_line_names_the_lms_files_or_says_there_is_none(tmp_path):
    course = Course(tmp_path)
    course.reports.mkdir(parents=True)
    assert run_report.lms_files(course) == "no LMS import file written"
    (course.reports / "grades-canvas.csv").write_text("Student\n")
    assert run_report.lms_files(course) == f"LMS imports: {course.reports / 'grades-canvas.csv'}"
