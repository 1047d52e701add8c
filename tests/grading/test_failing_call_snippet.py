"""A failed case's page line reproduces the failing call: run against the student's function, in this process, it
gives back the very value the page reports as wrong; inputs the student has not been shown are never written. A case
that is more than one call (a module built, stepped, then read) is lines that do the same."""
import html
import re

import numpy as np

from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.context_extension import reference as context_reference
from posenc_autograder.checks.positional_encoding import analysis, integration, learned, sinusoidal
from posenc_autograder.checks.relative_positions import t5
from posenc_autograder.notebook import record_in_process
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


class BatchMeanLayer:
    """A realistic mistake in the learned module's backward pass: the gradient averaged over the batch."""

    def __init__(self, max_seq_len, d_model, rng=None):
        rng = np.random.default_rng() if rng is None else rng
        self.embedding = rng.normal(0.0, 0.02, size=(max_seq_len, d_model))
        self.grad_embedding = np.zeros_like(self.embedding)

    def forward(self, X):
        self.seq_len = X.shape[1]
        return X + self.embedding[None, :self.seq_len]

    def backward(self, grad_output):
        self.grad_embedding = np.zeros_like(self.embedding)
        self.grad_embedding[:self.seq_len] = grad_output.mean(axis=0)
        return grad_output


def the_lines(page: str) -> str:
    found = re.search(r'<pre class="snippet">([^<]*)</pre>', page)
    assert found, "the page shows no lines reproducing the failing case"
    return html.unescape(found.group(1))


def test_lines_that_build_a_module_and_step_it_reproduce_the_wrong_gradient():
    """The learned module's backward case is more than one call: build the layer with its seed, forward, backward,
    then read grad_embedding; run on the student's class, the lines give the reported wrong value."""
    test = next(t for t in learned.TESTS if t.id == "hidden_learned_backward")
    [problem] = test.verdict(record_in_process(test.task_entry(VARIANT), {"LearnedPositionalEncoding": BatchMeanLayer}),
                             VARIANT)
    page = page_of(test, problem)
    lines = the_lines(page).splitlines()
    assert lines[0] == "layer = LearnedPositionalEncoding(11, 6, rng=np.random.default_rng(4))"
    assert lines[-1] == "layer.grad_embedding" and "input1" not in page       # both arrays written: 252 numbers
    namespace = {"np": np, "LearnedPositionalEncoding": BatchMeanLayer}
    exec("\n".join(lines[:-1]), namespace)                  # noqa: S102 - the lines under test, on our own class
    got = eval(lines[-1], namespace)                        # noqa: S307
    assert got[tuple(problem.details["where"])] == problem.details["got"]


def test_a_case_run_with_a_stand_in_says_so_and_names_what_it_does_not_show():
    """encode_and_attend is judged with the grader's attention and encoder: the line names the encoder it needs and
    says which function of the student's a stand-in replaced."""
    test = next(t for t in integration.TESTS if t.id == "hidden_integration")
    namespace = {"self_attention": unscaled_attention}                 # replaced by the probe's stand-in
    exec("def encode_and_attend(X, W_q, W_k, W_v, encoder=None):\n"       # noqa: S102 - a mistake: no encoder
         "    return self_attention(X, W_q, W_k, W_v)", namespace)
    problem = test.verdict(record_in_process(test.task_entry(VARIANT), namespace), VARIANT)[0]
    page = page_of(test, problem)
    assert re.search(r"encode_and_attend\(np\.array\(.*encoder=encoder\)", the_line(page))
    assert "The line needs <code>encoder</code>: an encoder of the grader's" in html.unescape(page)
    assert "your <code>self_attention</code> was replaced by a stand-in" in page


def rounded_buckets(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """A realistic mistake in T5's buckets: the log-spaced bucket rounded, not truncated; on a float array its
    buckets would be floats, so the inputs shown must be built with the dtype the grader passed."""
    n = np.asarray(relative_position)
    buckets = np.zeros(n.shape, dtype=n.dtype)
    if bidirectional:
        num_buckets //= 2
        buckets = buckets + (n > 0) * num_buckets
        distance = np.abs(n)
    else:
        distance = -np.minimum(n, 0)
    max_exact = num_buckets // 2
    logs = np.log(np.maximum(distance, 1) / max_exact) / np.log(max_distance / max_exact)
    large = np.minimum(max_exact + np.round(logs * (num_buckets - max_exact)).astype(n.dtype), num_buckets - 1)
    return buckets + np.where(distance < max_exact, distance, large)


def test_an_integer_input_is_shown_with_its_dtype_and_its_block_builds_what_the_grader_passed():
    """The integer positions T5's bucket test passes: the inputs block says int64 (not float64) and builds an int64
    array, the very argument of the line that reproduces the case. Before, it said float64 and built one."""
    test = next(t for t in t5.TESTS if t.id == "hidden_t5_relative_bucket")
    problem = first_problem(test, rounded_buckets, VARIANT)
    page = page_of(test, problem)
    shown = re.findall(r"<summary>input 1: shape \((?:\d+, )*\d+,?\) (\w+), ", page)
    assert shown == ["int64"], shown
    block = html.unescape(re.search(r"<pre>(np\.array\([^<]*)</pre>", page).group(1))
    built = eval(block, {"np": np})                          # noqa: S307 - the page's own text, on numpy only
    line = the_line(page)
    argument = eval(line.replace("t5_relative_bucket(", "(", 1), {"np": np})[0]  # noqa: S307 - the page's own line
    assert built.dtype == argument.dtype == np.int64 and np.array_equal(built, argument)


def interpolated_in_place(positions, train_len, target_len):
    """A realistic mistake: the caller's positions scaled in place."""
    positions = np.asarray(positions, dtype=np.float64)
    positions *= train_len / target_len
    return positions


def test_a_cases_fixed_inputs_are_not_said_to_be_drawn_for_the_student_alone():
    """The contracts case of interpolated_positions passes the same positions to every student: two students' pages
    show the same array, and say it is the same for every student, not that its random values are drawn for them
    (it has none)."""
    test = REGISTRY["hidden_context_extension_contracts"]
    namespace = {name: getattr(context_reference, name) for name in dir(context_reference) if not name.startswith("_")}
    namespace["interpolated_positions"] = interpolated_in_place
    pages = []
    for variant in (VARIANT, VARIANT + 1):
        [problem] = test.verdict(record_in_process(test.task_entry(variant), namespace), variant,
                                 {name: True for name in test.subjects})
        assert problem.inputs == [[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]              # the same for both students
        pages.append(page_of(test, problem))
    for page in pages:
        assert "<summary>input 1: shape (6,) float64, [0, 1, 2, 3, ...]</summary>" in page
        assert "The inputs of this case (the same for every student):" in page
        assert "drawn for you alone" not in page and "Your inputs" not in page


def test_a_cases_inputs_drawn_for_the_student_are_said_to_be():
    """T5's bucket case passes positions drawn per student: its page says its random values are drawn for the
    student alone (and the fixed-inputs sentence is not there)."""
    test = next(t for t in t5.TESTS if t.id == "hidden_t5_relative_bucket")
    page = page_of(test, first_problem(test, rounded_buckets, VARIANT))
    assert "Your inputs for this case (its random values are drawn for you alone):" in page
    assert "the same for every student" not in page


def bounded_strictly(pe):
    """A realistic mistake: 'bounded' as |PE| < 1, where every |PE| <= 1 is asked."""
    pe = np.asarray(pe, dtype=np.float64)
    norms = np.sqrt((pe ** 2).sum(axis=1))
    return {"position_norms": norms, "mean": float(pe.mean()), "variance": float(pe.var()),
            "min": float(pe.min()), "max": float(pe.max()), "bounded": bool(np.abs(pe).max() < 1)}


def test_every_input_sentence_is_true_of_its_case_fixed_or_drawn():
    """encoding_statistics' cases: [[1, -1], [0.5, 0]] is everyone's, so its page says so and not that its random
    values are drawn for the student (the old page did); a case drawn per student would say that."""
    test = next(t for t in analysis.TESTS if t.id == "hidden_encoding_statistics")
    record = {"observations": call_each({"encoding_statistics": bounded_strictly}, test.plain_inputs(VARIANT))}
    shown = [p for p in test.verdict(record, VARIANT) if p.inputs]
    fixed = [p for p in shown if p.inputs == [[[1.0, -1.0], [0.5, 0.0]]]]
    assert fixed and all(p.drawn is False for p in fixed)
    page = page_of(test, fixed[0])
    assert "The inputs of this case (the same for every student):" in page and "drawn for you alone" not in page
