"""The bonus assignment context_extension: the solution passes, each catalogued mistake fails exactly its own
hidden test with its diagnosis and its points, correct alternatives get full marks, the visible checks say the
same, and the reference's facts about the schemes hold."""
import contextlib
import io
import math

import nbformat
import numpy as np
import pytest
from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.context_extension import reference as ref
from posenc_autograder.checks.context_extension.catalogue import ALTERNATIVES as CONTEXT_ALTERNATIVES
from posenc_autograder.checks.context_extension.catalogue import MISTAKES as CONTEXT_MISTAKES
from posenc_autograder.checks.context_extension.layers import GEMMA3, LAYER_DIAGNOSES
from posenc_autograder.checks.context_extension.parts import DIAGNOSES, LLAMA31
from posenc_autograder.checks.context_extension.reference import layer_rotation_angles
from posenc_autograder.course import grade_id

NOTEBOOK = solution_notebook("context_extension")
SOLUTION = implementation_source(NOTEBOOK)
CHECKS = [cid for cid, test in REGISTRY.items() if test.assignment == "context_extension"]
def quiet_namespace(*overrides):
    with contextlib.redirect_stdout(io.StringIO()):
        return namespace_from(SOLUTION, *overrides)


# The catalogue's mistakes and alternatives are graded with the other assignments' in test_catalogue.py.
def test_catalogue_covers_every_test_and_every_diagnosis():
    assert len(CONTEXT_MISTAKES) >= 12 and len(CONTEXT_ALTERNATIVES) >= 4
    assert {m.failing_check for m in CONTEXT_MISTAKES} == set(CHECKS)
    phrases = [m.feedback_phrase for m in CONTEXT_MISTAKES]
    diagnoses = {**DIAGNOSES, **LAYER_DIAGNOSES}
    assert [key for key, text in diagnoses.items() if not any(p in text for p in phrases)] == []


# --- the visible checks: same words, every failure reported, a summary that fails ----------------------

VISIBLE = ("test_interpolation_visible", "test_yarn_visible", "test_llama_visible", "test_angles_visible",
           "test_attention_visible", "test_layers_visible")


def visible(ns) -> tuple[dict, str | None]:
    """Run the visible checks and the summary as `nbgrader validate` would: (failures per part, summary error)."""
    cells = {grade_id(c): c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells}
    with contextlib.redirect_stdout(io.StringIO()):
        for cell in VISIBLE:
            exec(compile(cells[cell], "<visible>", "exec"), ns)  # noqa: S102 - the course's own cells
        try:
            exec(compile(cells["visible_summary"], "<summary>", "exec"), ns)  # noqa: S102
        except AssertionError as failure:
            return ns["self_check"].RESULTS, str(failure)
    return ns["self_check"].RESULTS, None


def test_the_notebook_names_the_known_mistakes_in_the_hidden_tests_words():
    ns = quiet_namespace()
    named = {*ns["self_check"].interpolation_mistakes(np.arange(3), 2, 4), *ns["self_check"].ntk_mistakes(1e4, 2.0, 8),
             *ns["self_check"].yarn_mistakes(8, 1e4, 2.0, 64), *ns["self_check"].scale_mistakes(2.0),
             *ns["self_check"].llama_mistakes(*LLAMA31), *ns["self_check"].angle_mistakes(np.ones(2), np.arange(2)),
             *ns["self_check"].seen_mistakes(np.ones(2), 4), *ns["self_check"].ATTENTION_CAUSES.values()}
    named.discard("non-finite")
    named.add(ns["self_check"].ntk_mistakes(1e4, 2.0, 8)["non-finite"])
    assert named == set(DIAGNOSES.values()) - {DIAGNOSES["index_ramp"]}
    assert set(ns["self_check"].layer_mistakes(*GEMMA3)) == set(LAYER_DIAGNOSES.values())


@pytest.mark.parametrize("mistake", [m for m in CONTEXT_MISTAKES if "index" not in m.name], ids=lambda m: m.name)
def test_visible_checks_report_each_mistake_and_the_summary_fails(mistake):
    results, summary = visible(quiet_namespace(mistake.code))
    said = " ".join(" ".join(problems) for problems in results.values())
    assert summary is not None and mistake.feedback_phrase in " ".join(said.split()), said
    assert "at index ()" not in said, said                      # a wrong number is named without an index


@pytest.mark.parametrize("name", sorted(CONTEXT_ALTERNATIVES))
def test_visible_checks_pass_every_alternative(name):
    assert visible(quiet_namespace(CONTEXT_ALTERNATIVES[name])) == ({f"Part {i}": [] for i in range(1, 7)}, None)


def test_a_stub_fails_its_part_and_the_others_still_run():
    stub = "def yarn_frequencies(*args, **kwargs):\n    raise NotImplementedError()\n"
    results, summary = visible(quiet_namespace(stub))
    assert results["Part 2"] and all(not results[p] for p in ("Part 1", "Part 3", "Part 4", "Part 5"))
    assert summary is not None and "Part 2" in summary


# --- facts about the schemes, held by the reference ------------------------------------------------------

def _meta_apply_scaling(freqs, scale_factor, low_freq_factor, high_freq_factor, old_context_len):
    """Meta's apply_scaling (llama-models, models/llama3/reference_impl/model.py), rewritten pair by pair."""
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < old_context_len / high_freq_factor:
            out.append(freq)
        elif wavelen > old_context_len / low_freq_factor:
            out.append(freq / scale_factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            out.append((1 - smooth) * freq / scale_factor + smooth * freq)
    return np.array(out)


def test_llama31_published_configuration_matches_metas_rule_pair_by_pair():
    head_dim, base, factor, low, high, original = LLAMA31
    freqs = [1.0 / base ** (2 * i / head_dim) for i in range(head_dim // 2)]
    expected = _meta_apply_scaling(freqs, factor, low, high, original)
    np.testing.assert_allclose(ref.llama31_frequencies(*LLAMA31), expected, rtol=1e-12)
    wavelength = 2 * np.pi / np.array(freqs)
    assert ((wavelength < 2048).sum(), (wavelength > 8192).sum()) == (29, 29)      # 6 pairs blended


def test_unseen_angles_at_scale_4():
    """Pairs that saw only an arc in training and pass their largest angle at 4x: none with interpolation,
    YaRN or Llama 3.1's rule; NTK-aware scaling leaves all but the slowest such pair beyond it."""
    head_dim, base, train_len, scale = 64, 1e4, 512, 4.0
    omega = ref.angular_frequencies(head_dim, base)
    seen = ref.max_angle_seen(omega, train_len)
    long = np.arange(int(scale * train_len))

    def unseen(frequencies, positions=long):
        largest = ref.rotation_angles(frequencies, positions).max(axis=0)
        return int(((seen < 2 * np.pi) & (largest > seen * (1 + 1e-12))).sum())
    arc_only = int((seen < 2 * np.pi).sum())
    assert unseen(omega) == arc_only
    assert unseen(omega, ref.interpolated_positions(long, train_len, scale * train_len)) == 0
    assert unseen(ref.yarn_frequencies(head_dim, base, scale, train_len)) == 0
    assert unseen(ref.llama31_frequencies(head_dim, base, scale, 1.0, 4.0, train_len)) == 0
    assert unseen(ref.angular_frequencies(head_dim, ref.ntk_scaled_base(base, scale, head_dim))) == arc_only - 1


def test_attention_entropy_at_four_times_the_length_stays_in_band():
    """The integration test's band: for every scheme, the mean entropy of the last 16 queries at 4x the
    training length, divided by log(number of keys they see), is within 0.15 of the same for the 15 queries of
    a training-length sequence (YaRN's sharper attention included); and every weight is finite."""
    from posenc_autograder.checks.context_extension.parts import _attention_cases

    def normalised_entropy(weights, rows):
        w = weights[rows]
        entropy = -(w * np.log(np.where(w > 0, w, 1))).sum(axis=1)
        return float(np.mean(entropy / np.log(rows + 1)))
    cases = _attention_cases()
    for case in cases[:-1]:
        q, k, angles = case["args"]
        weights = ref.stretched_attention(q, k, angles, **case["kwargs"])
        training = ref.stretched_attention(q[:16], k[:16], angles[:16], **case["kwargs"])
        assert np.all(np.isfinite(weights))
        far, near = normalised_entropy(weights, np.arange(48, 64)), normalised_entropy(training, np.arange(1, 16))
        assert abs(far - near) < 0.15
    assert np.all(np.isfinite(ref.stretched_attention(*cases[-1]["args"])))


def test_gemma3_layers_by_hand():
    """Gemma 3's configuration: layers 5 and 11 of twelve are global; pair 0 (frequency 1) of a local layer turns
    1,023 radians at most (window 1,024), of a global layer 131,071 / 8; the slowest global pair is slower than
    the slowest local one by the bases' ratio 100 to the power 126/128, and by the factor 8."""
    angles = layer_rotation_angles(*GEMMA3)
    assert angles.shape == (12, 64)
    assert [layer for layer in range(12) if angles[layer, 0] != 1023.0] == [5, 11]
    assert angles[5, 0] == 131_071 / 8
    ratio = (angles[0, -1] / 1023) / (angles[5, -1] / 131_071)
    assert math.isclose(ratio, 100 ** (126 / 128) * 8, rel_tol=1e-12)


def test_a_right_answer_costs_its_judge_no_catalogue_of_mistakes(monkeypatch):
    """The named wrong answers are worked out only to explain a wrong answer: the solution's attention weights are
    judged without them (they were four extra attention computations a case), a wrong answer still gets its cause."""
    from posenc_autograder.checks.context_extension import parts
    from posenc_autograder.notebook import run_check
    monkeypatch.setattr(parts, "_attention_mistakes", lambda *args, **kwargs: pytest.fail("mistakes worked out"))
    assert run_check("hidden_stretched_attention", quiet_namespace()) == []
    monkeypatch.undo()
    wrong = [m for m in CONTEXT_MISTAKES if m.failing_check == "hidden_stretched_attention"]
    assert wrong, "the catalogue has an attention mistake"
    for mistake in wrong:
        problems = run_check("hidden_stretched_attention", quiet_namespace(mistake.code))
        assert any(mistake.feedback_phrase in p.text for p in problems), (mistake.name, problems)
