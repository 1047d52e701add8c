"""The hidden-test checks, run in-process on the solution and on student variants (milliseconds each)."""
import functools

import numpy as np
import pytest
from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks import REGISTRY, comparison
from posenc_autograder.checks.comparison import against_any, compare, mismatch, within
from posenc_autograder.checks.positional_encoding.catalogue import MISTAKES
from posenc_autograder.notebook import graded_in_process, record_in_process, run_check
from posenc_autograder.probes import codec

SOLUTION = implementation_source(solution_notebook("positional_encoding"))
CORE_CHECKS = [cid for cid, c in REGISTRY.items() if c.assignment == "positional_encoding"]


@functools.cache
def _solution_frame(cell_id: str) -> bytes:
    test = REGISTRY[cell_id]
    return codec.frame(record_in_process(test.task_entry(), namespace_from(implementation_source(
        solution_notebook(test.assignment)))))


def solution_record(cell_id: str) -> dict:
    """What the solution's notebook sends back for a hidden test: recorded once a module (three tests of each hidden
    test read it), decoded afresh for each (a judge may change the containers it is given)."""
    return codec.decode_frame(_solution_frame(cell_id), writable=False)


def failures(ns):
    return {cid: problems for cid, (problems, _, _) in graded_in_process("positional_encoding", ns).items() if problems}


def test_solution_passes_every_check():
    assert failures(namespace_from(SOLUTION)) == {}


def test_every_hidden_test_has_catalogued_mistakes_that_it_catches():
    """The catalogue covers the assignment's hidden tests (the mistakes themselves are checked below)."""
    assert len({m.name for m in MISTAKES}) == len(MISTAKES)
    assert {m.failing_check for m in MISTAKES} >= set(CORE_CHECKS) - {"hidden_pe_unique_bounded", "hidden_pe_stability",
                                                                       "hidden_pe_frequency"}
    assert all(m.failing <= set(CORE_CHECKS) for m in MISTAKES)


def test_template_stubs_earn_nothing():
    """Every function of the manifest as the template's stub: every test fails and no point is earned."""
    from posenc_autograder.checks import manifest
    graded = graded_in_process("positional_encoding", namespace_from(
        SOLUTION, manifest.stub_source(manifest.functions("positional_encoding"))))
    assert {cid for cid, (problems, _, _) in graded.items() if problems} == set(CORE_CHECKS)
    assert sum(REGISTRY[cid].points_for(passed, total) for cid, (_, passed, total) in graded.items()) == 0


def test_missing_function_is_reported_by_name():
    ns = namespace_from(SOLUTION)
    del ns["dot_product_distance"]
    assert "`dot_product_distance` is not defined" in run_check("hidden_dot_product", ns)[0].text


def test_probes_import_nothing_of_the_grader():
    """The probes package is shipped into the sandbox: it must not pull in the reference or the judges."""
    import ast
    import pathlib
    import sys

    import posenc_autograder.probes as probes_package

    # traitlets: IPython's configuration; stack_data: IPython's reader of a traceback's source (the zygote reads the
    # release's cells with it once)
    allowed = set(sys.stdlib_module_names) | {"numpy", "IPython", "traitlets", "stack_data"}
    for path in pathlib.Path(probes_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level <= 1, (path.name, "imports from outside the probes package")
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            assert all(n.split(".")[0] in allowed for n in names), (path.name, names)


# --- non-finite answers fail: NaN and Inf are never "close enough" ------------

def test_a_table_with_one_inf_and_one_nan_fails_and_says_so():
    bad_table = ("_right = sinusoidal_positional_encoding\n"
                 "def sinusoidal_positional_encoding(seq_len, d_model):\n"
                 "    pe = _right(seq_len, d_model)\n"
                 "    if seq_len > 2 and d_model > 3:\n"
                 "        pe[1, 1], pe[2, 3] = np.inf, np.nan\n"
                 "    return pe\n")
    problems = run_check("hidden_pe_values", namespace_from(SOLUTION, bad_table))
    texts = [p.text for p in problems]
    assert texts and all("NaN or Inf" in t for t in texts[:-1]) and "more case" in texts[-1], texts


def test_compare_fails_nan_and_inf_wherever_they_are():
    expected = np.zeros((2, 3))
    for bad in (np.nan, np.inf, -np.inf):
        for index in np.ndindex(expected.shape):
            observed = expected.copy()
            observed[index] = bad
            assert compare({"value": observed}, expected, "t", atol=1e300) is not None
            assert mismatch(observed, expected, 1e300, "t") is not None


def test_an_answer_that_fits_one_expectation_is_not_diagnosed_against_the_others():
    right, other = np.arange(6.0).reshape(2, 3), np.ones((2, 3))
    diagnosed = []

    def against(expected):
        return compare({"value": right}, expected, "f()", 1e-9, diagnose=lambda a: diagnosed.append(a) or "a cause")
    assert against_any(against, other, right) is None
    assert diagnosed == []                   # old code: diagnosed (and described) the failure against `other`
    said = against_any(against, other, other * 2)      # fitting none: each described, the diagnosed one said
    assert len(diagnosed) == 2 and said.cause == "a cause", said


def test_a_right_answer_is_judged_in_one_pass_without_describing_anything(monkeypatch):
    expected = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    monkeypatch.setattr(comparison, "mismatch", lambda *a, **k: pytest.fail("a right answer was described"))
    assert compare({"value": expected + 1e-10}, expected, "f()", 1e-9) is None     # old code: mismatch() called
    assert compare({"value": expected.astype(np.float32)}, expected, "f()", 1e-9) is None    # float32's allowance


@pytest.mark.parametrize("atol", [1e-9, 0.5, 1e300, float("inf")])
def test_within_is_mismatch_finding_nothing_on_a_finite_answer(atol):
    """within() is compare()'s shortcut for a right answer: True only where the full path finds no problem."""
    expected = np.array([[0.0, -0.0, 1.0], [1e-300, -2.5, 3e8]])
    for index in [None, *np.ndindex(expected.shape)]:
        for bad in (np.nan, np.inf, -np.inf, 1e-10, 0.7, 1e301, -0.0):
            actual = expected.copy()
            if index is not None:
                actual[index] = bad
            for precision in (None, "float32"):
                full = bool(np.all(np.isfinite(actual))) and mismatch(actual, expected, atol, "t", precision) is None
                assert not within(actual, expected, atol, precision) or full, (index, bad, precision)
                if np.isfinite(atol):
                    assert within(actual, expected, atol, precision) == full, (index, bad, precision)
    assert not within(expected[:1], expected, 1.0) and not within(expected.T, expected.T[:2], 1.0)
    assert within(np.array(2.0), np.array(2.0 + 1e-12), 1e-9) and not within(np.array(2.0), np.array(2.1), 1e-9)


def test_a_wrong_scalar_is_named_without_a_place_or_an_entry_count():
    text = str(mismatch(np.float64(2.5), np.float64(2.0), 1e-9, "ntk_scaled_base(500, 2.5, 6)"))
    assert text.startswith("ntk_scaled_base(500, 2.5, 6) is wrong: expected 2, got 2.5 (off by more than 1e-09"), text
    table = str(mismatch(np.array([1.0, 3.0]), np.array([1.0, 2.0]), 1e-9, "f(2)"))
    assert table.startswith("f(2) is wrong at [1]: expected 2, got 3 (1 of 2 entries off"), table


def _poisoned(value, bad):
    """The observations with the first entry of every array and every float replaced by `bad`."""
    if isinstance(value, np.ndarray) and value.size:
        value = value.copy()
        value.flat[0] = bad
        return value
    if isinstance(value, float):
        return bad
    if isinstance(value, dict):
        return {k: _poisoned(v, bad) for k, v in value.items()}
    if isinstance(value, list):
        return [_poisoned(v, bad) for v in value]
    return value




@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("bad", [np.nan, np.inf], ids=["nan", "inf"])
@pytest.mark.parametrize("cell_id", sorted(REGISTRY))
def test_every_judge_fails_answers_with_a_non_finite_value(cell_id, bad):
    test = REGISTRY[cell_id]
    record = solution_record(cell_id)
    assert test.verdict(record) == [], "the solution must pass before poisoning means anything"
    if codec.dumps(_poisoned(record["observations"], bad)) == codec.dumps(record["observations"]):
        pytest.skip("its observations hold no number (hidden_contracts records types and changed arguments)")
    assert test.verdict({"observations": _poisoned(record["observations"], bad)}), cell_id


def _without_last_case(value):
    """The observations with the last record of every list of records dropped (a lost or tampered-with answer);
    lists of plain numbers (a returned shape, the indices of changed arguments) are data, not cases."""
    if isinstance(value, dict):
        return {k: _without_last_case(v) for k, v in value.items()}
    if isinstance(value, list):
        plain = all(isinstance(v, (int, float)) for v in value)
        return [_without_last_case(v) for v in (value if plain else value[:-1])]
    return value


@pytest.mark.parametrize("cell_id", sorted(REGISTRY))
def test_every_judge_fails_answers_with_a_case_missing(cell_id):
    test = REGISTRY[cell_id]
    record = solution_record(cell_id)
    if codec.dumps(_without_last_case(record["observations"])) == codec.dumps(record["observations"]):
        pytest.skip("its observations hold no list of cases")
    assert test.verdict({"observations": _without_last_case(record["observations"])}), cell_id


# --- diagnoses are right or silent ------------------------------------------------------

def test_each_known_table_mistake_gets_exactly_its_own_diagnosis():
    from posenc_autograder.checks.positional_encoding import reference as ref
    from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_pe_table, pe_mistakes
    for seq_len, d_model in ((7, 10), (60, 34)):
        for explanation, table in pe_mistakes(seq_len, d_model).items():
            assert explanation in diagnose_pe_table(table, seq_len, d_model)
        assert diagnose_pe_table(ref.sinusoidal_positional_encoding(seq_len, d_model), seq_len, d_model) is None


def test_float32_diagnosis_names_the_measured_error_and_nothing_else_gets_it():
    from posenc_autograder.checks.positional_encoding import reference as ref
    from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_pe_table
    table = ref.sinusoidal_positional_encoding(60, 34)
    as_float32 = table.astype(np.float32).astype(np.float64)
    error = np.abs(as_float32 - table).max()
    assert f"off by up to {error:.1g}" in diagnose_pe_table(as_float32, 60, 34)
    assert diagnose_pe_table(table + 1e-3, 60, 34) is None          # far beyond float32 rounding: silent


@pytest.mark.parametrize("shape", [(5, 8), (3, 7, 8)])
def test_each_known_attention_mistake_gets_exactly_its_own_diagnosis(shape):
    from posenc_autograder.checks.positional_encoding import reference as ref
    from posenc_autograder.checks.positional_encoding.diagnosis import OVERFLOW, attention_mistakes, diagnose_attention
    rng = np.random.default_rng(0)
    X, W = rng.normal(size=shape), [rng.normal(scale=0.5, size=(8, 6)) for _ in range(3)]
    for explanation, wrong in attention_mistakes(X, W).items():
        if explanation != OVERFLOW:                 # on moderate scores an unshifted softmax is right
            assert explanation in diagnose_attention(wrong, X, W)
    assert diagnose_attention(ref.self_attention(X, *W), X, W) is None
    with np.errstate(all="ignore"):
        huge = attention_mistakes(300 * X, W)[OVERFLOW]
    assert diagnose_attention(huge, 300 * X, W) == OVERFLOW


def test_feedback_opens_with_the_one_cause_that_explains_several_failures():
    from posenc_autograder.checks.positional_encoding.catalogue import FLOAT32_TABLE
    from posenc_autograder.grading.pipeline import fix_this_first
    from posenc_autograder.results import GradedTest
    failed = failures(namespace_from(SOLUTION, FLOAT32_TABLE))
    tests = [GradedTest(cid, cid, True, 0.0, 1.0, problems) for cid, problems in failed.items()]
    [note] = fix_this_first(tests)
    assert note.text.startswith("Fix this first: the values are off by up to") and "float32" in note.text
    assert "hidden_pe_values" in note.text and "hidden_pe_stability" in note.text
    assert fix_this_first(tests[:1]) == []          # a cause behind one failure only is no root cause


def test_run_report_lists_each_students_failed_visible_checks():
    from posenc_autograder.reports.run_report import visible_failures_section
    from posenc_autograder.results import GradedTest, NotebookResult
    tests = [GradedTest("test_pe_visible", "t", False, 0.0, 0.0, ["raised AssertionError"]),
             GradedTest("test_learned_visible", "t", False, 0.0, 0.0, []),
             GradedTest("hidden_pe_values", "t", True, 0.0, 4.0, ["wrong"])]
    lines = visible_failures_section([NotebookResult("ada", "positional_encoding", "nb", True, tests, []),
                                      NotebookResult("bob", "positional_encoding", "nb", True, tests[1:2], [])])
    assert [line for line in lines if line.startswith("- ")] == ["- ada / positional_encoding: test_pe_visible"]
    assert visible_failures_section([NotebookResult("bob", "a", "nb", True, tests[1:2], [])]) == []


def test_each_known_rotation_mistake_gets_its_own_diagnosis():
    from posenc_autograder.checks.positional_encoding import reference as ref
    from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_rotation
    d, k = 12, 5
    exact = ref.rotation_matrix_for_offset(d, k)
    half = d // 2
    pairs = np.empty(d, dtype=int)
    pairs[0::2], pairs[1::2] = np.arange(half), np.arange(half) + half
    back = np.argsort(pairs)
    wrong = {"transposed": exact.T, "offset +/- 1": ref.rotation_matrix_for_offset(d, k + 1),
             "(i, i + d/2)": exact[np.ix_(back, back)], "identity": np.eye(d)}
    for phrase, M in wrong.items():
        assert phrase in diagnose_rotation(M, d, k)
    assert diagnose_rotation(exact, d, k) is None


# --- one cause charged once: a float32 return costs the contracts test only ---------------------

def test_value_tests_judge_a_float32_return_at_float32_precision_and_a_float64_one_exactly():
    expected = np.sin(np.arange(1.0, 199.0)).reshape(9, 22)
    returned = expected.astype(np.float32)                     # a float32 array crosses the codec as it is
    rounded = returned.astype(np.float64)
    assert compare({"value": returned}, expected, "t", atol=1e-12) is None
    two_ulps = (rounded + 2 * np.spacing(returned).astype(np.float64)).astype(np.float32)
    assert "plus float32 rounding" in compare({"value": two_ulps}, expected, "t", atol=1e-12)
    assert compare({"value": rounded}, expected, "t", atol=1e-12) is not None          # float32 digits, float64 return
    for forged in ("float32", "float16", "int64", ["float32"], None):      # the precision is the array's, never a claim
        assert compare({"value": rounded, "dtype": forged}, expected, "t", atol=1e-12) is not None
    assert compare({"value": expected.astype(np.float16)}, expected, "t", atol=1e-12) is not None


def test_a_float32_return_needs_no_fix_this_first_and_a_float32_computation_still_gets_one():
    from posenc_autograder.checks.positional_encoding.catalogue import FLOAT32_TABLE
    from posenc_autograder.grading.pipeline import fix_this_first
    from posenc_autograder.results import GradedTest
    notes = {}
    float32_return = next(m.code for m in MISTAKES if m.name == "float32 table")
    for name, code in (("return", float32_return), ("computation", FLOAT32_TABLE)):
        failed = failures(namespace_from(SOLUTION, code))
        notes[name] = fix_this_first([GradedTest(cid, cid, True, 0.0, 1.0, p) for cid, p in failed.items()])
    assert notes["return"] == []
    [note] = notes["computation"]
    assert "float32 rounding" in note.text and "hidden_pe_values" in note.text and "hidden_contracts" not in note.text


def test_the_readme_counts_the_whole_catalogue():
    from notebook_tools import ROOT

    from posenc_autograder.checks.catalogue import catalogues
    readme = " ".join((ROOT / "README.md").read_text().split())
    mistakes = sum(len(m) for m, _ in catalogues().values())
    alternatives = sum(len(a) for _, a in catalogues().values())
    assert f"({mistakes} catalogued mistakes and {alternatives} correct alternative implementations" in readme


def test_one_class_named_problem_where_judges_meet_it():
    """checks.comparison's Problem is the results' Problem (a sentence with its cause); what the readers raise at a
    judge is another class, Rejected."""
    from posenc_autograder import results
    from posenc_autograder.checks import comparison as base
    assert base.Problem is results.Problem and not issubclass(base.Rejected, str)
    said = base.problems_of(lambda: base.as_array("text", "f(3)"))
    assert said == ["f(3) should be a numpy array of numbers, got str"]


@pytest.mark.parametrize("key", ["exponent", "doubled_exponent", "spacing"])
def test_the_frequency_mistakes_are_written_once_and_matched_with_one_tolerance(key):
    """The same wrong frequencies, a hair off (1e-7, as a student's own formula may be), are named by the
    sinusoidal table's diagnosis and by RoPE's frequency test alike."""
    from posenc_autograder.checks.diagnosis import MATCH_TOLERANCE, frequency_mistakes
    from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_pe_table
    from posenc_autograder.checks.positional_encoding.reference import DEFAULT_BASE
    from posenc_autograder.checks.rope_alibi import parts as rope
    omega = frequency_mistakes(16, DEFAULT_BASE)[key]
    angles = np.arange(12.0)[:, None] * omega[None, :]
    table = np.empty((12, 16))
    table[:, 0::2], table[:, 1::2] = np.sin(angles), np.cos(angles)
    assert diagnose_pe_table(table + MATCH_TOLERANCE / 10, 12, 16) is not None
    said = rope._frequency_problem(16, {"value": omega + MATCH_TOLERANCE / 10}, "rope_frequencies(16)")
    assert rope.DIAGNOSES[key] in said


@pytest.mark.parametrize("cell_id", sorted(c for c, t in REGISTRY.items() if t.partial))
def test_a_partial_test_s_judge_returns_its_cases_with_its_problems(cell_id):
    """Partial credit travels in what the judge returns (Findings: problems, cases, failures), not beside it."""
    import contextvars

    from posenc_autograder.checks import hidden as base
    test = REGISTRY[cell_id]
    record = solution_record(cell_id)
    extra = {"verdicts": {}} if test.reads_verdicts else {}
    found = test.judge(test.plain_inputs(), record["observations"], **extra)
    assert list(found) == [] and found.cases > 1 and found.failed == 0
    assert not [name for name, value in vars(base).items() if isinstance(value, contextvars.ContextVar)]


def test_a_failed_contract_names_its_own_cause_or_the_one_its_value_tests_found():
    from posenc_autograder.checks.contracts import CAUSES
    code = {m.name: m.code for m in MISTAKES}
    swapped = failures(namespace_from(SOLUTION, code["sin and cos swapped"]))
    [contract] = swapped["hidden_contracts"]
    assert contract.cause and contract.cause == swapped["hidden_pe_values"][0].cause
    assert contract.cause in contract.text           # the sentence says which failure its point waits on
    for mistake, cause in (("float32 table", CAUSES["dtype"]),
                           ("learned forward with X += (in place)", CAUSES["in_place"])):
        assert [p.cause for p in failures(namespace_from(SOLUTION, code[mistake]))["hidden_contracts"]] == [cause]
    both = failures(namespace_from(SOLUTION, code["float32 computation returned as float32"]))   # one mistake
    assert CAUSES["dtype"] in both["hidden_contracts"][0].text
    assert both["hidden_contracts"][0].cause == both["hidden_pe_values"][0].cause
    raised = failures(namespace_from(SOLUTION, code["dot products without the transpose"]))["hidden_contracts"]
    assert raised[0].cause.startswith("ValueError: matmul")


def test_an_integer_table_is_named_as_such_by_every_test_it_fails():
    """A table built with dtype=int fails the structure tests too (identical rows, no wavelength): each says the one
    cause its values show, never that no known mistake matches. Before, those two said "No known mistake"."""
    from posenc_autograder.checks.comparison import NO_KNOWN_MISTAKE, WHOLE_NUMBERS
    from posenc_autograder.results import ProblemKind
    code = {m.name: m.code for m in MISTAKES}
    failed = failures(namespace_from(SOLUTION, code["integer table"]))
    assert {"hidden_pe_unique_bounded", "hidden_pe_frequency"} <= set(failed)
    said = {cid: {p.cause for p in problems if p.kind == ProblemKind.VALUE} for cid, problems in failed.items()}
    assert said == dict.fromkeys(failed, {WHOLE_NUMBERS}), said
    assert not [p.text for problems in failed.values() for p in problems if NO_KNOWN_MISTAKE in p.text]


def test_a_transposed_table_is_said_to_look_transposed_in_one_voice():
    """A table of shape (d_model, seq_len) is said to look transposed by every test that reads its shape, and no
    sentence then adds that no known mistake matches. Before, hidden_pe_shapes' first case said both, its second
    case only the first, and the structure tests the same mix."""
    from posenc_autograder.checks.comparison import NO_KNOWN_MISTAKE
    from posenc_autograder.results import ProblemKind
    code = {m.name: m.code for m in MISTAKES}
    failed = failures(namespace_from(SOLUTION, code["transposed table"]))
    said = [p for cid, problems in failed.items() if cid != "hidden_contracts" for p in problems
            if p.kind == ProblemKind.VALUE]
    assert {"hidden_pe_shapes", "hidden_pe_unique_bounded", "hidden_pe_frequency"} <= set(failed)
    assert all("(it looks transposed)" in p.text and p.cause for p in said), [p.text for p in said]
    assert not [p.text for p in said if NO_KNOWN_MISTAKE in p.text]


def test_a_table_one_row_short_is_said_to_be_an_off_by_one():
    """A table of seq_len - 1 rows (positions that stop one short) is said to have one row too few, an off-by-one,
    by every test that reads its shape, never that no known mistake matches (before: 'has shape (4, 6), expected
    (5, 6). No known mistake matches this answer.')."""
    from posenc_autograder.checks.comparison import NO_KNOWN_MISTAKE, shape_pattern
    from posenc_autograder.results import ProblemKind
    code = {m.name: m.code for m in MISTAKES}
    failed = failures(namespace_from(SOLUTION, code["one position too few"]))
    said = [p for cid, problems in failed.items() if cid != "hidden_contracts" for p in problems
            if p.kind == ProblemKind.VALUE]
    assert said and all("(one row too few: an off-by-one" in p.text and p.cause for p in said), [p.text for p in said]
    assert not [p.text for problems in failed.values() for p in problems if NO_KNOWN_MISTAKE in p.text]
    assert shape_pattern((3, 5), (3, 4))[0].startswith("one column too many")
    assert shape_pattern((4,), (5,))[0].startswith("one entry too few")
    assert shape_pattern((3, 6), (5, 6)) is None and shape_pattern((2, 3, 4), (3, 4)) is None


def test_the_integer_contract_says_what_it_accepts():
    """A count promised as an integer passes as a Python int or a numpy integer (the self-check accepts both too), so
    no word a student reads (the test's title, its spec bullet, a failure's sentence, the notebook's own words) asks
    for 'a Python int'; a float fails, told it is not an integer. Before, all of them said 'a Python int'."""
    import nbformat

    from posenc_autograder.authoring.spec_bullets import all_spec_bullets
    from posenc_autograder.checks.contracts import kind_problem
    from posenc_autograder.checks.manifest import INT
    assert kind_problem({"type": "int"}, INT, "count") is None and kind_problem({"type": "int64"}, INT, "count") is None
    assert "expected an integer (int(...))" in str(kind_problem({"type": "float64", "float": True}, INT, "count"))
    test = REGISTRY["hidden_relative_positions_contracts"]
    notebook = nbformat.read(solution_notebook("relative_positions"), as_version=4)
    words = [test.title, *(all_spec_bullets()[bullet][1] for bullet in test.bullets),
             " ".join(" ".join(cell.source for cell in notebook.cells).split()),
             str(kind_problem({"type": "str"}, INT, "count"))]
    assert not [w[:80] for w in words if "Python int" in w or "Python `int`" in w]


def test_rows_apart_block_by_block_is_the_whole_distance_matrix_s_verdict():
    from posenc_autograder.checks.positional_encoding import reference, sinusoidal
    base = reference.sinusoidal_positional_encoding(1000, 12)
    tables = [base]
    for first, second, apart in [(3, 700, 0.0), (0, 999, 1e-7), (64, 65, 1e-5), (127, 128, 3e-7), (5, 5, 0.0)]:
        table = base.copy()
        table[second] = table[first] + apart
        tables.append(table)
    tables.append(np.tile(base[:10], (100, 1)) * 1e160)          # squares overflow: NaN distances fail both ways
    for table in tables:
        with np.errstate(all="ignore"):
            squared = (table ** 2).sum(axis=1)
            distances = squared[:, None] + squared[None, :] - 2 * table @ table.T
            np.fill_diagonal(distances, np.inf)
            assert sinusoidal._rows_apart(table, 1e-12) == bool(distances.min() > 1e-12)


def test_a_table_met_before_takes_its_kept_rows_apart_verdict_and_only_an_equal_one(monkeypatch):
    from posenc_autograder.checks.positional_encoding import reference, sinusoidal
    worked_out, original = [], sinusoidal._rows_apart_worked_out

    def counted(table, least):
        worked_out.append(table.shape)
        return original(table, least)
    monkeypatch.setattr(sinusoidal, "_rows_apart_worked_out", counted)
    kept = sinusoidal._KeptVerdicts(kept=2)
    base = reference.sinusoidal_positional_encoding(1000, 12)
    repeated = base.copy()
    repeated[700] = repeated[3]
    assert kept.rows_apart(base, 1e-12) and kept.rows_apart(base.copy(), 1e-12)       # an equal table: kept
    assert not kept.rows_apart(repeated, 1e-12) and not kept.rows_apart(repeated.copy(), 1e-12)
    assert len(worked_out) == 2
    one_bit = base.copy()
    one_bit.view(np.uint64)[5, 5] ^= 1                          # the last bit of one entry: another table
    assert kept.rows_apart(one_bit, 1e-12) == original(one_bit, 1e-12)
    assert kept.rows_apart(base.reshape(2000, 6), 1e-12) == \
        original(base.reshape(2000, 6), 1e-12)   # same bytes, another shape
    kept.rows_apart(base, 1.0)                                  # another bound
    assert len(worked_out) == 5 and len(kept.verdicts) == 2     # the least recently used let go
    assert kept.rows_apart(base, 1.0) is kept.rows_apart(base, 1.0) and len(worked_out) == 5
