"""The contracts test of a function whose own tests met only the template's stub (its answer written in a later
cell, say: the tests before it ran the stub, the contracts test at the end the function): one cause, a part not
attempted, said where its tests failed and charged there."""
from posenc_autograder.checks import REGISTRY, hidden_tests
from posenc_autograder.checks.contracts import _function_problem
from posenc_autograder.checks.hidden import function_verdicts
from posenc_autograder.checks.manifest import ARRAY
from posenc_autograder.reports import dashboard
from posenc_autograder.results import STUB_ERROR, GradedTest, NotebookResult, Problem, ProblemKind

STUB = Problem("dot_product_distance on a (9, 5) array raised NotImplementedError: the function is still the "
               "template stub", error=STUB_ERROR)
MORE = Problem("... and 1 more case like these", kind=ProblemKind.MORE)


def test_a_contract_whose_function_met_only_the_stub_says_so_and_is_the_parts_not_attempted():
    """It said "dot_product_distance returned the promised type, but its contract counts once it passes its own
    tests. No known mistake matches this answer." (the grader had recognised the stub), and the dashboard gave the
    student a 'hidden_contracts failed without a named cause' row beside the part not attempted: one cause in two
    rows (fails on the old code: no stub in the verdict, the sentence without it)."""
    tests = hidden_tests("positional_encoding")
    outcomes = {t.id: ([], 1, 1) for t in tests if not t.reads_verdicts}
    outcomes["hidden_dot_product"] = ([STUB, MORE], 0, 4)
    verdicts = function_verdicts(tests, outcomes)
    assert not verdicts["dot_product_distance"] and verdicts["dot_product_distance"].stub
    assert verdicts["encoding_statistics"] and not verdicts["encoding_statistics"].stub
    said = _function_problem("dot_product_distance", {"args": [], "kwargs": {}},
                             {"kind": {"type": "ndarray", "dtype": "float64"}, "arguments": []}, ARRAY, ["pe"],
                             verdicts["dot_product_distance"], lambda: [])
    assert str(said) == ("dot_product_distance returned the promised type, but its contract counts once it passes "
                         "its own tests, which met the template stub") and said.kind is ProblemKind.NOT_JUDGED
    contracts = REGISTRY["hidden_contracts"]
    result = NotebookResult("ann", "positional_encoding", "positional_encoding", True, [
        GradedTest("hidden_dot_product", "d", True, 0.0, 4.0, [STUB, MORE]),
        GradedTest(contracts.id, "c", True, 1.5, 2.0, [Problem(str(said), kind=said.kind)])], [])
    mistakes, stubs = dashboard.grouped_mistakes([result])
    assert mistakes == [] and [(row.label, sorted(row.tests)) for row in stubs] == [
        ("dot_product_and_statistics", ["hidden_contracts", "hidden_dot_product"])]


def test_a_function_whose_tests_met_the_stub_and_a_wrong_answer_is_no_stub():
    """One test met the stub, another judged a wrong answer: not a part left as the stub."""
    tests = hidden_tests("positional_encoding")
    outcomes = {t.id: ([], 1, 1) for t in tests if not t.reads_verdicts}
    outcomes["hidden_pe_values"] = ([Problem("sinusoidal_positional_encoding(3, 4) is wrong")], 0, 3)
    outcomes["hidden_pe_shapes"] = ([Problem("sinusoidal_positional_encoding(3, 4) raised NotImplementedError",
                                             error=STUB_ERROR)], 0, 3)
    verdict = function_verdicts(tests, outcomes)["sinusoidal_positional_encoding"]
    assert not verdict and not verdict.stub



def test_a_contract_waiting_for_its_functions_own_tests_that_named_no_cause_says_so_of_them_not_of_its_answer():
    """The function returned the promised type and its own tests failed with no known mistake named: the contract's
    case said "...counts once it passes its own tests. No known mistake matches this answer.", of an answer (its
    type) that is right; it now says that of what its own tests found, once (fails on the old code)."""
    from posenc_autograder.checks.comparison import NO_KNOWN_MISTAKE, said_unexplained
    tests = hidden_tests("positional_encoding")
    outcomes = {t.id: ([], 1, 1) for t in tests if not t.reads_verdicts}
    outcomes["hidden_dot_product"] = ([Problem("dot_product_distance(pe) is wrong. " + NO_KNOWN_MISTAKE + ".")], 0, 4)
    verdict = function_verdicts(tests, outcomes)["dot_product_distance"]
    assert not verdict and not verdict.stub and getattr(verdict, "cause", None) is None
    said = _function_problem("dot_product_distance", {"args": [], "kwargs": {}},
                             {"kind": {"type": "ndarray", "dtype": "float64"}, "arguments": []}, ARRAY, ["pe"],
                             verdict, lambda: [])
    other = Problem("encoding_statistics returned a list; expected a dict")
    assert [str(p) for p in said_unexplained([said, other])] == [
        "dot_product_distance returned the promised type, but its contract counts once it passes its own tests. "
        "No known mistake matches what they found.", str(other)]


def test_an_integer_table_is_said_to_be_one_where_float64_is_promised():
    """A table built in an integer array (np.zeros(..., dtype=int)): its contract case said "returned a int64
    ndarray; expected a float64 numpy ndarray (computing or storing in float32 loses digits...)", of no float32
    step; its values "No known mistake matches this answer", each entry the expected one cut to a whole number: now the
    same cause, one row; an answer of zeros (never filled) is not said to be cut. Each fails on the old code."""
    import numpy as np

    from posenc_autograder.checks.comparison import WHOLE_NUMBERS, compare
    from posenc_autograder.checks.contracts import CAUSES, kind_problem
    said = kind_problem({"type": "ndarray", "dtype": "int64"}, ARRAY, "sinusoidal_positional_encoding")
    assert str(said).startswith("sinusoidal_positional_encoding returned an int64 ndarray; expected a float64")
    assert said.cause == CAUSES["whole_numbers"] and "float32" not in said
    assert "a float32 ndarray" in kind_problem({"type": "ndarray", "dtype": "float32"}, ARRAY, "f")
    expected = np.array([[0.0, 1.0], [0.841, 0.540], [0.909, -0.416]])
    said = compare({"value": np.trunc(expected)}, expected, "pe", 1e-9)
    assert said.cause == WHOLE_NUMBERS == CAUSES["whole_numbers"] and f"Likely cause: {WHOLE_NUMBERS}" in said
    assert getattr(compare({"value": np.zeros((3, 2))}, np.full((3, 2), 0.5), "pe", 1e-9), "cause", None) \
        != WHOLE_NUMBERS


def test_a_contract_of_a_function_not_defined_says_so_as_its_own_tests_do_in_one_dashboard_row():
    """A function renamed (alibi_biases): the contracts case said "`alibi_bias` is not defined: keep the name and
    signature from the template. No known mistake matches this answer." where its own test said the name alone, and
    the dashboard gave the contracts test a row of its own (fails on the old code)."""
    from posenc_autograder.checks.comparison import said_unexplained
    from posenc_autograder.probes.helpers import not_defined
    tests = hidden_tests("rope_alibi")
    verdicts = function_verdicts(tests, {t.id: ([], 1, 1) for t in tests if not t.reads_verdicts})
    said = _function_problem("alibi_bias", {"args": [], "kwargs": {}}, {"missing": not_defined("alibi_bias")}, ARRAY,
                             [], verdicts["alibi_bias"], lambda: [])
    [told] = said_unexplained([said])
    assert str(told) == not_defined("alibi_bias") and told.kind is ProblemKind.NOT_RUN
    own = Problem(not_defined("alibi_bias"), kind=ProblemKind.NOT_RUN)
    result = NotebookResult("ann", "rope_alibi", "rope_alibi", True, [
        GradedTest("hidden_alibi_bias", "b", True, 0.0, 2.0, [own]),
        GradedTest("hidden_rope_alibi_contracts", "c", True, 1.5, 2.0, [Problem(str(told), kind=told.kind)])], [])
    mistakes, _ = dashboard.grouped_mistakes([result])
    assert [(row.label, sorted(row.tests)) for row in mistakes] == [
        (not_defined("alibi_bias"), ["hidden_alibi_bias", "hidden_rope_alibi_contracts"])]
