"""What a student reads is data rendered by the page, true, and withheld only where it would reveal a secret.

Problems and notes are plain dataclasses (older stored results still load); a difference with no known mistake
is described by its pattern; a message is withheld only for grader text the student has not seen; the released
helpers neither write None back nor crash on an unexpected value; a part whose self-check printed failures fails;
what a student's code raises or prints is summarised in the sentence (at most 16 numbers) and kept whole, folded.
"""
import json

import nbformat
import numpy as np
import pytest
from notebook_tools import ROOT

from posenc_autograder.checks.comparison import difference_pattern
from posenc_autograder.course import grade_id
from posenc_autograder.grading import execute, pipeline
from posenc_autograder.portal.pages import visible_result
from posenc_autograder.probes.shell_runner import error_text
from posenc_autograder.reports import feedback
from posenc_autograder.results import NUMBER, GradedTest, Note, NotebookResult, NoteKind, Problem, ProblemKind


def test_the_lines_that_reproduce_a_case_are_typed_data_stored_and_read_back_as_written():
    """A failing case's lines are a results.Reproduction built in one place (checks.reproduction): each argument is
    typed (a generator by its seed, an all-zero array as np.zeros with its dtype, an array by its place), the stored
    JSON reads back equal, and a result stored when a failing call was a dict of its own still reads back as its
    one line."""
    from posenc_autograder.checks.reproduction import reading, reproduction, setting, step
    from posenc_autograder.reports.templating import snippet
    from posenc_autograder.results import InputArray, Reproduction, Seeded, Step, Zeros

    found = reproduction(step("Layer", 3, 4, rng={"default_rng": 9}, assign="layer"),
                         setting("layer.mask", np.zeros(3, dtype=np.int64)), step("layer.forward", np.ones((1, 2))),
                         reading("layer.grad"), stand_ins=("helper",))
    call = found.reproduction
    assert call.lines[0] == Step("Layer", (3, 4), {"rng": Seeded(9)}, "layer")
    assert call.lines[1].value == Zeros((3,), "int64") and call.lines[2].args == (InputArray(0, (1, 2), "float64"),)
    problem = Problem("layer.grad is wrong", call=call, inputs=[[[1.0, 1.0]]])
    again = Problem.from_json(json.loads(json.dumps(problem.to_json())))
    assert again == problem and isinstance(again.call, Reproduction)
    lines = snippet(again)["line"].splitlines()
    assert lines == ["layer = Layer(3, 4, rng=np.random.default_rng(9))", "layer.mask = np.zeros((3,), dtype=np.int64)",
                     "layer.forward(np.array([[1.0, 1.0]]))", "layer.grad"]
    namespace = {"np": np}
    exec(lines[1].replace("layer.mask", "mask"), namespace)          # noqa: S102 - the line under test
    assert namespace["mask"].dtype == np.int64
    stored = {"text": "f(3) is wrong", "inputs": [[0.5, 1.5]],
              "call": {"function": "f", "args": [3, {"input": 0, "shape": [2], "dtype": "float64"}],
                       "kwargs": {"base": 10.0}, "stand_ins": ["g"]}}
    old = Problem.from_json(stored)
    assert old.call == Reproduction((Step("f", (3, InputArray(0, (2,), "float64")), {"base": 10.0}),), ("g",))
    assert snippet(old)["line"] == "f(3, np.array([0.5, 1.5]), base=10.0)" and snippet(old)["stand_ins"] == ["g"]


def test_problems_and_notes_are_data_not_strings_and_old_results_still_load():
    problem = Problem("f(3) is wrong at [1]", cause="sign flipped", details={"where": [1], "expected": 1.0,
                                                                           "got": -1.0}, inputs=[[0.5, 1.5]])
    note = Note(NoteKind.TIMEOUT, "cell 'x' ran longer than 8 s")
    assert not isinstance(problem, str) and not isinstance(note, str)
    result = NotebookResult("ann", "a", "nb", True, [GradedTest("hidden_x", "x", True, 0.0, 1.0, [problem])], [note])
    again = NotebookResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.tests[0].problems == [problem] and again.notes == [note]
    stored_before = {"student": "ann", "assignment": "a", "notebook": "nb", "graded": True, "seconds": 1.0,
                     "action": "", "notes": ["an old note", {"kind": "timeout", "text": "t"}],
                     "tests": [{"cell_id": "hidden_x", "title": "x", "hidden": True, "points": 0.0, "max_points": 1.0,
                                "cases": None, "problems": ["old text", {"text": "with cause", "cause": "c"},
                                                            "... and 2 more case(s) like these"]}]}
    old = NotebookResult.from_json(stored_before)
    assert [p.text for p in old.tests[0].problems] == ["old text", "with cause", "... and 2 more case(s) like these"]
    assert old.tests[0].problems[1].cause == "c" and old.tests[0].problems[2].kind == ProblemKind.MORE
    assert [n.kind for n in old.notes] == [NoteKind.OTHER, NoteKind.TIMEOUT]


def test_the_portal_hides_inputs_by_field_and_the_page_shows_them_folded():
    problem = Problem("forward(X) is wrong at [0, 1]", inputs=[[[0.123456789, 2.0, 3.0, 4.0, 5.0]]])
    result = NotebookResult("ann", "a", "nb", True, [GradedTest("hidden_x", "x", True, 0.0, 1.0, [problem])], [])
    hidden = visible_result(result, "diagnoses", inputs=False)
    assert hidden.tests[0].problems[0].inputs is None and hidden.tests[0].problems[0].text == problem.text
    page = feedback.render(result)
    assert "shape (1, 5) float64, [0.1235, 2, 3, 4, ...]" in page and "<details>" in page
    assert "np.array([[0.123456789, 2.0, 3.0, 4.0, 5.0]])" in page


@pytest.mark.parametrize("make, said", [
    (lambda e: e.astype(np.float32).astype(np.float64), "float32 rounding"),
    (lambda e: -e, "opposite sign"),
    (lambda e: e + 0.25, "off by the same constant, 0.25"),
    (lambda e: np.swapaxes(e, -1, -2), "transposed"),
    (lambda e: e + np.where(np.arange(e.shape[-1]) % 2 == 1, 0.5, 0.0), "every even column is right; every odd one"),
    (lambda e: np.concatenate([e[:3], e[3:] + 1.0]), "every row from row 3 on is off; the rows before it are right"),
])
def test_a_difference_with_no_known_mistake_is_described_by_its_pattern(make, said):
    expected = np.random.default_rng(1).normal(size=(6, 8))
    assert said in difference_pattern(make(expected), expected, 1e-9)


def test_a_single_right_row_or_column_at_the_start_is_not_a_pattern():
    """Row 0 of a causal attention, or the column of frequency base**0 = 1, is right for almost any wrong answer:
    saying so tells the student nothing."""
    expected = np.random.default_rng(3).normal(size=(6, 8))
    assert difference_pattern(np.concatenate([expected[:1], expected[1:] + 1.0]), expected, 1e-9) is None
    columns = expected.copy()
    columns[:, 1:] *= np.random.default_rng(4).uniform(1.5, 2.5, size=(6, 7))
    assert difference_pattern(columns, expected, 1e-9) is None


def test_a_few_wrong_rows_are_named_before_a_column_pattern():
    """Only the global layers' rows wrong (and their column 0 right, as base**0 is 1 for any base): the rows."""
    expected = np.random.default_rng(5).uniform(1, 2, size=(12, 8))
    actual = expected.copy()
    actual[[5, 11], 1:] *= 3.0
    assert difference_pattern(actual, expected, 1e-9) == "only rows 5 and 11 are off; every other row is right"


def test_a_pattern_is_not_called_a_cause_and_no_match_is_said_plainly():
    from posenc_autograder.checks.comparison import LIKELY_CAUSE, NO_KNOWN_MISTAKE, compare, said_unexplained
    expected = np.random.default_rng(6).normal(size=(6, 8))
    patterned = compare({"value": -expected}, expected, "f()", 1e-9)
    assert LIKELY_CAUSE not in patterned and "No known mistake matches; the difference: every entry" in patterned
    assert patterned.pattern and patterned.cause
    unexplained = compare({"value": np.random.default_rng(7).normal(size=(6, 8))}, expected, "f()", 1e-9)
    assert unexplained.cause is None and NO_KNOWN_MISTAKE not in unexplained
    said = said_unexplained([unexplained])
    assert said[0].endswith(f"{NO_KNOWN_MISTAKE}.") and said[0].details == unexplained.details
    assert said_unexplained([patterned, unexplained]) == [patterned, unexplained]   # one named: nothing added


def test_no_pattern_is_claimed_for_an_unstructured_difference():
    rng = np.random.default_rng(2)
    assert difference_pattern(rng.normal(size=(6, 8)), rng.normal(size=(6, 8)), 1e-9) is None


def test_only_secrets_are_withheld():
    grader = execute.code_only("def probe(ns, data):\n    fn = ns['sinusoidal_positional_encoding']\n"
                               "    return attempt(fn, data['seq_len'], data['secret_offset_for_all'])\n")
    public = "def sinusoidal_positional_encoding(seq_len, d_model):\n    ...\nfn = ns['sinusoidal_positional_encoding']"
    secrets = execute.secret_windows(grader, public)
    plain = "TypeError: sinusoidal_positional_encoding() missing 1 required positional argument: 'base'"
    assert execute.short_message(plain, secrets) == plain
    assert "withheld" in execute.short_message("return attempt(fn, data['seq_len'], data['secret_offset_for_all'])",
                                               secrets)
    assert execute.short_message("fn = ns['sinusoidal_positional_encoding'] failed", secrets).endswith("failed")


def helpers(assignment: str) -> dict:
    """The released notebook's imports and self-check helpers, run as a student's kernel runs them."""
    nb = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    ns: dict = {}
    for cell in nb.cells:
        if grade_id(cell) in ("imports", "self_check_helpers"):
            exec(compile(cell.source, grade_id(cell), "exec"), ns)  # noqa: S102 - the course's own cells
    return ns


def test_given_never_writes_none_back():
    ns = helpers("positional_encoding")
    ns.pop("self_attention", None)
    with ns["self_check"].given(self_attention=lambda *a: "reference"):
        assert ns["self_attention"]() == "reference"
    assert "self_attention" not in ns          # was undefined, stays undefined (was set to None)


def test_an_unexpected_ntk_base_is_reported_not_crashed_on():
    checks = helpers("context_extension")["self_check"]
    with pytest.raises(AssertionError) as failure:
        checks.close(123.0, 10000.0 * 4.0 ** (64 / 62), "ntk_scaled_base(10000.0, 4.0, 64)",
                     checks.ntk_mistakes(10000.0, 4.0, 64))
    assert "expected" in str(failure.value) and "got 123" in str(failure.value)
    with pytest.raises(AssertionError, match="d / \\(d - 1\\)"):
        checks.close(10000.0 * 4.0 ** (64 / 63), 10000.0 * 4.0 ** (64 / 62), "ntk",
                     checks.ntk_mistakes(10000.0, 4.0, 64))


def test_a_part_whose_self_check_printed_failures_fails_its_row():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("check_part(...)", metadata={"nbgrader": {
        "grade": True, "grade_id": "test_pe_visible", "points": 0}})])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        "FAILED (Part 1: the table):\nrow 0: expected 0, got 1\n\nPart 1: the table: 1 problem(s) above\n"))]
    errors = execute.visible_cell_errors(nb, set())
    problem = pipeline.visible_problem(errors["test_pe_visible"])
    assert problem.kind == ProblemKind.SELF_CHECK and "row 0: expected 0, got 1" in problem.text
    assert "problem(s) above" not in problem.text


def test_a_self_check_that_passed_is_not_failed_by_a_students_print_that_looks_like_a_failure():
    """A student's function printed 'FAILED (Part 1: the table): ...' while its check ran, and the check's last line
    said every visible check passes: the row said "failed", "your self-check reported: FAILED ... all visible checks
    pass" (fails on the old code); it passes, as the notebook said."""
    from posenc_autograder.grading.execute import SELF_CHECK_PASSED
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("check_part(...)", metadata={"nbgrader": {
        "grade": True, "grade_id": "test_pe_visible", "points": 0}})])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=(
        "FAILED (Part 1: the table): the grader is wrong\nFAILED (Part 1: the table): the grader is wrong\n"
        "Part 1: the table: all visible checks pass\n"))]
    assert execute.visible_cell_errors(nb, set()) == {}
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text=(       # a cell checking two parts
        "FAILED (Part 4: attention):\nweights: expected 0.3, got 0.5\n\nPart 4: attention: 1 problem(s) above\n"
        "Part 4: encode_and_attend: all visible checks pass\n"))]
    assert "expected 0.3, got 0.5" in execute.visible_cell_errors(nb, set())["test_pe_visible"]["text"]
    printed = f": {{'{SELF_CHECK_PASSED.removeprefix(': ')}' if not failures"       # check_part's f-string
    for assignment in ("positional_encoding", "rope_alibi", "relative_positions", "context_extension"):
        assert printed in (ROOT / "solutions" / assignment / f"{assignment}.ipynb").read_text(), assignment


def prose_numbers(text: str) -> int:
    return len(NUMBER.findall(text))


def test_what_a_students_code_raises_is_summarised_in_the_sentence_and_kept_whole_in_a_fold():
    """An answer cell that defined its function, then raised with a 640-number array as its message: the note says so
    (the line survives the cap on the message), its sentence holds at most 16 numbers, and the page folds the whole
    message; a visible self-check's many failures are summarised the same way."""
    nb = nbformat.read(ROOT / "solutions" / "positional_encoding" / "positional_encoding.ipynb", as_version=4)
    cell = next(c for c in nb.cells if grade_id(c) == "sinusoidal_positional_encoding")
    cell.source += "\n\nmine = np.arange(640.0).reshape(40, 16)\nassert (mine == 0).all(), mine\n"
    try:
        exec(compile(cell.source, "<cell>", "exec"), {"np": np})          # noqa: S102 - the course's own cell
    except AssertionError as error:
        evalue = error_text(error)
    cell.outputs = [nbformat.v4.new_output("error", ename="AssertionError", evalue=evalue[:1000], traceback=[])]
    [error] = pipeline.answer_cell_errors(nbformat.writes(nb), "positional_encoding")
    assert error.defined and error.line == len(cell.source.splitlines())
    [note] = pipeline.raised_after_defining_notes([error])
    assert prose_numbers(note.text) <= 16 and "[" in note.text and "numbers]" in note.text, note.text
    assert note.quoted.startswith("AssertionError: [[") and prose_numbers(note.quoted) > 100
    page = feedback.render(NotebookResult("ann", "positional_encoding", "nb", True, [], [note]))
    assert '<details><summary>the whole message</summary><pre class="quoted">AssertionError: [[' in page
    failures = "\n".join(f"Part {i}: f({i}, {i + 1}): at index ({i},) expected {i}.5, got {i}.25" for i in range(9))
    said = execute.student_message(failures)
    assert prose_numbers(said["text"]) <= 16 < prose_numbers(failures) and said["quoted"] == failures
    assert said["text"].endswith(" ...")
    problem = pipeline.visible_problem({"ename": None, **said})
    assert problem.quoted == failures and prose_numbers(problem.text) <= 16


def test_a_pattern_never_takes_a_sentence_past_its_numbers():
    """Rows named one by one are counted instead when the sentence would hold more than 16 numbers."""
    from posenc_autograder.checks.comparison import with_pattern
    from posenc_autograder.results import NUMBER, PROSE_NUMBERS
    problem = ("layer_rotation_angles(16, 6, 3, 10000, 100000, 4, 512, 200) is wrong at [2, 1]: expected 11.8, got "
               "15.7 (14 of 48 entries off by more than 2e-08)")
    said = with_pattern(problem, "only rows 2 and 5 are off; every other row is right")
    assert len(NUMBER.findall(said)) <= PROSE_NUMBERS and "only 2 rows are off" in said, said
    assert said.cause == "only rows 2 and 5 are off; every other row is right"
    assert "only rows 1 and 3 are off" in with_pattern("f() is wrong", "only rows 1 and 3 are off; every other row is "
                                                                        "right")
