"""Cells run as a Jupyter kernel runs them: a notebook that passes Restart & Run All defines the same things in the
grader, a magic the sandbox cannot run is skipped with a note naming it and its line, and the notes say what
happened (a cell that defined its functions and then raised is not "a cell that did not run").

Graded end to end, through the sandbox, on tests/support/realistic_notebooks.py (about 20 s).
"""
import subprocess
import sys

import pytest
import realistic_notebooks as realistic

from posenc_autograder.probes import magics
from posenc_autograder.results import NoteKind

# Notebooks graded end to end through the sandbox, as tests/end_to_end/ grades them: `make test`, not test-fast.
pytestmark = pytest.mark.slow

CASES = {case.name: case for case in realistic.realistic_set()}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = realistic.course(tmp_path_factory.mktemp("realistic") / "course")
    return {name: realistic.grade(course, case) for name, case in CASES.items()}


def test_a_notebook_with_magics_scores_what_it_scores_without_them(graded):
    for name, case in CASES.items():
        if case.twin:
            assert graded[name].score == graded[case.twin].score, (name, graded[name].notes)
        if case.score is not None:
            assert graded[name].score == case.score, (name, [str(p) for t in graded[name].tests for p in t.problems])


def test_each_skipped_magic_is_named_with_its_line(graded):
    for name, case in CASES.items():
        notes = " ".join(str(n) for n in graded[name].notes_of(NoteKind.SKIPPED_MAGIC))
        for phrase in case.note_phrases:
            assert phrase in " ".join(str(n) for n in graded[name].notes), (name, phrase)
        if "%%bash" in "".join(case.notebook.cells[i].source for i in range(len(case.notebook.cells))):
            assert "line 1 of cell" in notes and "the lines under it did not run either" in notes
    plain = [n for name, r in graded.items() if not any(magics.skipped_in(c.source) for c in CASES[name].notebook.cells
                                                         if c.cell_type == "code")
             for n in r.notes_of(NoteKind.SKIPPED_MAGIC)]
    assert plain == [], "a notebook without magics the grader skips gets no note about them"


def test_a_cell_that_defined_its_functions_then_raised_is_not_said_to_have_not_run(graded):
    result = graded["pe_check_line_raises"]
    assert not result.notes_of(NoteKind.BROKEN_CELL, NoteKind.FIX_FIRST)
    raised = [str(n) for n in result.notes_of(NoteKind.RAISED_AFTER_DEFINING)]
    assert len(raised) == 2 and all("defined its functions, then line" in n for n in raised), raised
    assert any("'SinusoidalPositionalEncoding'" in n and "NameError" in n for n in raised)


def test_a_cell_of_the_students_own_that_raised_is_named_once_and_only_there(graded):
    own = {name: [str(n) for n in r.notes_of(NoteKind.OWN_CELL_RAISED)] for name, r in graded.items()}
    assert len(own["pe_own_cell_raises"]) == 1 and "cell 6 (the one starting `assert" in own["pe_own_cell_raises"][0]
    assert own["pe_plain"] == [] and own["pe_check_line_raises"] == []     # an answer cell's line has its own note


def test_no_false_note_and_no_grader_name_on_the_realistic_set(graded):
    assert {name: realistic.false_notes(r) for name, r in graded.items() if realistic.false_notes(r)} == {}


def test_skipped_in_names_each_refused_magic_and_shell_escape_with_its_line():
    source = ("%matplotlib inline\nimport numpy as np\n!pip install torch\nx = !ls\n%time y = 1\n"
              "def f():\n    %sx ls\n    return 1\n%pip install numpy\n")
    assert magics.skipped_in(source) == [magics.Skipped("!", 3), magics.Skipped("!", 4), magics.Skipped("%sx", 7),
                                         magics.Skipped("%pip", 9)]
    assert magics.skipped_in("%%bash\nrm -rf /\n") == [magics.Skipped("%%bash", 1)]
    assert magics.skipped_in("%%capture out\nprint(1)\n") == []
    assert magics.skipped_in("def broken(:\n") == []


SHELL_SCRIPT = r"""
import pathlib
from posenc_autograder.probes.shell_runner import kernel_shell
shell = kernel_shell()
cells = ['%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()\na = 1',
         '!touch shell_escape_ran\nlisting = !ls\n%pip install nothing\n%time b = a + 1',
         '%%capture captured\nprint("quiet")\nc = b + 1',
         '%%bash\ntouch bash_ran\n',
         '%ls\n%reset -f\nd = 4',
         'display(d)',
         'runs = []\n%timeit runs.append(1)\ntimed = !echo\n%timeit -n 3 -r 2 runs.append(2)']
failed = [c for c in cells if not shell.run_cell(c).success]
print("FAILED", failed)
print("NAMES", sorted(n for n in ("a", "b", "c", "d", "listing") if n in shell.user_ns))
print("FILES", sorted(p.name for p in pathlib.Path(".").iterdir() if not p.name.startswith(".")))
print("BACKEND", __import__("matplotlib").get_backend())
print("TIMEIT", shell.user_ns["runs"])
"""


def test_the_shell_runs_cells_as_ipykernel_does(tmp_path):
    """In a fresh process (the shell is a singleton): inline figures, %time, %%capture, display, %reset work; `!cmd`,
    %pip, %%bash and %ls do nothing and the rest of their cell runs; %timeit runs its statement once (no timing loop
    eats the cell's time limit) unless the student set -n or -r."""
    out = subprocess.run([sys.executable, "-c", SHELL_SCRIPT], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}).stdout
    assert "FAILED []" in out, out
    assert "NAMES ['d']" in out, out                # %reset -f cleared a, b, c, listing, as in Jupyter
    assert "FILES []" in out, out                   # neither `!touch` nor %%bash ran
    assert "BACKEND inline" in out, out             # matplotlib's name for module://matplotlib_inline...
    assert "quiet" not in out and "4" in out.split("BACKEND")[0]
    assert "TIMEIT [1, 2, 2, 2, 2, 2, 2]" in out, out       # %timeit runs once, unless the student chose otherwise


def test_on_the_realistic_set_nothing_is_withheld_and_every_failure_is_explained(graded):
    """The closing figures (printed): no message withheld, none with more than 16 numbers in its prose, no false
    note, no failed test without a cause or a pattern where a diagnosis is possible (and where it is not, the page
    says plainly that no known mistake matches), no "Likely cause" that is not a cause, no hint about code the
    student did not write, no self-check failure on work the hidden tests pass, and on the dashboard no failed test
    left without a cause and no student's one bug in two rows."""
    figures = realistic.measure(graded)
    print(figures)
    undiagnosable = sum(len(realistic.unexplained_tests(graded[name])) for name, case in CASES.items()
                        if case.undiagnosable)
    assert figures.pop("failed_without_cause") == undiagnosable, figures
    assert set(figures.values()) == {0}, figures


def test_the_namespace_habits_are_graded_as_the_work_deserves(graded):
    """A NaN is reported as a NaN, a later redefinition is named, the doubled exponent and rope_scores' positions are
    described as they are, and the sum over the positions is named as the cause instead of its ValueError."""
    said = {name: " ".join(realistic.texts(graded[name])) for name in CASES}
    assert "NaN" in said["pe_nan_first_row"] and "float32" not in said["pe_nan_first_row"]
    assert "key positions 8 down to 0" in said["rope_scores_scaled"], said["rope_scores_scaled"]
    assert "summed over the positions (axis 1) instead of over the batch" in said["pe_learned_sum_over_positions"]
    assert "only rows" in said["ctx_global_layers_local_base"] and "Likely cause: only rows" not in \
        said["ctx_global_layers_local_base"], said["ctx_global_layers_local_base"]
    assert "No known mistake matches" in said["ctx_attention_divided_by_d"]
