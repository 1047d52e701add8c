"""The notes a student reads on the feedback page (reports.feedback.render): "Fix this first" as the points stand
once an instructor has set some by hand; code quoted in backticks set as code, escaped (the dashboard too); the notes
the portal's pass-or-fail view withholds."""
from fixture_submissions import make_course

from posenc_autograder.course import Course
from posenc_autograder.grading.fix_first import fix_this_first
from posenc_autograder.reports import dashboard, feedback
from posenc_autograder.results import SEE_FIX_FIRST, GradedTest, Note, NotebookResult, NoteKind, Problem, ProblemKind

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


HOSTILE = "line 1 of cell 3, `<script>alert(1)</script>`, was skipped: `!pip` and a lone ` stay as written"


def test_code_a_note_quotes_in_backticks_is_set_as_code_escaped_first(tmp_path):
    """The feedback page and the dashboard: a backticked span is <code> with its text escaped (it can be the
    student's own), never markup of its own."""
    result = swapped_everywhere()
    result.notes.append(Note(NoteKind.SKIPPED_MAGIC, HOSTILE))
    course = Course(make_course(tmp_path / "course"))
    result.notes.append(Note(NoteKind.OWN_CELL_RAISED, "cell 4, a cell of your own, raised `KeyError: 'x'`"))
    for page in (feedback.render(result), dashboard.render(course, [result])):
        assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in page and "<script>" not in page
        assert "<code>!pip</code> and a lone ` stay as written" in page
        assert "`" not in page.split("lone")[0].split("line 1 of cell 3")[1]



def test_code_a_problem_quotes_in_backticks_is_set_as_code_escaped_as_a_notes_is(tmp_path):
    """A failed test's sentence on the feedback page and as the dashboard's example of its mistake: a backticked
    span is <code> as in a note (one macro renders both), its text escaped, never markup of its own."""
    said = "`yarn_frequencies` is not defined; your `<script>` stays text"
    result = NotebookResult("ann", "positional_encoding", "positional_encoding", True,
                            [GradedTest("first_values", "first_values", True, 0.0, 2.0, [Problem(said, CAUSE)])], [])
    course = Course(make_course(tmp_path / "course"))
    for page in (feedback.render(result), dashboard.render(course, [result])):
        assert "<code>yarn_frequencies</code> is not defined; your <code>&lt;script&gt;</code> stays text" in page
        assert "`yarn_frequencies`" not in page and "<script>" not in page


def test_notes_are_in_the_order_of_the_cells_they_are_about():
    """A student reads the notebook top to bottom: cell 8's note after cell 6's whatever their kinds, a note about no
    cell and "Fix this first" where they were; stored and read back with its cell."""
    result = swapped_everywhere()
    result.notes[1:] = [Note(NoteKind.OWN_CELL_RAISED, "cell 9 raised", cell=8),
                        Note(NoteKind.TIMEOUT, "the notebook reached its total time limit"),
                        Note(NoteKind.SKIPPED_MAGIC, "cell 7 skipped a magic", cell=6),
                        Note(NoteKind.BROKEN_CELL, "Fix this first: the answer cell in cell 12 did not run", cell=11)]
    result = NotebookResult.from_json(result.to_json())
    page = feedback.render(result)
    said = ["Fix this first: sin", "cell 7 skipped", "total time limit", "cell 9 raised", "Fix this first: the answer"]
    assert [page.index(text) for text in said] == sorted(page.index(text) for text in said)


def broken_cell_result() -> NotebookResult:
    """The answer cell 'pe' did not run: its two hidden tests are not judged for it, a visible self-check (no points)
    could not call its function, and the cell's "Fix this first" note names that cause."""
    cause = "the answer cell 'pe' did not run (SyntaxError: invalid syntax (line 3))"
    not_judged = Problem(f"not judged: {cause}{SEE_FIX_FIRST}", cause, ProblemKind.NOT_JUDGED)
    tests = [GradedTest("pe_values", "values", True, 0.0, 2.0, [not_judged]),
             GradedTest("pe_shapes", "shapes", True, 0.0, 1.0, [not_judged]),
             GradedTest("pe_visible", "self-check", False, 0.0, 0.0, [not_judged])]
    notes = [Note(NoteKind.BROKEN_CELL, f"Fix this first: {cause}, so every test of its functions fails", cell=4,
                  cause=cause), Note(NoteKind.SKIPPED_MAGIC, "the line '!pip install numpy' was not run", cell=6)]
    return NotebookResult.from_json(NotebookResult("ann", "a", "nb", True, tests, notes).to_json())


def test_a_cell_that_did_not_run_is_said_only_while_a_test_it_failed_costs_points():
    """An instructor who restores by hand every test a broken answer cell failed (make feedback after formgrader):
    the page no longer says to fix the cell first, nor points the restored tests to that note (it said both, a
    cost that no longer costs anything). While one such test still costs a point, both stay."""
    result = broken_cell_result()
    assert len(fix_first(feedback.render(result))) == 1 and "see &#34;Fix this first&#34; above" in feedback.render(
        result)
    partly = feedback.render(result, scores={"pe_values": (2.0, True)})
    assert len(fix_first(partly)) == 1 and partly.count("see &#34;Fix this first&#34; above") == 3
    restored = feedback.render(result, scores={"pe_values": (2.0, True), "pe_shapes": (1.0, True)})
    assert fix_first(restored) == [] and "Fix this first" not in restored
    assert restored.count("not judged: the answer cell &#39;pe&#39; did not run") == 3
    assert "!pip install numpy" in restored


def test_a_cell_note_stored_before_notes_had_causes_is_said_as_the_points_stand_without_a_regrade():
    """A result stored before notes had causes (its note without "cause"; its tests' problems had theirs): read back,
    the note has the cause its sentence states, so make feedback after formgrader no longer says to fix a cell every
    test of which the instructor restored (the note stayed until the notebook was graded again: fails on the old
    code). A note whose sentence states no cause of its tests keeps none, and is said as before."""
    stored = broken_cell_result().to_json()
    del stored["notes"][0]["cause"]
    result = NotebookResult.from_json(stored)
    assert result.notes[0].cause == "the answer cell 'pe' did not run (SyntaxError: invalid syntax (line 3))"
    restored = feedback.render(result, scores={"pe_values": (2.0, True), "pe_shapes": (1.0, True)})
    assert fix_first(restored) == [] and "!pip install numpy" in restored
    stored["notes"][0]["text"] = "Fix this first: the answer cell 'other' did not run (NameError), so ..."
    other = NotebookResult.from_json(stored)
    assert other.notes[0].cause is None
    assert len(fix_first(feedback.render(other, scores={"pe_values": (2.0, True), "pe_shapes": (1.0, True)}))) == 1


def test_pass_or_fail_only_withholds_the_notes_that_tell_what_the_view_withholds():
    """The portal's pass-or-fail view withholds diagnoses (and, without points, scores): a note that tells one of
    them (NoteKind.tells) is withheld with it; a note of what the notebook did when it ran (a cell that did not
    run) is the student's own and stays, in every view."""
    from posenc_autograder.portal.pages import visible_result
    result = broken_cell_result()
    result.notes += [Note(NoteKind.FIX_FIRST, "Fix this first: sin and cos are swapped"),
                     Note(NoteKind.REGRADE, "regraded with a changed grader: automatic total 3 → 5")]
    assert [n.kind for n in visible_result(result, "tests", False, points=False).notes] == [
        NoteKind.BROKEN_CELL, NoteKind.SKIPPED_MAGIC]
    assert [n.kind for n in visible_result(result, "tests", False, points=True).notes] == [
        NoteKind.BROKEN_CELL, NoteKind.SKIPPED_MAGIC, NoteKind.REGRADE]
    assert len(visible_result(result, "full", True).notes) == 4


def test_code_in_a_mistakes_name_and_in_the_pass_or_fail_views_notes_is_set_as_code_escaped(tmp_path):
    """The dashboard's name of a mistake (its cause) and the portal's pass-or-fail view's notes: a backticked span is
    <code>, escaped, as on the feedback page (they showed the backticks as written: fails on the old templates)."""
    from posenc_autograder.portal import pages
    cause = "the table was built with `np.arange(1, L + 1)`: positions start at 0, `<b>`"
    result = NotebookResult("ann", "positional_encoding", "positional_encoding", True,
                            [GradedTest("first_values", "first_values", True, 0.0, 2.0, [Problem("wrong", cause)])],
                            [Note(NoteKind.SKIPPED_MAGIC, "line 1 of cell 3, `%timeit f(1)`, was skipped")])
    mistakes = dashboard.render(Course(make_course(tmp_path / "course")), [result]).split("Parts not attempted")[0]
    assert "<code>np.arange(1, L + 1)</code>: positions start at 0, <code>&lt;b&gt;</code>" in mistakes
    assert "`" not in mistakes.split("<h2>Mistakes across the class</h2>")[1]
    shown = pages.visible_result(result, "tests", False, points=False)
    page = pages.render("pass_fail.html", signed_in=True, csrf="", title="Attempt 1", back="/", result=shown)
    assert "line 1 of cell 3, <code>%timeit f(1)</code>, was skipped" in page and "`" not in page
