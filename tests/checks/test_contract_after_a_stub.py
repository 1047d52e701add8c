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

