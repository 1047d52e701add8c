"""Text that reaches students and instructors reads as prose: wrapped lines rejoin as a sentence, and a test's
description is its whole leading comment."""
from posenc_autograder.grading.execute import short_message
from posenc_autograder.grading.pipeline import cell_title


def test_wrapped_message_lines_rejoin_as_one_sentence():
    wrapped = "\nrow 0: expected 0, got 1. Likely cause: sin and cos are\nswapped: even columns hold sin"
    joined = "row 0: expected 0, got 1. Likely cause: sin and cos are swapped: even columns hold sin"
    assert short_message(wrapped, lines=8) == joined
    assert short_message("first\nsecond") == "first"


def test_a_cell_title_is_its_whole_leading_comment():
    source = ("# Visible tests: type and dtype, the example worked in Chapter 2,\n"
              "# and ValueError for an odd d_model.\npe = f(3, 4)\n# a later comment")
    assert cell_title(source) == "Visible tests: type and dtype, the example worked in Chapter 2, and ValueError for " \
                                 "an odd d_model."
    hidden = "# Hidden tests: values (4 points).\n### BEGIN HIDDEN TESTS\nx = 1"
    assert cell_title(hidden) == "Hidden tests: values (4 points)."
    assert cell_title("x = 1") == ""


def test_a_cell_past_its_time_that_prints_is_not_only_guessed_to_loop():
    """A cell that prints a large array whole (np.set_printoptions(threshold=sys.maxsize), then print(pe)) can pass
    its time formatting millions of numbers: its note names that, not only an infinite loop (what it said before); a
    cell that prints nothing keeps the loop as its guess."""
    import nbformat

    from posenc_autograder.grading.pipeline import _describe_events
    from posenc_autograder.settings import Limits
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import sys\nnp.set_printoptions(threshold=sys.maxsize)\nprint(table)"),
        nbformat.v4.new_code_cell("while True:\n    pass  # print( in a comment is no print\n")])
    events = [{"event": "cell_timeout", "where": f"cell {i}", "cell": i, "seconds": 30, "stopped": False}
              for i in (0, 1)]
    printing, looping = (note.text for note in _describe_events(events, Limits(), nbformat.writes(nb)))
    assert "a large array printed whole? print its .shape or a few rows instead" in printing
    assert "(an infinite loop?)" in looping and "printed" not in looping
