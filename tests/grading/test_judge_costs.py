"""The judge's work per notebook done once: cells of plain Python are not tokenised for magics, references and inputs
are computed once and handed out read-only (a judge that writes to them raises instead of spoiling the next
notebook), observations are not copied for each judge."""
import ast
import contextlib
import copy
import dataclasses
import io
import pathlib

import nbformat
import numpy as np
import pytest
from test_trusted_costs import NoTransformer

from posenc_autograder import settings
from posenc_autograder.checks import REGISTRY, hidden_tests, variants
from posenc_autograder.checks.hidden import HiddenTest, remembered
from posenc_autograder.checks.positional_encoding import reference, sinusoidal
from posenc_autograder.course import grade_id, nbgrader_meta
from posenc_autograder.grading import pipeline
from posenc_autograder.grading.shared_probes import SHARED_CELL, varies
from posenc_autograder.intake.submissions import discover
from posenc_autograder.probes import codec, magics
from posenc_autograder.probes.helpers import call_each
from posenc_autograder.sandbox.channel_reader import ChannelReader
from posenc_autograder.settings import Limits

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_plain_python_with_a_percent_or_a_bang_is_not_tokenised(monkeypatch):
    import IPython.core.inputtransformer2 as transformer
    monkeypatch.setattr(transformer, "TransformerManager", NoTransformer)
    assert magics.skipped_in("if a != b:\n    print('%d of 3' % a)\n") == []
    monkeypatch.setattr(magics.ast, "parse", lambda *args: pytest.fail("a cell that cannot hold an escape was parsed"))
    assert magics.skipped_in("if a != b:\n    print('%d of %d' % (a, b), 100 % 7)\n") == []
    monkeypatch.undo()
    assert magics.skipped_in("x = 1\nget_ipython().system('ls')  # 5 % 3\n") == [magics.Skipped("!", 2)]


def test_a_skipped_line_after_blank_lines_is_named_by_its_own_line():
    # IPython drops a cell's leading blank lines before reading it: the line named is still the cell's own
    assert magics.skipped_in("\n\n!ls\nx = 1\n") == [magics.Skipped("!", 3)]
    assert magics.skipped_in("\n  \n%pip install torch\n") == [magics.Skipped("%pip", 3)]


SPECIAL_FORMS = ["x = 1\n", "if a != b:\n    !ls\n", "x = !ls\n", "y = %time 1\n", "np.mean?\n", "/print 1\n",
                 ",f a b\n", ";f a\n", "%%capture out\nprint(1)\n", "%%bash\nls\n", "%%time\nx?\n", "foo(\n",
                 "s = '%d' % 3\n", "get_ipython().system('ls')\n", "'''\n%pip install x\n'''\n", "x = (1\n%2)\n",
                 "In [1]: get_ipython().system('ls')\n", "%sx ls\n", "%conda install x\n", "a = 1 if b != 2 else 3\n",
                 "\uff47et_ipython().system('ls')\n", "print(f'{x!r} {y % 2}')\n", "%matplotlib inline\nx = 1 % 2\n",
                 "In [1]: !ls\n", ">>> !ls\n", "   ...: %pip install x\n", "def f():\n    !ls\n", "x = 1 \\\n%ls\n",
                 "y = (1 if a != b\n     else %d)\n", "x=%who_ls\n", "a = b;!ls\n", "\t%conda list\n", "f(x) ! g\n"]


def _as_ipython_alone(source: str) -> list:
    """What IPython's own reading of the cell holds (the rule before plain Python skipped the transformer)."""
    from IPython.core.inputtransformer2 import TransformerManager
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return []
    found = {magics._ipython_call(node) for node in ast.walk(tree)} - {None}
    return sorted((s.magic for s in found))


def test_every_course_cell_reads_as_ipython_reads_it():
    cells = [c.source for folder in ("solutions", "exercises") for path in sorted((ROOT / folder).glob("*/*.ipynb"))
             for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert len(cells) > 50
    for source in cells + SPECIAL_FORMS:
        assert sorted(s.magic for s in magics.skipped_in(source)) == _as_ipython_alone(source), source


# --- references and inputs: computed once, read-only --------------------------------------------

def _writer_of(target: str):
    """A judge that writes into the reference, its inputs or the observations it was given."""
    def judge(inputs, obs):
        if target == "reference":
            sinusoidal.ref.sinusoidal_positional_encoding(3, 4)[0, 0] = 99.0
        elif target == "inputs":
            inputs["table"][0, 0] = 99.0
        else:
            obs["table"][0, 0] = 99.0
        return []
    return judge


def _hidden_test(judge, inputs=None) -> HiddenTest:
    return HiddenTest(id="hidden_writer", assignment="positional_encoding", title="writes", points=1,
                      answer_cell="sinusoidal_positional_encoding", probe=call_each, judge=judge,
                      inputs=inputs or (lambda: {"table": reference.sinusoidal_positional_encoding(3, 4)}))


@pytest.mark.parametrize("target", ["reference", "inputs", "observations"])
def test_a_judge_writing_to_what_it_was_given_raises_and_spoils_nothing(target):
    table = reference.sinusoidal_positional_encoding(3, 4)
    writer, reader = _hidden_test(_writer_of(target)), _hidden_test(lambda inputs, obs: [])
    record = {"observations": {"table": table.copy()}}
    problems, passed, _ = writer.graded(record)
    assert passed == 0 and "unexpected form" in str(problems[0])     # the write raised: the grader's bug, said
    assert np.array_equal(sinusoidal.ref.sinusoidal_positional_encoding(3, 4), table)
    assert all(np.array_equal(test.plain_inputs()["table"], table) for test in (writer, reader))
    assert np.array_equal(record["observations"]["table"], table)       # the record the evidence keeps


def test_a_judge_may_change_the_containers_it_was_given():
    def judge(inputs, obs):
        inputs["table"] = obs.pop("table")
        return []
    test = _hidden_test(judge)
    record = {"observations": {"table": np.zeros((3, 4))}}
    assert test.graded(record) == ([], 1, 1)
    assert set(record["observations"]) == {"table"} and test.plain_inputs()["table"].any()


def test_a_reference_is_computed_once_per_arguments_and_kept_by_their_types():
    calls = []
    frequencies = remembered(lambda d, base=10000.0: calls.append((d, base)) or reference.angular_frequencies(d, base))
    assert frequencies(8) is frequencies(8) and len(calls) == 1
    assert np.array_equal(frequencies(8, base=100.0), reference.angular_frequencies(8, 100.0)) and len(calls) == 2
    frequencies(8.0)                                   # another type: another call (int and float may differ)
    assert len(calls) == 3
    positions = np.arange(4.0)                         # an array argument is never a key: computed each time
    first = remembered(lambda p: calls.append("p") or p * 2)
    first(positions), first(positions)
    assert calls.count("p") == 2


@pytest.fixture(scope="module")
def solved_namespaces():
    from notebook_tools import ROOT

    from posenc_autograder.checks import stand_ins_in_process
    from posenc_autograder.devtools.bench import solved
    found = {}
    for assignment in ("positional_encoding", "rope_alibi"):
        namespace: dict = {}
        with contextlib.redirect_stdout(io.StringIO()):
            for cell in solved(ROOT, assignment).cells:
                if cell.cell_type == "code" and not nbgrader_meta(cell).get("grade"):
                    exec(compile(cell.source, "<solution>", "exec"), namespace)  # noqa: S102 - the course's solution
        found[assignment] = namespace
    stand_ins_in_process()
    return found


def test_each_variant_is_judged_against_its_own_references(solved_namespaces):
    varied = [t for t in hidden_tests("positional_encoding") + hidden_tests("rope_alibi")
              if varies(t.id) and not t.reads_verdicts]
    assert len(varied) >= 4
    told_apart = 0
    for test in varied:
        answers = {}
        for variant in (11, 12):
            with variants.active(variant):
                inputs = test.plain_inputs(variant)
                answers[variant] = {"observations": codec.decode_frame(codec.frame(
                    test.probe(solved_namespaces[test.assignment], inputs)))}
        for variant in (11, 12, 11, 12):                # alternated: a reference kept from one would fail the other
            assert test.graded(answers[variant], variant)[0] == [], (test.id, variant)
        told_apart += bool(test.graded(answers[11], 12)[0])
    assert told_apart >= len(varied) // 2, told_apart


# --- prepare: the task composed from the kept inputs frames ----------------------------------------

def _decoded_entry(test, variant):
    """A task entry as prepare built it before: the inputs frame decoded, to be encoded again."""
    return {**test.task_entry(variant), "data": codec.decode_frame(test.inputs_frame(variant))}


@pytest.mark.parametrize("variant", [None, 5])
def test_a_framed_entry_encodes_as_its_decoded_inputs_would(variant):
    tests = sorted(REGISTRY.values(), key=lambda t: t.id)
    framed = codec.frame({test.id: test.task_entry(variant, framed=True) for test in tests})
    assert framed == codec.frame({test.id: _decoded_entry(test, variant) for test in tests})


def test_a_framed_value_whose_data_looks_like_an_array_index_keeps_it_as_data():
    value = {"s": '{"__ndarray_index__": 0}', "__ndarray_index__": 1, "t": np.ones(2), "l": [{"~": np.zeros(1)}]}
    inner = codec.frame(value)
    framed = codec.frame({"first": np.arange(3.0), "inner": codec.Framed(inner)})
    assert framed == codec.frame({"first": np.arange(3.0), "inner": codec.decode_frame(inner)})
    back = codec.decode_frame(framed)["inner"]
    assert back["s"] == value["s"] and back["__ndarray_index__"] == 1 and back["t"].tolist() == [1.0, 1.0]


@pytest.fixture(scope="module")
def solver_course(tmp_path_factory):
    from fixture_submissions import course_with_solvers
    return course_with_solvers(tmp_path_factory.mktemp("prepare"), "solver")


def test_prepare_composes_the_task_from_the_kept_frames_without_decoding_them(solver_course, monkeypatch):
    [submission] = discover(solver_course)
    variant = variants.student_variant(solver_course, submission.student)
    submitted = pipeline.submitted_notebook(submission.path, settings.load(solver_course).caps)
    copying = copy.deepcopy
    monkeypatch.setattr(copy, "deepcopy", lambda value, *args: pytest.fail("the submission was copied")
                        if value is submitted else copying(value, *args))
    monkeypatch.setattr(codec.FrameReader, "_decode", lambda *args: pytest.fail("a frame was decoded in prepare"))
    task = pipeline.prepare(solver_course, submission, Limits(), isolate=False)
    monkeypatch.undo()
    assert submitted == pipeline.read_notebook(submission.path)          # read, and left as it was
    invalid = {}
    sent = nbformat.reads(task.notebook_json, as_version=4, capture_validation_error=invalid)
    assert not invalid and sorted(grade_id(c) for c in sent.cells if grade_id(c) in REGISTRY) == [
        cid for cid in task.task_ids if cid in REGISTRY]
    assert "\n " not in task.notebook_json                        # compact: not nbformat's indented form
    order = list(codec.decode_frame(task.task_frame))          # the notebook's order of cells
    expected = {cid: _decoded_entry(REGISTRY[cid], variant) for cid in order if cid in REGISTRY}
    if variant is not None:
        varied = {cid: _decoded_entry(REGISTRY[cid], None) for cid in expected if varies(cid)}
        expected[SHARED_CELL] = {"module": "shared", "probe": "run_shared", "data": {"entries": varied}}
    assert sorted(expected) == task.task_ids and len(expected) > 5
    assert task.task_frame == codec.frame({cid: expected[cid] for cid in order})


# --- the supervisor: frames decoded once, arrays not copied ----------------------------------------

def _pieces(data: bytes, size: int = 1 << 16) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def test_the_trusted_side_reads_arrays_as_read_only_views_of_the_bytes_received():
    table = np.arange(300_000.0).reshape(1000, 300)
    reader = ChannelReader(Limits())
    [frame] = [f for piece in _pieces(codec.frame({"result": "t", "record": {"observations": {"t": table}}}))
               for f in reader.feed(piece)]
    received = frame["record"]["observations"]["t"]
    assert np.array_equal(received, table) and not received.flags.writeable and received.flags.aligned
    base = received
    while isinstance(base, np.ndarray):
        base = base.base
    assert isinstance(base, bytes) and len(base) >= table.nbytes        # the frame as received: no copy of its own
    with pytest.raises(ValueError):
        received.flags.writeable = True                                  # and no way back to writing


def test_a_frame_whose_arrays_would_not_be_aligned_is_copied_once_to_aligned_memory():
    skeleton = b'[[[3]], {"t": {"__ndarray_index__": 0}}]   '                  # 43 bytes: as student code may send
    assert len(skeleton) % 8 and len(codec.frame_skeleton(codec.frame({"t": np.ones(3)}))) % 8 == 0
    data = codec.HEADER.pack(len(skeleton), 24) + skeleton + np.arange(3.0).tobytes()
    [frame] = codec.FrameReader(1 << 20, writable=False).feed(data)
    assert frame["t"].tolist() == [0.0, 1.0, 2.0] and frame["t"].flags.aligned and not frame["t"].flags.writeable


def test_a_short_skeleton_is_not_counted_byte_by_byte_but_its_depth_still_is(monkeypatch):
    monkeypatch.setattr(codec, "structure", lambda text: pytest.fail("a short skeleton was counted"))
    reader = codec.FrameReader(1 << 20, max_nodes=1000, max_depth=8)
    deep = {"a": [[[[[[[1]]]]]]]}                                         # the skeleton's list, then 8 more levels
    assert reader.feed(codec.frame({"a": [[[[[[1]]]]]]})) == [{"a": [[[[[[1]]]]]]}]
    assert reader.feed(codec.frame(deep)) == [codec.REFUSED]
    monkeypatch.undo()
    counted = codec.FrameReader(1 << 20, max_nodes=40)
    assert counted.feed(codec.frame({"a": list(range(50))})) == [codec.REFUSED]   # long enough to hold 40: counted


def test_prepare_judge_and_evidence_read_one_parsed_release_and_leave_it_as_it_was(solver_course, monkeypatch):
    from posenc_autograder.course import RELEASE_DIRECTORY
    from posenc_autograder.grading.execute import execute_task
    from posenc_autograder.records import evidence
    [submission] = discover(solver_course)
    path = solver_course.path(RELEASE_DIRECTORY) / submission.assignment / f"{submission.notebook}.ipynb"
    limits = Limits(cell_seconds=20, notebook_seconds=60)
    execution = execute_task(pipeline.prepare(solver_course, submission, limits, isolate=False))
    result = pipeline.judge(solver_course, submission, execution, limits)
    evidence.keep_graded(solver_course, submission, execution)
    assert result.graded and result.score > 0
    invalid = {}
    executed = nbformat.reads(execution.executed_notebook, as_version=4, capture_validation_error=invalid)
    assert not invalid and "\n " not in execution.executed_notebook and any(c.get("outputs") for c in executed.cells)
    assert pipeline.released(solver_course, submission.assignment, submission.notebook) == nbformat.read(
        path, as_version=4)


def test_the_grader_code_a_message_may_not_quote_is_stripped_once_per_probe_file(monkeypatch):
    from posenc_autograder.grading import execute
    from posenc_autograder.grading.pipeline import probe_files
    task = execute.GradingTask(("s", "a", "n"), "", codec.frame({}), [], probe_files(), {}, False)
    first = execute.grader_quotable(task)
    stripped = []
    real = execute.tokenize.generate_tokens      # code_only reads each file with Python's tokenizer
    monkeypatch.setattr(execute.tokenize, "generate_tokens", lambda *args: stripped.append(1) or real(*args))
    task.probe_files = probe_files()                 # read again for the next job: the same sources
    assert execute.grader_quotable(task) == first and stripped == []


def test_a_leak_is_found_only_through_keys_of_one_format(solved_namespaces):
    """A student whose answers were computed on a classmate's inputs is found when both keep keys of one format, and
    not through a classmate whose evidence an older grader kept (equal key strings of another format prove nothing)."""
    from posenc_autograder.integrity import leaks
    from posenc_autograder.records import evidence
    test = next(t for t in hidden_tests("positional_encoding") if varies(t.id) and not t.reads_verdicts)

    def answers(variant):
        with variants.active(variant):
            observed = test.probe(solved_namespaces[test.assignment], test.plain_inputs(variant))
        return {"observations": codec.decode_frame(codec.frame(observed))}

    copied = answers(22)                                    # computed on the classmate's (variant 22) inputs
    assert test.graded(copied, 21)[0] and not test.graded(copied, 22)[0]

    def kept(student, variant, record, failing=False):
        return evidence.compact(evidence.StudentRecord(student, "a", "nb", variant, {test.id: record}, {}, "",
                                                       {test.id: failing}))

    copier = kept("copier", 21, copied, failing=True)
    assert copier.own_failing and copier.own_keys[test.id] and copier.key_format == evidence.KEY_FORMAT
    source = kept("source", 22, answers(22))
    assert [(leak.student, leak.source) for leak in leaks.leaks([copier, source])] == [("copier", "source")]
    older = dataclasses.replace(source, key_format=evidence.BLAKE2B_KEY_FORMAT)     # the same strings, kept before
    assert leaks.leaks([copier, older]) == []


def test_the_executed_notebook_is_read_by_the_judge_without_validating_it_again(monkeypatch):
    text = nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1 % 2")]))
    pipeline.executed.cache_clear()
    monkeypatch.setattr(nbformat, "validate", lambda *args, **kwargs: pytest.fail("validated again"))
    assert pipeline.executed(text).cells[0].source == "x = 1 % 2"
    assert pipeline.executed(text) == nbformat.v4.reads(text)


def test_a_shared_record_of_stubs_only_is_not_judged_for_the_evidence(monkeypatch):
    """The evidence keeps no answer of a stub (NotImplementedError), so a shared-set record holding only stubs needs no
    verdict: the judge does not run for it, and the evidence is what it was; a record with one finished answer is
    judged as before."""
    from posenc_autograder.records import evidence
    test = next(t for t in hidden_tests("positional_encoding") if varies(t.id) and not t.reads_verdicts)
    stub = {"error": "NotImplementedError: write this function"}
    judged = []
    real = HiddenTest.verdict
    monkeypatch.setattr(HiddenTest, "verdict", lambda self, *args, **kwargs: judged.append(self.id) or real(
        self, *args, **kwargs))

    def kept(observations):
        record = {"observations": observations}
        return evidence.compact(evidence.StudentRecord("s", "a", "nb", 7, {test.id: record}, {test.id: record}, "",
                                                       {test.id: True}))

    stubs = kept({"first": stub, "second": [stub, stub]})
    assert judged == [] and stubs.answers == [] and not stubs.cut
    finished = kept({"first": stub, "second": {"value": 1.5}})
    assert judged == [test.id] and [(a.where, a.failed) for a in finished.answers] == [("/second", True)]
