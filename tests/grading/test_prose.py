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
