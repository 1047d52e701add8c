"""The assignment relative_positions: the visible checks speak the hidden tests' words, report each catalogued mistake
and pass each alternative, whatever the student's namespace holds; the reference's facts hold (T5's buckets as
Hugging Face computes them, in float32 too; the relative shift as Transformer-XL's padding trick; Shaw's and
Transformer-XL's logits as their direct formulas). The catalogue itself is graded in test_catalogue.py."""
import contextlib
import io
import math

import nbformat
import numpy as np
import pytest
from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks.relative_positions import reference as ref
from posenc_autograder.checks.relative_positions.catalogue import ALTERNATIVES, MISTAKES
from posenc_autograder.checks.relative_positions.common import DIAGNOSES
from posenc_autograder.checks.relative_positions.stand_ins import bucket, bucket_stand_in
from posenc_autograder.checks.relative_positions.t5 import STAND_IN, _bucket_inputs, _stand_in_buckets_used
from posenc_autograder.checks.relative_positions.xl import _padding_trick
from posenc_autograder.course import grade_id

NOTEBOOK = solution_notebook("relative_positions")
SOLUTION = implementation_source(NOTEBOOK)
CELLS = {grade_id(c): c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells}
VISIBLE = ("test_shaw_visible", "test_t5_visible", "test_xl_visible", "test_analysis_visible")
PARTS = ("Part 1", "Part 2", "Part 3", "Part 4")


def visible(*overrides) -> tuple[dict, str | None, str]:
    """The visible checks and the summary as `nbgrader validate` runs them: (failures per part, summary error,
    what they printed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ns = namespace_from(SOLUTION, *overrides)
        for cell in VISIBLE:
            exec(compile(CELLS[cell], "<visible>", "exec"), ns)  # noqa: S102 - the course's own cells
        try:
            exec(compile(CELLS["visible_summary"], "<summary>", "exec"), ns)  # noqa: S102
        except AssertionError as failure:
            return ns["SELF_CHECK"].results, str(failure), out.getvalue()
    return ns["SELF_CHECK"].results, None, out.getvalue()


def test_the_notebook_names_the_known_mistakes_in_the_hidden_tests_words():
    ns = namespace_from(SOLUTION)
    assert ns["SELF_CHECK"].words == DIAGNOSES


def test_the_catalogue_covers_every_test_and_every_diagnosis_but_the_named_few():
    """Every hidden test has a catalogued mistake; every diagnosis is a catalogued mistake's, but for the wrong answers
    the judges name without a catalogue entry of their own (a reversed shift, cosines first, the keys after the
    query kept in the logits)."""
    from posenc_autograder.checks import hidden_tests
    assert {m.failing_check for m in MISTAKES} == {t.id for t in hidden_tests("relative_positions")}
    phrases = [m.feedback_phrase for m in MISTAKES]
    assert {key for key, text in DIAGNOSES.items() if not any(p in text for p in phrases)} == \
        {"shift_reversed", "encodings_cos_first", "xl_future_kept"}


VISIBLE_MISTAKES = [m for m in MISTAKES if not m.name.startswith(("stub", "analysis: a numpy"))
                    and m.name not in ("XL logits: not shifted",)]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("mistake", VISIBLE_MISTAKES, ids=lambda m: m.name)
def test_visible_checks_report_each_mistake_in_its_words_and_the_summary_fails(mistake):
    results, summary, _ = visible(mistake.code)
    said = " ".join(" ".join(" ".join(problems) for problems in results.values()).split())
    assert summary is not None and mistake.feedback_phrase in said, said


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_visible_checks_pass_every_alternative(name):
    results, summary, _ = visible(ALTERNATIVES[name])
    assert (results, summary) == ({part: [] for part in PARTS}, None)


HOSTILE_NAMESPACE = '''
from numpy import *
max, min, sum, abs, round, all, any = (lambda *a, **k: 0,) * 7
def close(*args, **kwargs):
    raise RuntimeError("the student's own close")
message = array = known = words = MISTAKE_WORDS = tools = None
'''


def test_visible_checks_are_not_changed_by_the_student_s_namespace():
    """`from numpy import *`, builtins shadowed, the helpers' plain names redefined: the solution still passes, and a
    mistake is still named in its words."""
    assert visible(HOSTILE_NAMESPACE)[:2] == ({part: [] for part in PARTS}, None)
    wrong = next(m for m in MISTAKES if m.name == "T5 backward: grad[buckets] += (repeats lost)")
    results, summary, _ = visible(HOSTILE_NAMESPACE, wrong.code)
    assert summary is not None and wrong.feedback_phrase in " ".join(" ".join(results["Part 2"]).split())


@pytest.mark.parametrize("bad, said", [("np.nan", "NaN or infinite"), ("np.inf", "NaN or infinite")])
def test_a_non_finite_answer_is_reported_as_such_at_its_first_place(bad, said):
    code = ("_logits = xl_relative_logits\ndef xl_relative_logits(q, k, r, u, v):\n    out = _logits(q, k, r, u, v)\n"
            f"    out[1, 2] = {bad}\n    return out\n")
    results, summary, _ = visible(code)
    assert summary is not None and said in results["Part 3"][0] and "(1, 2)" in results["Part 3"][0]


def test_a_wrong_shape_is_named_with_both_shapes():
    code = "_index = relative_position_index\ndef relative_position_index(q_len, k_len, m):\n" \
           "    return _index(q_len, k_len, m).T\n"
    results, _, _ = visible(code)
    assert "expected shape (3, 4), got (4, 3) (it looks transposed)" in results["Part 1"][0]


# --- the reference's facts ------------------------------------------------------------------------------------

def hugging_face_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """Hugging Face's T5Attention._relative_position_bucket, line by line in numpy, its logs in float32 as torch's
    relative_position.float() takes them."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).astype(np.int64) * num_buckets
        relative_position = np.abs(relative_position)
    else:
        relative_position = -np.minimum(relative_position, np.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    with np.errstate(divide="ignore"):
        relative_position_if_large = max_exact + (
            np.log(relative_position.astype(np.float32) / np.float32(max_exact))
            / np.float32(math.log(max_distance / max_exact)) * np.float32(num_buckets - max_exact)).astype(np.int64)
    relative_position_if_large = np.minimum(relative_position_if_large, num_buckets - 1)
    return relative_buckets + np.where(is_small, relative_position, relative_position_if_large)


def test_t5_buckets_are_hugging_face_s_in_float64_and_float32_on_every_hidden_case():
    for case in _bucket_inputs()["groups"]["buckets"]:
        n = np.asarray(case["args"][0], dtype=np.int64)
        ours = ref.t5_relative_bucket(n, *case["args"][1:], **case["kwargs"])
        assert ours.dtype.kind == "i" and ours.shape == n.shape
        np.testing.assert_array_equal(ours, hugging_face_bucket(n, *case["args"][1:], **case["kwargs"]))


def test_t5_buckets_by_hand():
    """T5's defaults: 16 buckets a direction, distances below 8 exact, 8 + floor(2 log2(r / 8)) above, capped at 15;
    causal: 32 buckets, 16 exact, keys after the query in bucket 0."""
    n = np.array([-1000, -128, -127, -16, -15, -9, -8, -7, 0, 7, 8, 16, 128])
    assert ref.t5_relative_bucket(n).tolist() == [15, 15, 15, 10, 9, 8, 8, 7, 0, 23, 24, 26, 31]
    assert ref.t5_relative_bucket(n, False).tolist() == [31, 31, 31, 16, 15, 9, 8, 7, 0, 0, 0, 0, 0]
    assert ref.t5_buckets_used(512, 512, False) == 32 and ref.t5_buckets_used(512, 512, True) == 31


# (q_len, k_len, bidirectional, num_buckets, max_distance), none a hidden test's own case (its count is remembered)
COUNTED_LAYERS = [(1, 1, True, 32, 128), (1, 7, False, 32, 128), (7, 1, True, 32, 128), (213, 347, True, 32, 128),
                  (347, 213, False, 16, 64), (90, 90, True, 8, 20)]


def _used_by_every_pair(buckets, q_len, k_len, *settings) -> int:
    return int(np.unique(buckets(ref.t5_distances(q_len, k_len), *settings)).size)


def test_the_buckets_a_layer_uses_are_counted_from_its_distances_as_from_every_pair(monkeypatch):
    """The reference's count and the stand-in's are what np.unique over every pair's bucket gives, without making
    the q_len x k_len pairs (the old code's 2048 x 2048 layers cost each process ~0.5 CPU-s)."""
    stand_in = bucket(bucket_stand_in(*STAND_IN))
    expected = [(_used_by_every_pair(ref.t5_relative_bucket, *layer), _used_by_every_pair(stand_in, *layer))
                for layer in COUNTED_LAYERS]
    monkeypatch.setattr(ref, "t5_distances", lambda *args: pytest.fail("every pair's distance made"))
    assert [(ref.t5_buckets_used(*layer), _stand_in_buckets_used(*layer)) for layer in COUNTED_LAYERS] == expected


def test_t5_backward_is_the_bias_s_gradient():
    rng = np.random.default_rng(3)
    table, grad = rng.normal(size=(16, 3)), rng.normal(size=(3, 7, 11))
    analytic = ref.t5_bias_backward(grad, 16, False, 20)
    numeric = np.zeros_like(table)
    for index in np.ndindex(table.shape):
        step = np.zeros_like(table)
        step[index] = 1e-6
        numeric[index] = ((ref.t5_bias(table + step, 7, 11, False, 20) - ref.t5_bias(table - step, 7, 11, False, 20))
                          * grad).sum() / 2e-6
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("q_len, k_len", [(4, 4), (3, 7), (1, 5), (6, 9)])
def test_the_relative_shift_is_transformer_xl_s_padding_trick_where_the_query_sees(q_len, k_len):
    scores = np.random.default_rng(q_len * k_len).normal(size=(q_len, k_len))
    sees = ref.visible_mask(q_len, k_len)
    np.testing.assert_array_equal(ref.relative_shift(scores)[sees], _padding_trick(scores)[sees])
    assert not ref.relative_shift(scores)[~sees].any()


def test_shaw_and_transformer_xl_against_their_direct_formulas():
    rng = np.random.default_rng(4)
    q, k, table, v = rng.normal(size=(5, 3)), rng.normal(size=(8, 3)), rng.normal(size=(7, 3)), rng.normal(size=(8, 3))
    index = lambda i, j: min(max(j - i, -3), 3) + 3                                        # noqa: E731
    logits = [[q[i] @ (k[j] + table[index(i, j)]) / np.sqrt(3) for j in range(8)] for i in range(5)]
    np.testing.assert_allclose(ref.shaw_logits(q, k, table, 3), logits, rtol=1e-12)
    weights = rng.random((5, 8))
    output = [sum(weights[i, j] * (v[j] + table[index(i, j)]) for j in range(8)) for i in range(5)]
    np.testing.assert_allclose(ref.shaw_output(weights, v, table, 3), output, rtol=1e-12)
    u, w, r = rng.normal(size=3), rng.normal(size=3), rng.normal(size=(8, 3))
    np.testing.assert_allclose(ref.xl_relative_logits(q, k, r, u, w), ref.xl_direct_logits(q, k, r, u, w),
                               rtol=1e-12, atol=1e-12)


def test_a_call_the_index_stand_in_does_not_answer_is_said_in_the_students_terms():
    """shaw_output called relative_position_index(k_len, q_len, ...): the stand-in's message named neither the call
    nor what it answers ("the grader's stand-in has no answer for 3/8/1": fails on the old code); it passes the
    grader's check on what a message may quote, the shipped stand-in's code included."""
    import pathlib

    from posenc_autograder.checks.relative_positions import stand_ins
    from posenc_autograder.grading.execute import code_only, short_message
    from posenc_autograder.probes.helpers import describe
    stand_in = stand_ins.index(stand_ins.index_stand_in({(8, 3, 1): np.zeros((8, 3), dtype=np.int64)}))
    assert stand_in(8, 3, 1).shape == (8, 3)
    with pytest.raises(LookupError) as raised:
        stand_in(3, 8, 1)
    said = describe(raised.value)
    assert said == ("LookupError: relative_position_index(3, 8, 1): the grader's stand-in answers only this case's "
                    "calls, relative_position_index(query length, key length, max_distance)")
    assert short_message(said, code_only(pathlib.Path(stand_ins.__file__).read_text())) == said
