"""The notes a student reads on the feedback page (reports.feedback.render): "Fix this first" as the points stand
once an instructor has set some by hand."""
from posenc_autograder.grading.fix_first import fix_this_first
from posenc_autograder.reports import feedback
from posenc_autograder.results import GradedTest, Note, NotebookResult, NoteKind, Problem

CAUSE = "sin and cos are swapped: even columns should hold sin, odd columns cos"


def swapped_everywhere() -> NotebookResult:
    """Three tests failing for one diagnosed cause, and grading's "Fix this first" naming all three."""
    tests = [GradedTest(cell_id, cell_id, True, 0.0, 2.0,
                        [Problem(f"{cell_id} is wrong. Likely cause: {CAUSE}.", CAUSE)])
             for cell_id in ("first_values", "second_values", "third_values")]
    notes = fix_this_first(tests) + [Note(NoteKind.SKIPPED_MAGIC, "the line '!pip install numpy' was not run")]
    return NotebookResult("ann", "positional_encoding", "positional_encoding", True, tests, notes)


def fix_first(page: str) -> list[str]:
    notes = page.split("What happened while grading")[1].split("<h2>Tests")[0]
    return [item.split("</li>")[0] for item in notes.split("<li>")[1:] if "Fix this first" in item]


def test_fix_this_first_names_only_the_failures_that_still_cost_points():
    result = swapped_everywhere()
    [graded] = fix_first(feedback.render(result))
    assert all(name in graded for name in ("first_values", "second_values", "third_values"))
    [restored_one] = fix_first(feedback.render(result, scores={"first_values": (2.0, True)}))
    assert "first_values" not in restored_one and "second_values" in restored_one and "third_values" in restored_one
    partly = fix_first(feedback.render(result, scores={"first_values": (1.0, True)}))    # still costs a point
    assert len(partly) == 1 and "first_values" in partly[0]
    # Two restored: the cause is behind one failure only, no root cause to fix first; the other notes stay.
    page = feedback.render(result, scores={"first_values": (2.0, True), "second_values": (2.0, True)})
    assert fix_first(page) == [] and "!pip install numpy" in page
