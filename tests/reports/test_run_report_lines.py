"""The run report: its closing lines say what was written, never an empty list; its entries are the students someone
must act on."""
import re

from posenc_autograder.course import Course
from posenc_autograder.reports import run_report
from posenc_autograder.results import Asked, GradedTest, Note, NotebookResult, NoteKind


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


def _with_notes(student: str, *kinds: NoteKind, passed: bool = True, graded: bool = True) -> NotebookResult:
    test = GradedTest("hidden_x", "x", True, 42.0 if passed else 0.0, 42.0, [] if passed else ["wrong"])
    return NotebookResult(student, "positional_encoding", "positional_encoding", graded, [test],
                          [Note(kind, f"a {kind.value} note") for kind in kinds])


def test_the_report_lists_only_students_a_note_asks_to_act_and_says_what_to_do(tmp_path):
    """A note's kind decides whether it asks someone to act (NoteKind.asks): notes that only inform (skipped magics,
    restored or edited cells, a later definition, a regrade, kept scores) put no one in grading-report.md. Before,
    any note did, with 'student: read the notes', and a regrade's or kept-scores note, added after grading, with an
    empty 'What to do:'."""
    course = Course(tmp_path)
    informing = [kind for kind in NoteKind if kind.asks is Asked.NOBODY]
    assert {NoteKind.SKIPPED_MAGIC, NoteKind.ASSEMBLY, NoteKind.EDITED_READ_ONLY, NoteKind.REGRADE,
            NoteKind.SCORES_KEPT} <= set(informing)
    results = [_with_notes("informed", *informing, passed=False), _with_notes("clean", passed=False)]
    for kind in NoteKind:
        if kind.asks is not Asked.NOBODY:
            results.append(_with_notes(f"asked_{kind.value}", NoteKind.SKIPPED_MAGIC, kind))
    later = _with_notes("regraded", passed=False)          # a regrade's and a kept-scores note come after grading
    later.notes += [Note(NoteKind.REGRADE, "regraded: hidden_x 4 → 0"), Note(NoteKind.SCORES_KEPT, "kept")]
    results += [later, _with_notes("unreadable", NoteKind.SUBMISSION, graded=False)]
    report = run_report.write_run_report(course, results).read_text()
    listed = re.findall(r"^## (\S+) /", report, re.M)
    assert sorted(listed) == sorted([f"asked_{kind.value}" for kind in NoteKind if kind.asks is not Asked.NOBODY]
                                    + ["unreadable"])
    assert not re.search(r"What to do: *$", report, re.M), "never an empty 'What to do:'"
    assert "What to do: instructor: the grader failed" in report.split("## asked_grader_error")[1]
    assert "What to do: student: submit a readable notebook" in report.split("## unreadable")[1]
    assert "What to do: student: read the notes in the feedback\n" in report.split("## asked_timeout")[1]


def test_the_visible_summary_cell_is_never_listed_as_a_check_of_its_own():
    """The summary cell fails whenever a visible check above it fails: the report lists the checks, not its internal
    id beside them (before: 'test_pe_visible, visible_summary'); failing alone, it is said in words."""
    from posenc_autograder.course import SUMMARY_CELL
    check = GradedTest("test_pe_visible", "t", False, 0.0, 0.0, ["your self-check reported: wrong"])
    summary = GradedTest(SUMMARY_CELL, "t", False, 0.0, 0.0, ["raised AssertionError"])

    def rows(*tests):
        lines = run_report.visible_failures_section([NotebookResult("ada", "positional_encoding", "nb", True,
                                                                    list(tests), [])])
        return [line for line in lines if line.startswith("- ")]
    assert rows(check, summary) == ["- ada / positional_encoding: test_pe_visible"]
    assert rows(summary) == ["- ada / positional_encoding: the last cell, which sums up the visible checks"]
