"""A failed case's page line reproduces the failing call: run against the student's function, in this process, it
gives back the very value the page reports as wrong; inputs the student has not been shown are never written."""
import re
import html

import numpy as np

from posenc_autograder.checks.positional_encoding import integration, sinusoidal
from posenc_autograder.probes.helpers import call_each
from posenc_autograder.reports import feedback
from posenc_autograder.results import GradedTest, NotebookResult

VARIANT = 424242


def unscaled_attention(X, W_q, W_k, W_v):
    """A realistic mistake: scores not divided by sqrt(d_k)."""
    scores = (X @ W_q) @ np.swapaxes(X @ W_k, -1, -2)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True) @ (X @ W_v)


def positions_from_one(seq_len, d_model):
    """A realistic mistake: positions counted from 1."""
    position = np.arange(1, seq_len + 1)[:, None]
    angle = position / 10000 ** (np.arange(0, d_model, 2) / d_model)
    table = np.zeros((seq_len, d_model))
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


def first_problem(test, function, variant):
    record = {"observations": call_each({test.subjects[0]: function}, test.plain_inputs(variant))}
    problems = test.verdict(record, variant)
    assert problems and problems[0].call is not None
    return problems[0]


def page_of(test, problem) -> str:
    graded = GradedTest(test.id, test.title, True, 0.0, float(test.points), [problem])
    return feedback.render(NotebookResult("ann", test.assignment, "nb", True, [graded], []))


def the_line(page: str) -> str:
    found = re.search(r'<(?:pre|code) class="snippet">([^<]*)</', page)
    assert found, "the page shows no line reproducing the failing call"
    return html.unescape(found.group(1))


def replayed(line: str, name: str, function):
    return eval(line, {"np": np, name: function})        # noqa: S307 - the line under test, on our own function


def test_the_line_reproduces_the_wrong_value_the_page_reports():
    test = integration.TESTS[0]
    problem = first_problem(test, unscaled_attention, VARIANT)
    page = page_of(test, problem)
    line = the_line(page)
    assert line.startswith("self_attention(np.array([[") and "input1" not in line
    got = replayed(line, "self_attention", unscaled_attention)
    where = tuple(problem.details["where"])
    assert got[where] == problem.details["got"]               # exactly: every float written with its repr
    assert f"got {problem.details['got']:.10g}" in page        # the value the page reports as wrong
    assert "<details><summary>a line that reproduces this case (184 numbers)" in page   # folded, not in prose


def test_a_small_call_is_one_line_in_the_prose():
    test = next(t for t in sinusoidal.TESTS if t.id == "hidden_pe_values")
    problem = first_problem(test, positions_from_one, None)
    page = page_of(test, problem)
    line = the_line(page)
    assert re.fullmatch(r"sinusoidal_positional_encoding\(\d+, \d+\)", line)
    got = replayed(line, "sinusoidal_positional_encoding", positions_from_one)
    assert got[tuple(problem.details["where"])] == problem.details["got"]


def test_inputs_the_student_has_not_seen_are_named_not_written():
    test = integration.TESTS[0]
    problem = first_problem(test, unscaled_attention, None)       # course-wide inputs: shared, so not shown
    page = page_of(test, problem)
    line = the_line(page)
    assert line == "self_attention(input1, input2, input3, input4)"
    assert "The line needs <code>input1</code>: an array of shape (5, 8)" in page
    assert "np.array(" not in page
