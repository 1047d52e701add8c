"""The bonus assignment's hidden tests: the solution passes, plausible mistakes fail with a diagnosis."""
import pytest
from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.rope_alibi.catalogue import ALTERNATIVES as ROPE_ALTERNATIVES
from posenc_autograder.checks.rope_alibi.catalogue import MISTAKES as ROPE_MISTAKES
from posenc_autograder.checks.rope_alibi.catalogue import UNFINISHED as ROPE_UNFINISHED

SOLUTION = implementation_source(solution_notebook("rope_alibi"))
CHECKS = [cid for cid, c in REGISTRY.items() if c.assignment == "rope_alibi"]


def failures(ns):
    from posenc_autograder.notebook import graded_in_process
    return {cid: problems for cid, (problems, _, _) in graded_in_process("rope_alibi", ns).items() if problems}


def test_solution_passes():
    assert failures(namespace_from(SOLUTION)) == {}


def points_lost(ns) -> dict[str, float]:
    """Per failed hidden test, the points lost, partial credit included, as `make grade` counts them."""
    from posenc_autograder.notebook import graded_in_process
    return {cid: REGISTRY[cid].points - REGISTRY[cid].points_for(passed, total)
            for cid, (problems, passed, total) in graded_in_process("rope_alibi", ns).items() if problems}


def test_every_hidden_test_has_a_catalogued_mistake_and_every_diagnosis_a_mistake_that_gets_it():
    from posenc_autograder.checks.rope_alibi.parts import DIAGNOSES
    assert {m.failing_check for m in ROPE_MISTAKES} == set(CHECKS)
    phrases = " ".join(m.feedback_phrase for m in ROPE_MISTAKES)
    assert [key for key, text in DIAGNOSES.items() if not any(
        m.feedback_phrase in text for m in ROPE_MISTAKES)] == [], phrases


# --- partial credit: independent cases earn their share, rounded down to a half point ----------

def test_independent_cases_earn_their_share_of_the_points():
    from posenc_autograder.notebook import record_in_process
    test = REGISTRY["hidden_alibi_slopes"]
    naive = "def alibi_slopes(n_heads):\n    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)\n"
    problems, passed, total = test.graded(record_in_process(test.task_entry(), namespace_from(SOLUTION, naive)))
    cases = test.inputs()["groups"]["slopes"]
    powers_of_two = [c for c in cases if c["args"][0] & (c["args"][0] - 1) == 0]
    assert problems and (passed, total) == (len(powers_of_two), len(cases))
    assert test.points_for(passed, total) == int(2 * test.points * passed / total) / 2 < test.points


def test_a_test_whose_cases_are_not_independent_stays_all_or_nothing():
    test = REGISTRY["hidden_pe_unique_bounded"]
    assert not test.partial and test.points_for(9, 10) == 0.0 and test.points_for(10, 10) == test.points


# --- the visible checks name each known mistake in the hidden tests' words ----------------------

def _assertion_text(check) -> str:
    with pytest.raises(AssertionError) as failure:
        check()
    return " ".join(str(failure.value).split())        # the notebook wraps its messages for nbgrader validate


def test_visible_checks_name_each_known_mistake_in_the_hidden_tests_words():
    import numpy as np

    from posenc_autograder.checks.contracts import CAUSES
    from posenc_autograder.checks.rope_alibi.parts import DIAGNOSES
    helpers = namespace_from(SOLUTION)["self_check"]    # the notebook's own helpers, as a downloaded copy runs them
    named = {*helpers.frequency_mistakes(4, 1e4), *helpers.rope_mistakes(np.zeros((2, 4)), [0, 1], np.ones(2)),
             *helpers.score_mistakes(np.ones((1, 1)), 4), *helpers.slope_mistakes(6),
             *helpers.bias_mistakes(np.ones(2), 3)}
    assert named == set(DIAGNOSES.values())

    def add_in_place(x):
        x += 1.0
        return x

    texts = {"dtype": _assertion_text(lambda: helpers.check_array(np.zeros(2, np.float32), (2,), "f")),
             "list": _assertion_text(lambda: helpers.check_array([0.0, 1.0], (2,), "f")),
             "in_place": _assertion_text(lambda: helpers.check_unchanged(add_in_place, np.zeros(2), names=["x"],
                                                                         what="f"))}
    assert {key: CAUSES[key] in text for key, text in texts.items()} == dict.fromkeys(texts, True), texts


VISIBLE_CELLS = ("test_rope_visible", "test_alibi_visible", "visible_summary")


def visible_failure(ns) -> str | None:
    """What the notebook's visible checks say about the namespace (whitespace joined), run in-process as
    `nbgrader validate` runs them, or None when they pass."""
    import contextlib
    import io

    import nbformat

    from posenc_autograder.course import grade_id
    cells = [c.source for c in nbformat.read(solution_notebook("rope_alibi"), as_version=4).cells
             if grade_id(c) in VISIBLE_CELLS]
    assert len(cells) == len(VISIBLE_CELLS)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            for source in cells:
                exec(compile(source, "<visible>", "exec"), ns)  # noqa: S102 - the course's own cells
    except AssertionError as failure:
        return " ".join(str(failure).split())
    except Exception as failure:  # noqa: BLE001 - a stub's NotImplementedError stops the checks too
        return f"{type(failure).__name__}: {failure}"
    return None


@pytest.mark.parametrize("mistake", ROPE_MISTAKES, ids=lambda m: m.name)
def test_visible_checks_catch_each_mistake_with_the_hidden_tests_diagnosis(mistake):
    """Each mistake fails the visible checks, with the hidden tests' diagnosis (an unfinished or degenerate part:
    any failure, a stub's NotImplementedError included)."""
    said = visible_failure(namespace_from(SOLUTION, mistake.code))
    unfinished = mistake.name in {m.name for m in ROPE_UNFINISHED}
    assert said is not None and (unfinished or mistake.feedback_phrase in said), said


@pytest.mark.parametrize("name", sorted(ROPE_ALTERNATIVES))
def test_visible_checks_pass_every_correct_alternative(name):
    assert visible_failure(namespace_from(SOLUTION, ROPE_ALTERNATIVES[name])) is None


def test_degenerate_parts_earn_nothing():
    """Zero slopes, frequencies or rotations cannot make all-zero biases, identity rotations or zero scores right:
    each subject runs on the grader's stand-ins, and a degenerate part earns nothing of its own either."""
    zeros = {"alibi_bias": "def alibi_slopes(n_heads):\n    return np.zeros(n_heads)\n"
                           "def alibi_bias(n_heads, seq_len):\n    return np.zeros((n_heads, seq_len, seq_len))\n",
             "apply_rope": "def rope_frequencies(head_dim, base=10000.0):\n"
                           "    return np.full(head_dim // 2, 2 * np.pi)\n"
                           "def apply_rope(x, positions, base=10000.0):\n    return x.copy()\n",
             "rope_scores": "def apply_rope(x, positions, base=10000.0):\n    return np.zeros(x.shape)\n"
                            "def rope_scores(q, k, q_positions, k_positions):\n    return np.zeros((len(q), len(k)))\n"}
    judged_alone = {"alibi_bias": 2, "apply_rope": 4, "rope_scores": 3}     # an all-zero bias is right for L = 1
    for function, code in zeros.items():
        lost = points_lost(namespace_from(SOLUTION, code))
        test = next(cid for cid in CHECKS if REGISTRY[cid].subjects == (function,))
        assert lost.get(test) == judged_alone[function], (function, lost)
