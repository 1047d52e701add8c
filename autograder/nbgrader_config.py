"""nbgrader configuration of the course: the repository root is the course directory.

The folder layout is defined once, in posenc_autograder.course.
"""
import pathlib

from posenc_autograder import course

COURSE_ROOT = pathlib.Path(__file__).resolve().parent.parent  # this file lives in <root>/autograder/

c = get_config()  # noqa: F821 - injected by traitlets when nbgrader loads this file

c.CourseDirectory.course_id = course.COURSE_ID
c.CourseDirectory.root = str(COURSE_ROOT)
c.CourseDirectory.source_directory = course.SOURCE_DIRECTORY
c.CourseDirectory.release_directory = course.RELEASE_DIRECTORY
c.CourseDirectory.submitted_directory = course.SUBMITTED_DIRECTORY
c.CourseDirectory.autograded_directory = course.AUTOGRADED_DIRECTORY
c.CourseDirectory.feedback_directory = course.FEEDBACK_DIRECTORY
c.CourseDirectory.db_url = course.Course(COURSE_ROOT).gradebook_url

# Wherever nbgrader is started (the root, autograder/), `nbgrader export` writes here, beside the gradebook,
# never a stray grades.csv in the working directory (ours, with manual grades and LMS ids, is reports/grades.csv).
c.CsvExportPlugin.to = str(COURSE_ROOT / course.NBGRADER_EXPORT)
# nbgrader's exchange: a hub's, outside the course (`make hub-setup EXCHANGE=...` records it), else a course-local one
# for the instructor's own account (`nbgrader release_feedback` without a shared exchange). nbgrader refuses an
# exchange root that does not exist, so the course-local one is made here, private (it holds feedback).
c.Exchange.root = str(course.exchange_root(COURSE_ROOT))
if c.Exchange.root == str(COURSE_ROOT / course.EXCHANGE_DIRECTORY):
    (COURSE_ROOT / course.EXCHANGE_DIRECTORY).mkdir(mode=0o700, exist_ok=True)

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# `nbgrader zip_collect` still works on plain "<student id>_<notebook>.ipynb" zips; `make collect` reads
# every LMS's naming (posenc_autograder.intake.collect).
c.ZipCollectApp.downloaded_directory = course.DOWNLOADED_DIRECTORY
c.FileNameCollectorPlugin.named_regexp = course.SUBMISSION_FILE_PATTERN

# formgrader and generate_feedback render autograded notebooks: strip any HTML or script a student forged.
c.HTMLExporter.sanitize_html = True
# Our per-notebook result records stay in autograded/; nbgrader must not copy them into feedback/.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.result.json"]
