"""`make feedback`: after manual grading in formgrader, every feedback page and the class files again,
from the gradebook's current points."""
from __future__ import annotations

import pathlib
import sys

from posenc_autograder import words
from posenc_autograder.course import Course, course_for_command
from posenc_autograder.intake import lms
from posenc_autograder.orchestration.class_files import rebuild_class_files
from posenc_autograder.progress import Progress
from posenc_autograder.records import gradebook, graded, results_store
from posenc_autograder.reports import feedback, late_policy, lms_bundles, roster_check


def rebuild(course: Course, stream=None) -> list[pathlib.Path]:
    """Every feedback page again, with the gradebook's current points (manual grades included)."""
    written = []
    results = results_store.stored_results(course)
    progress = Progress(len(results), stream=stream)
    page = feedback.page_writer(course, late_policy.Deadlines(course))
    with gradebook.open_gradebook(course) as gb:
        for result in results:
            key = (result.student, result.assignment, result.notebook)
            written.append(page(graded.Stored(result, gradebook.cell_scores(gb, *key), gradebook.comments(gb, *key))))
            progress.step(f"{result.student}/{result.assignment}")
    return written


def run_command(args) -> int:
    course = course_for_command(args.course, args.db_url)
    written = rebuild(course, stream=sys.stderr)
    print(f"{words.count(len(written), 'feedback page')} rebuilt from the gradebook in "
          f"{course.feedback}/<student>/<assignment>/; `nbgrader release_feedback <assignment>` sends them")
    print("Writing the grade files, the run report and the class dashboard ...", file=sys.stderr, flush=True)
    rebuild_class_files(course)
    print(f"Grades with the manual changes: {course.grades_csv} and the LMS import files beside it")
    findings = roster_check.class_findings(course, results_store.stored_results(course))
    if findings:
        print("Left out of the LMS files until fixed (then make feedback again):")
        print("\n".join(f"  - {finding.text(course)}" for finding in findings))
    bundles = lms_bundles.write(course, results_store.stored_results(course))
    if bundles:
        ways = "; ".join(f"{m.TITLE}: {m.TAKES_BACK}" for m in lms.REGISTRY.values() if m.TAKES_BACK)
        print(f"Feedback for each LMS to take back ({ways}; others: a folder per student and mail-merge.csv):")
        print("\n".join(f"  {path}" for path in bundles))
    return 0

