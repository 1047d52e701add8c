"""A broken answer cell is named once, with its error and line, and "Fix this first" leads with it.

For every answer cell of every assignment, a syntax error and an indentation error: the error text the shell
runner sends (probes.shell_runner.error_text) on the cell's output, then what pipeline.judge makes of it.
"""
import subprocess
import sys

import nbformat
import pytest
from notebook_tools import ROOT

from posenc_autograder.checks import REGISTRY, hidden_tests, manifest
from posenc_autograder.course import grade_id, nbgrader_meta
from posenc_autograder.grading import pipeline
from posenc_autograder.probes import helpers as probe_helpers
from posenc_autograder.probes.shell_runner import error_text
from posenc_autograder.results import GradedTest, NoteKind, Problem, ProblemKind, Reproduction, Step

ASSIGNMENTS = ("positional_encoding", "rope_alibi")
BREAKS = {"SyntaxError": lambda source: source.replace("):", ")", 1),
          "IndentationError": lambda source: source.replace("\n    ", "\n      ", 1)}


def answer_cells(assignment):
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    return [c for c in nb.cells if c.cell_type == "code" and nbgrader_meta(c).get("solution")]


def broken_notebook(assignment, cell_id, kind):
    """The solution notebook as the sandbox sends it back: the cell's error output, as the shell runner writes it."""
    nb = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if grade_id(c) == cell_id)
    try:
        compile(BREAKS[kind](cell.source), "<cell>", "exec")
    except SyntaxError as error:
        cell.outputs = [nbformat.v4.new_output("error", ename=type(error).__name__, evalue=error_text(error),
                                               traceback=[])]
    return nbformat.writes(nb), cell


@pytest.mark.parametrize("kind", sorted(BREAKS))
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_each_broken_answer_cell_is_named_once_with_its_error_and_line(assignment, kind):
    for cell in answer_cells(assignment):
        executed, _ = broken_notebook(assignment, grade_id(cell), kind)
        broken = pipeline.broken_answer_cells(executed)
        assert list(broken) == [grade_id(cell)]
        error = broken[grade_id(cell)].error
        assert error.startswith(f"{kind}: ") and "(line " in error and "<cell>" not in error, error
        [note] = pipeline.broken_cell_notes(broken)
        assert note.kind == NoteKind.BROKEN_CELL and note.text.startswith(f"Fix this first: the answer cell "
                                                                     f"'{grade_id(cell)}' did not run ({error})")


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_tests_of_a_broken_cells_functions_say_so_once(assignment):
    entries = manifest.functions(assignment)
    for cell in answer_cells(assignment):
        cell_id = grade_id(cell)
        executed, _ = broken_notebook(assignment, cell_id, "SyntaxError")
        broken = pipeline.broken_answer_cells(executed)
        for test in hidden_tests(assignment):
            failed = GradedTest(test.id, test.title, True, 0.0, test.points, ["`f` is not defined"] * 3)
            blamed = pipeline._blame_broken_cells(failed, broken)
            judged_here = any(e.cell == cell_id for e in entries if e.name in test.subjects)
            if judged_here and not test.reads_verdicts:
                [problem] = blamed.problems
                assert problem.cause == f"the answer cell '{cell_id}' did not run ({broken[cell_id].error})"
            else:
                assert blamed.problems == failed.problems
        visible = GradedTest("test_visible", "t", False, 0.0, 0.0, [pipeline.visible_problem(
            {"ename": "NameError", "text": "name 'f' is not defined"})])
        [blamed_visible] = pipeline._blame_broken_cells(visible, broken).problems
        assert f"the answer cell '{cell_id}' did not run" in blamed_visible.text


def test_every_answer_cell_defines_a_manifest_function():
    for assignment in ASSIGNMENTS:
        cells = {grade_id(c) for c in answer_cells(assignment)}
        assert cells == {e.cell for e in manifest.functions(assignment)}, assignment
        assert all(REGISTRY[t.id].subjects for t in hidden_tests(assignment))


LINE_SCRIPT = r"""
from posenc_autograder.probes.shell_runner import error_text, kernel_shell
shell = kernel_shell()
cells = ['a = 1\n\n%time b = undefined_name + a', 'a = 1\n%timeit -n 1 -r 1 undefined_name', 'x = 2\nexec("1 / 0")',
         'def f():\n    return 1 / 0\n\nf()']
print("LINES", [error_text(shell.run_cell(cell).error_in_exec).rsplit("(line ", 1)[-1] for cell in cells])
"""


def test_an_error_raised_through_a_magic_or_exec_is_said_on_the_cells_own_line(tmp_path):
    """%time runs its statement as code of its own ("<timed exec>", line 1), exec as "<string>": the line said is the
    cell's, where the student looks, not line 1 of that code."""
    out = subprocess.run([sys.executable, "-c", LINE_SCRIPT], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}).stdout
    assert "LINES ['3)', '2)', '2)', '4)']" in out, out


def test_a_cell_that_did_not_run_is_the_one_reason_its_self_checks_and_contract_cases_give():
    """The answer cell 'sinusoidal_positional_encoding' stopped at `import torch` (not installed). Its self-check,
    which could not call the function, says so (the notebook's helper, seeing its own line raise NameError, said
    "your function returned without an error. Please tell your instructor"); the contracts test's case of that
    function is not judged for the same reason (it said "keep the name and signature from the template", which the
    student had); a test not judged claims no count of cases passed (it said "0/1 cases passed"); and "Fix this
    first" is said once, by the cell's own note (it was said twice). Each fails on the old code."""
    executed, _ = broken_notebook("positional_encoding", "sinusoidal_positional_encoding", "SyntaxError")
    broken = pipeline.broken_answer_cells(executed, "positional_encoding")
    error = broken["sinusoidal_positional_encoding"].error
    cause = f"the answer cell 'sinusoidal_positional_encoding' did not run ({error})"
    printed = ("FAILED (Part 1: the table): the self-check's own code (check_small_example) raised NameError: name "
               "'sinusoidal_positional_encoding' is not defined; your function returned without an error. Please tell "
               "your instructor")
    visible = GradedTest("test_pe_visible", "t", False, 0.0, 0.0, [pipeline.visible_problem({"text": printed})])
    [said] = pipeline._blame_broken_cells(visible, broken, "positional_encoding").problems
    assert said.text == (f"your self-check could not call `sinusoidal_positional_encoding`: {cause}; "
                         f"see \"Fix this first\" above") and printed in said.quoted
    contract = Problem(probe_helpers.not_defined("sinusoidal_positional_encoding") + ". No known mistake matches",
                       call=Reproduction((Step("sinusoidal_positional_encoding", (6, 4)),)))
    other = Problem("dot_product_distance returned a list", call=Reproduction((Step("dot_product_distance", ()),)))
    contracts = REGISTRY["hidden_contracts"]
    failed = GradedTest(contracts.id, contracts.title, True, 1.0, 2.0, [contract, other], (10, 12))
    blamed = pipeline._blame_broken_cells(failed, broken)
    assert [p.text for p in blamed.problems] == [f"not judged: {cause}; see \"Fix this first\" above", other.text]
    values = REGISTRY["hidden_pe_values"]
    not_judged = pipeline._blame_broken_cells(GradedTest(values.id, values.title, True, 0.0, 4.0, ["x"], (0, 1)),
                                              broken)
    assert not_judged.cases is None and not_judged.problems[0].kind == ProblemKind.NOT_JUDGED
    tests = [pipeline._blame_broken_cells(GradedTest(t.id, t.title, True, 0.0, t.points, ["x"]), broken)
             for t in hidden_tests("positional_encoding") if t.id.startswith("hidden_pe_")]
    assert len(tests) >= 3 and pipeline.fix_this_first(tests) == []


def test_the_contract_cases_of_a_broken_cells_several_functions_are_not_judged_in_one_line():
    """The answer cell 'rope' stopped at a SyntaxError: the contracts test's cases of its functions are one cause.
    The page said "not judged: the answer cell 'rope' did not run (...)" twice, then "... and 1 more case like
    these" (fails on the old code: two equal lines); the count of the cases not shown stays as the judge gave it."""
    executed, _ = broken_notebook("rope_alibi", "rope", "SyntaxError")
    broken = pipeline.broken_answer_cells(executed, "rope_alibi")
    cause = f"the answer cell 'rope' did not run ({broken['rope'].error})"
    cases = [Problem(probe_helpers.not_defined(name), call=Reproduction((Step(name, (8,)),)))
             for name in ("rope_frequencies", "apply_rope")]
    more = Problem("... and 1 more case like these", kind=ProblemKind.MORE)
    contracts = REGISTRY["hidden_rope_alibi_contracts"]
    failed = GradedTest(contracts.id, contracts.title, True, 0.5, 2.0, [*cases, more], (2, 5))
    blamed = pipeline._blame_broken_cells(failed, broken, "rope_alibi")
    assert [p.text for p in blamed.problems] == [f"not judged: {cause}; see \"Fix this first\" above", more.text]


def magic_first(cell_id: str, first_line: str) -> str:
    """The context_extension solution run with an answer cell under a cell magic: it ran to its end (no error)."""
    nb = nbformat.read(ROOT / "solutions" / "context_extension" / "context_extension.ipynb", as_version=4)
    cell = next(c for c in nb.cells if grade_id(c) == cell_id)
    cell.source = f"{first_line}\n{cell.source}"
    return nbformat.writes(nb)


def test_an_answer_cell_under_a_cell_magic_that_keeps_nothing_is_the_one_cause_its_tests_give():
    """%%timeit on the answer cell 'yarn' runs it in a scope of its own (in Jupyter too): its functions are never
    defined. Its tests said "`yarn_frequencies` is not defined: keep the name and signature from the template" (the
    student had kept it) and the contracts test added "No known mistake matches this answer"; now "Fix this first"
    names the line and its tests are not judged for it (fails on the old code: no cell found). %%time keeps what the
    cell defines: nothing is said of it."""
    executed = magic_first("yarn", "%%timeit -n1 -r1")
    broken = pipeline.broken_answer_cells(executed, "context_extension")
    assert list(broken) == ["yarn"]
    cause = ("the answer cell 'yarn' kept nothing it defines: its first line, `%%timeit -n1 -r1`, runs it in a scope "
             "of its own (to time it), as Jupyter does")
    [note] = pipeline.broken_cell_notes(broken)
    assert note.kind == NoteKind.BROKEN_CELL and note.cause == cause
    assert note.text == f"Fix this first: {cause}, so every test of its functions fails until that line is removed"
    values = REGISTRY["hidden_yarn_frequencies"]
    failed = GradedTest(values.id, values.title, True, 0.0, 3.0, [probe_helpers.not_defined("yarn_frequencies")],
                        (0, 1))
    [problem] = pipeline._blame_broken_cells(failed, broken, "context_extension").problems
    assert problem.kind == ProblemKind.NOT_JUDGED and problem.cause == cause
    writes = pipeline.broken_answer_cells(magic_first("interpolation", "%%writefile interpolation.py"))
    assert "writes it to a file instead of running it" in writes["interpolation"].error
    for keeps in ("%%time", "%%capture captured", "%%prun -q"):
        assert pipeline.broken_answer_cells(magic_first("yarn", keeps), "context_extension") == {}


def test_a_skipped_cell_magic_says_the_lines_under_it_did_not_run():
    """%%bash is skipped with the whole cell under it (its body is bash's): the note said "the rest of the cell ran"
    (fails on the old code); a skipped line magic still says the rest of its cell ran."""
    nb = nbformat.read(ROOT / "solutions" / "context_extension" / "context_extension.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("%%bash\nls -la"))
    nb.cells.append(nbformat.v4.new_code_cell("%pip install numpy\nx = 1"))
    cell_magic, line_magic = pipeline.skipped_magic_notes(nbformat.writes(nb))
    assert "`%%bash`, was skipped" in cell_magic.text and cell_magic.text.endswith("the lines under it did not run "
                                                                                   "either")
    assert line_magic.text.endswith("the rest of the cell ran")


def test_an_import_the_grader_lacks_is_named_as_the_cause_where_it_raised():
    """`import torch` works where the student installed it and raises in the grader: the note of the answer cell it
    stopped, of a cell of their own, and "Fix this first" for a call that imports it each say that the package is not
    in the grader and what to do. Before, each quoted Python's 'No module named' alone."""
    from posenc_autograder.grading.fix_first import fix_this_first
    from posenc_autograder.results import missing_module_hint
    hint = missing_module_hint("ModuleNotFoundError: No module named 'torch'")
    assert hint and "`torch` is not installed in the grader" in hint
    assert missing_module_hint("NameError: name 'torch' is not defined") is None
    missing = {"ename": "ModuleNotFoundError", "evalue": "No module named 'torch' (line 1)"}
    nb = nbformat.read(ROOT / "solutions" / "positional_encoding" / "positional_encoding.ipynb", as_version=4)
    answer = answer_cells("positional_encoding")[0]
    for cell in nb.cells:
        if grade_id(cell) == grade_id(answer):
            cell.source = "import torch\n" + cell.source
            cell.outputs = [nbformat.v4.new_output("error", traceback=[], **missing)]
    nb.cells.insert(1, nbformat.v4.new_code_cell("import torch", outputs=[nbformat.v4.new_output(
        "error", traceback=[], **missing)]))
    executed = nbformat.writes(nb)
    [broken] = pipeline.broken_cell_notes(pipeline.broken_answer_cells(executed, "positional_encoding"))
    [own] = pipeline.own_cell_error_notes(executed)
    raised = "ModuleNotFoundError: No module named 'torch'"
    tests = [GradedTest(cid, cid, True, 0.0, 1.0, [Problem(f"f(1) raised {raised}", raised,
                                                           error="ModuleNotFoundError")])
             for cid in ("hidden_pe_values", "hidden_pe_shapes")]
    [first] = fix_this_first(tests)
    assert [hint in note.text for note in (broken, own, first)] == [True] * 3, [broken.text, own.text, first.text]
