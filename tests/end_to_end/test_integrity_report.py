"""Per-student inputs and the integrity report, on a fixture class of 40 built in-process (~20 s)."""
import dataclasses
import re
import warnings

import numpy as np
import pytest
from integrity_fixtures import COMMON_MISTAKES, PLANTED, SOLUTION, TEMPLATES, fixture_class
from notebook_tools import ROOT, namespace_from

from posenc_autograder import cli
from posenc_autograder.checks import REGISTRY, variants
from posenc_autograder.checks.positional_encoding.catalogue import MISTAKES
from posenc_autograder.checks.reproduction import SHOWN_INPUT_NUMBERS
from posenc_autograder.integrity import report, text
from posenc_autograder.notebook import record_in_process
from posenc_autograder.probes import codec

SEEDS = [variants.seed_for(b"many-seeds", f"student{i}") for i in range(30)]
ALL_CHECKS = [cid for cid, c in REGISTRY.items() if c.assignment == "positional_encoding"]


# --- per-student inputs ----------------------------------------------------------------------

def _layout(value):
    """What a variant may not change: every shape, every number that is not drawn at random, the structure."""
    if isinstance(value, dict):
        return {k: _layout(v) for k, v in value.items()}
    if isinstance(value, list) and _drawn_integers(value):
        return ("integers", np.shape(value))
    if isinstance(value, list):
        return [_layout(v) for v in value]
    if isinstance(value, np.ndarray):
        return ("array", value.shape)
    return value


@pytest.mark.parametrize("cell_id", sorted(REGISTRY))
def test_every_variant_keeps_sizes_and_cases_and_draws_from_the_same_distribution(cell_id):
    check = REGISTRY[cell_id]
    course_wide = check.plain_inputs(None)
    drawn = [check.plain_inputs(seed) for seed in SEEDS]
    assert all(_layout(d) == _layout(course_wide) for d in drawn)
    arrays = [[v for v in _flat(d) if isinstance(v, np.ndarray)] for d in [course_wide] + drawn]
    for base, *mine in zip(*arrays, strict=True):
        assert all(np.all(np.isfinite(m)) for m in mine), cell_id
        varied = [m for m in mine if not np.array_equal(m, base)]
        if varied and base.size >= 20:           # drawn at random: at the scale of the course-wide draw
            ratio = np.sqrt(np.mean(np.square(varied))) / np.sqrt(np.mean(np.square(base)))
            assert 0.5 <= ratio <= 2, (cell_id, ratio)


def _drawn_integers(value: list) -> bool:
    """A table of at least 20 integers (distances, bucket indices): drawn per student like an array of floats."""
    try:
        table = np.asarray(value)
    except ValueError:                          # ragged: a structure, not a table
        return False
    return table.dtype.kind in "iu" and table.size >= 20


def _flat(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _flat(v)
    elif isinstance(value, list):
        for v in value:
            yield from _flat(v)
    else:
        yield value


def test_variants_differ_between_students_and_repeat_for_the_same_one():
    varied = [cid for cid in ALL_CHECKS
              if codec.dumps(REGISTRY[cid].plain_inputs(SEEDS[0])) != codec.dumps(REGISTRY[cid].plain_inputs(SEEDS[1]))]
    assert len(varied) >= 5, varied
    again = variants.seed_for(b"many-seeds", "student0")
    assert all(codec.dumps(REGISTRY[c].plain_inputs(again)) == codec.dumps(REGISTRY[c].plain_inputs(SEEDS[0]))
               for c in varied)
    assert variants.seed_for(b"another secret", "student0") != SEEDS[0]


def test_the_reference_passes_every_test_on_every_variant():
    ns = namespace_from(SOLUTION)
    for seed in SEEDS[:8]:
        failed = {cid: p for cid in ALL_CHECKS if (p := REGISTRY[cid].verdict(
            record_in_process(REGISTRY[cid].task_entry(seed), ns), seed))}
        assert failed == {}, seed


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.name)
def test_every_catalogued_mistake_fails_its_test_on_several_variants(mistake):
    check, ns = REGISTRY[mistake.failing_check], namespace_from(SOLUTION, mistake.code)
    for seed in SEEDS[:3]:
        problems = check.verdict(record_in_process(check.task_entry(seed), ns), seed)
        assert problems, (mistake.name, seed)
        if mistake.feedback_phrase:
            assert mistake.feedback_phrase in " ".join(p.text for p in problems), problems


def test_the_course_secret_is_made_once_kept_private_and_switched_off_by_variants_0(tmp_path, monkeypatch):
    class Course:
        def path(self, relative):
            return tmp_path / relative
    monkeypatch.delenv(variants.SECRET_ENV, raising=False)
    monkeypatch.delenv(variants.SWITCH_ENV, raising=False)
    first = variants.student_variant(Course(), "ann")
    assert (tmp_path / variants.SECRET_FILE).stat().st_mode & 0o077 == 0
    assert variants.student_variant(Course(), "ann") == first != variants.student_variant(Course(), "ben")
    monkeypatch.setenv(variants.SECRET_ENV, "the instructor's own secret")
    assert variants.student_variant(Course(), "ann") == variants.seed_for(b"the instructor's own secret", "ann")
    monkeypatch.setenv(variants.SWITCH_ENV, "0")
    assert variants.student_variant(Course(), "ann") is None
    (tmp_path / variants.SECRET_FILE).write_text("short\n")
    monkeypatch.delenv(variants.SWITCH_ENV)
    monkeypatch.delenv(variants.SECRET_ENV)
    with pytest.raises(ValueError, match="shorter than 16"):
        variants.student_variant(Course(), "ann")


# --- the integrity report on a fixture class -------------------------------------------------

@pytest.fixture(scope="module")
def analysis():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        records, groups = fixture_class()
    instructor = text.instructor_code(ROOT / "exercises/positional_encoding/positional_encoding.ipynb",
                                      ROOT / "solutions/positional_encoding/positional_encoding.ipynb")
    return report.analyse(records, instructor + "\n\n" + TEMPLATES,
                          "positional_encoding", "positional_encoding"), groups


def ranks(analysis) -> dict[tuple, int]:
    return {pair.students: rank for rank, pair in enumerate(analysis.pairs, 1)}


def test_planted_pairs_rank_at_the_top(analysis):
    found, _ = analysis
    assert len(found.records) >= 40
    rank = ranks(found)
    print("\nplanted pair, rank, false positives above:")
    for pair, what in PLANTED.items():
        above = sum(1 for p, r in rank.items() if r < rank.get(pair, 10**6) and p not in PLANTED)
        print(f"  {pair} {what}: rank {rank.get(pair)}, {above} false positive(s) above")
    assert sorted(rank.get(pair, 10**6) for pair in PLANTED) == list(range(1, len(PLANTED) + 1))


def test_a_common_mistake_made_independently_is_no_evidence(analysis):
    found, groups = analysis
    assert set(groups) == set(COMMON_MISTAKES)
    for students in groups.values():
        for pair in found.pairs:
            if set(pair.students) <= set(students):
                assert pair.score < 1.0, (pair.students, pair.shared_answers)


def test_answers_built_on_a_classmates_variant_are_flagged_and_no_one_else(analysis):
    found, _ = analysis
    assert {(leak.student, leak.source) for leak in found.leaks} == {("gus", "hal")}


def test_the_page_is_self_contained_and_escapes_student_text(analysis):
    found, _ = analysis
    shown = dataclasses.replace(found, records=[dataclasses.replace(r, code=r.code + "\n# </pre><script>x()</script>")
                                                if r.student == "ada" else r for r in found.records])
    page = report.page([shown])
    assert "<script" not in page and "&lt;/pre&gt;&lt;script&gt;x()&lt;/script&gt;" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert page.index("gus · hal") < page.index("ada · bob") < page.index("eli · fay")


def _marked(column: str) -> str:
    return " ".join(re.findall(r"<mark>(.*?)</mark>", column, re.S))


def test_the_copied_parts_are_marked_in_both_columns_and_the_starter_code_is_not(analysis):
    found, _ = analysis
    page = report.page([found])
    section = page[page.index("id='pair"):]
    section = section[section.index("ada and bob"):]
    ada, bob = re.findall(r"<pre>(.*?)</pre>", section, re.S)[:2]
    assert "rate = 1.0 / np.power(10000.0, 2.0 * pair / d_model)" in _marked(ada)     # ada's own code
    assert "freq = 1.0 / np.power(10000.0, 2.0 * k / d_model)" in _marked(bob)        # the same, renamed
    assert "# my solution, part" not in _marked(bob)                                  # bob's added comments
    first_solution_line = SOLUTION.strip().splitlines()[0]
    assert first_solution_line not in _marked(ada) and first_solution_line not in _marked(bob)


def test_feedback_shows_the_smallest_failing_call_with_the_students_own_inputs():
    attention = REGISTRY["hidden_self_attention"]
    ns = namespace_from(SOLUTION, next(m.code for m in MISTAKES if m.name == "no 1/sqrt(d_k) scaling"))
    mine = attention.verdict(record_in_process(attention.task_entry(SEEDS[0]), ns), SEEDS[0])
    drawn = [c["args"][0] for c in attention.plain_inputs(SEEDS[0])["groups"]["outputs"]]
    # the student's own drawn inputs travel as data beside the sentence (the page shows them; prose holds none)
    assert any(np.array_equal(np.asarray(given), x) for given in mine[0].inputs for x in drawn
               if x.size <= SHOWN_INPUT_NUMBERS)
    assert not any(repr(x.tolist()) in mine[0].text for x in drawn)
    everyone = attention.verdict(record_in_process(attention.task_entry(None), ns), None)
    assert everyone and not any(p.inputs for p in everyone)      # course-wide inputs stay hidden
    table = REGISTRY["hidden_pe_values"]
    ns = namespace_from(SOLUTION, next(m.code for m in MISTAKES if m.name == "positions start at 1"))
    first = table.verdict(record_in_process(table.task_entry(SEEDS[0]), ns), SEEDS[0])[0]
    smallest_call = min(table.plain_inputs(SEEDS[0])["groups"]["tables"], key=lambda c: np.prod(c["args"]))
    assert first.text.startswith(f"sinusoidal_positional_encoding({', '.join(map(str, smallest_call['args']))})")


def test_evidence_is_stored_compact_bounded_and_read_back_exactly(tmp_path, capsys):
    from posenc_autograder.course import Course
    from posenc_autograder.grading.execute import Execution
    from posenc_autograder.intake.submissions import Submission
    from posenc_autograder.records import evidence as store

    course = Course(tmp_path)
    table = np.linspace(0, 1, 12).reshape(3, 4)
    varied = next(c for c in ALL_CHECKS if store.varies(c))
    for student, cell, answer, variant in (("modest", "hidden_pe_values", table, None),
                                           ("flood", varied, np.zeros(store.MAX_EVIDENCE_BYTES // 8 + 1), 7)):
        record = {"observations": {"tables": [{"value": answer}]}}
        execution = Execution((student, "a", "nb"), {cell: record}, [], {}, 0.0)
        store.keep(course, Submission(student, "a", "nb", None), execution, variant, None)
    kept, flood = sorted(store.load_class(course, "a", "nb"), key=lambda e: e.student != "modest")
    assert kept.student == "modest" and not kept.cut
    # The flood's record is walked within the bounds and summarised, never built whole: its student is kept, named cut.
    assert flood.student == "flood" and set(flood.cut) == {varied} and not flood.own_failing
    assert store.path(course, "a", "nb", "flood").stat().st_size < 2**20
    (answer,) = kept.answers
    assert (answer.test, answer.where, answer.failed) == ("hidden_pe_values", "/tables[0]", True)
    assert (answer.keys == store.answer_keys({"value": table})
            and "returned an array of shape (3, 4)" in answer.description)
    for nudged in (table * (1 - 2 ** -53), table * (1 + 2 ** -52), np.nextafter(table, 2)):     # an ulp away
        assert set(answer.keys) & set(store.answer_keys({"value": nudged}))
    assert not set(answer.keys) & set(store.answer_keys({"value": table * (1 + 1e-6)}))


def test_unreadable_or_hostile_evidence_is_skipped_named_and_the_report_still_written(tmp_path, capsys):
    """A corrupt file, or a stored answer posing as the codec's own array reference, once switched
    the whole report off (exit 0, last week's page left in place)."""
    from posenc_autograder.course import Course
    from posenc_autograder.grading.execute import Execution, decode_record
    from posenc_autograder.intake.submissions import Submission
    from posenc_autograder.probes import codec as wire
    from posenc_autograder.records import evidence as store

    (tmp_path / "autograder").mkdir()
    (tmp_path / "autograder/nbgrader_config.py").write_text("")
    (tmp_path / "solutions").mkdir()
    course = Course(tmp_path)
    hostile = decode_record(wire.decode_frame(wire.frame(
        {"observations": {"statistics": {"value": {"__ndarray_index__": 999999}}}})))
    assert hostile["observations"]["statistics"]["value"] == {"__ndarray_index__": 999999}     # data, not ours
    for student, record in (("ann", hostile), ("ben", hostile), ("cat", {"observations": {"x": {"value": 1.0}}})):
        execution = Execution((student, "a", "nb"), {"hidden_encoding_statistics": record}, [], {}, 0.0)
        store.keep(course, Submission(student, "a", "nb", None), execution, None, None)
    (store.folder(course, "a", "nb") / "cat.npz").write_bytes(b"PK\x03\x04 not a zip")
    course.reports.mkdir(parents=True)
    (course.reports / report.REPORT_NAME).write_text("last week's report")
    assert cli.main(["integrity", "--course", str(course.root)]) == 1
    page = (course.reports / report.REPORT_NAME).read_text()
    assert "last week" not in page and "for 2 student notebooks in 1 notebook;" in page and "1 skipped" in page
    assert "cat" in page and re.search(r"Written \d{4}-\d\d-\d\dT", page)
    assert "not compared: a/nb cat" in capsys.readouterr().err
    (store.folder(course, "a", "nb") / "cat.npz").unlink()
    assert cli.main(["integrity", "--course", str(course.root)]) == 0


def test_string_constants_that_compile_are_compared_as_code():
    code = ("x = 1\nexec('def f(a):\\n    return [a * k for k in range(3)]\\n')\n"
            "print('not code at all, just a sentence')")
    assert text.code_strings(code) == ["def f(a):\n    return [a * k for k in range(3)]\n"]
    assert text.comparable_code(code).endswith("return [a * k for k in range(3)]\n")
    assert text.code_strings("s = 'a plain sentence that is long enough to be considered'") == []
