"""The visible self-checks' rows of a realistic notebook, graded end to end through the sandbox: a helper written in
a cell below the check that calls it, and the summary cell at the end, which fails while any check above fails."""
import pytest
import realistic_notebooks as realistic

pytestmark = pytest.mark.slow        # one notebook through the sandbox (about 10 s)

HELPER = "def frequencies(d_model):\n    i = np.arange(d_model // 2)\n    return 1 / 10000 ** (2 * i / d_model)"


def test_a_helper_below_its_check_is_named_and_the_summary_names_the_checks_that_failed(tmp_path):
    """It said "your function raised NameError: name 'frequencies' is not defined", as Jupyter does, with the helper
    two cells below; and the summary cell's row "raised AssertionError: Part 1: the table: your function raised
    NameError: ... (line 3)", every failure above again in one line. Both fail on the old code."""
    pe = realistic.solved("positional_encoding")
    uses = realistic.edited(pe, "sinusoidal_positional_encoding",
                            lambda s: s.replace("omega = np.exp(-2.0 * i / d_model * np.log(10000.0))",
                                                "omega = frequencies(d_model)"))
    assert uses.cells != pe.cells
    nb = realistic.added_after(uses, "test_pe_visible", HELPER)
    case = realistic.Realistic("helper_below", "positional_encoding", nb, None)
    result = realistic.grade(realistic.course(tmp_path / "course"), case)
    assert all(t.passed for t in result.tests if t.hidden)          # the hidden tests run after every cell
    rows = {t.cell_id: [str(p) for p in t.problems] for t in result.tests if not t.passed}
    assert set(rows) == {"test_pe_visible", "visible_summary"}, rows
    [check] = rows["test_pe_visible"]
    index = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source == HELPER)
    assert check.endswith(f"(`frequencies` is defined below this check, in cell {index + 1} (the one starting "
                          f"`def frequencies(d_model):`): Run All runs this check before it; move that cell above "
                          f"this one)"), check
    assert rows["visible_summary"] == ["it fails while a visible check above fails: here `test_pe_visible` (each "
                                       "failure is said in its own row)"]
    [summary] = next(t for t in result.tests if t.cell_id == "visible_summary").problems
    assert "frequencies" in summary.quoted                       # what it printed stays, folded
