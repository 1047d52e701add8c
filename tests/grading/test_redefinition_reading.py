"""A graded function bound again in a later cell is named on the page however the cell spells it: the grader skips
reading cells that cannot bind the name (its text absent), so a spelling Python reads as the same name (NFKC: a
fullwidth letter) or a binding through IPython's syntax must still be found."""
import nbformat
import pytest
from notebook_tools import ROOT

from posenc_autograder.grading.pipeline import redefinition_notes

ASSIGNMENT = NOTEBOOK = "positional_encoding"
FUNCTION = "sinusoidal_positional_encoding"


def with_cell_after_answer(source: str) -> str:
    nb = nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    answer = next(i for i, c in enumerate(nb.cells) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                  == FUNCTION)
    nb.cells.insert(answer + 1, nbformat.v4.new_code_cell(source))
    return nbformat.writes(nb)


@pytest.mark.parametrize("source", [
    f"def {FUNCTION}(seq_len, d_model):\n    return 0\n",
    f"def {FUNCTION.replace('s', chr(0xFF53), 1)}(seq_len, d_model):\n    return 0\n",     # a fullwidth s
    f"{FUNCTION} = !echo 1\n",                                                               # IPython's syntax
    f"from math import sin as {FUNCTION}\n",
    f"    def {FUNCTION}(seq_len, d_model):\n        return 0\n"])                          # indented: IPython dedents
def test_a_later_binding_is_named(source):
    notes = redefinition_notes(with_cell_after_answer(source), ASSIGNMENT)
    assert [str(n).split(":")[0] for n in notes] == [FUNCTION]


@pytest.mark.parametrize("source", ["x = 1\n", f"print({FUNCTION!r})\n", f"{FUNCTION}(4, 8)\n"])
def test_a_cell_that_does_not_bind_it_is_not_named(source):
    assert redefinition_notes(with_cell_after_answer(source), ASSIGNMENT) == []


def test_a_cell_too_deep_for_pythons_parser_binds_nothing_and_stops_nothing():
    """A cell naming the function with an expression nested past the parser's recursion limit: read as no binding,
    as everywhere else a cell is read, where reading its names raised RecursionError out of the redefinition step."""
    source = f"print({FUNCTION!r})\nx = 0" + "+1" * 300_000 + "\n"
    assert redefinition_notes(with_cell_after_answer(source), ASSIGNMENT) == []


def test_a_function_defined_again_after_its_tests_ran_is_named_with_the_version_they_ran():
    """dot_product_distance written in the answer cell 'self_attention', its own answer cell left as the template
    stub: its tests ran the stub ("still the template stub", and the student had written it). The page now says
    where it is defined again, and that its tests ran the answer cell's version (nothing was said: fails on the old
    code); a binding before its tests is named as the version graded, as before."""
    nb = nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "self_attention")
    cell.source += "\n\ndef dot_product_distance(pe):\n    return pe @ pe.T\n"
    [note] = redefinition_notes(nbformat.writes(nb), ASSIGNMENT)
    assert note.text == ("dot_product_distance: cell 'self_attention' defines it again after its tests ran, which ran "
                         "the version of answer cell 'dot_product_and_statistics'; keep one definition, in the answer "
                         "cell")
    assert note.cell == nb.cells.index(cell)
    cell.source += "\n\ndef encoding_statistics(pe):\n    return {}\n"      # both moved: one note
    [note] = redefinition_notes(nbformat.writes(nb), ASSIGNMENT)
    assert note.text.startswith("dot_product_distance and encoding_statistics: cell 'self_attention' defines them "
                                "again after their tests ran, which ran the version of answer cell")
