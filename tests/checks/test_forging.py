"""Forging attempts score exactly what their honest twins score.

Each attempt is an honest notebook (its twin) plus code that tries to change what the grader sees: probe
functions and the record function replaced, numpy and builtins patched, an ndarray subclass that lies about
its dtype, tracing hooks. The probes run in-process as in the sandbox: a snapshot of their tools is taken
before the notebook's code runs (probes.guard), as the shell runner takes it before the first cell. The
sandbox runs of the same kind of code are in tests/end_to_end/test_attacks.py (forge_* attacks).
"""
import dataclasses

import numpy as np
import pytest
from hostile_notebooks import ATTACKS, LYING_SUBCLASS
from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks import REGISTRY, manifest
from posenc_autograder.checks.positional_encoding.catalogue import FLOAT32_TABLE, MISTAKES, learned_variant
from posenc_autograder.notebook import graded_in_process
from posenc_autograder.probes import guard

FIND_PROBES = '''
import sys
probes = {name.rsplit(".", 1)[-1]: module for name, module in list(sys.modules.items())
          if module is not None and ".probes." in name or "_probes." in name}
'''
STUBS = manifest.stub_source(manifest.functions("positional_encoding"))
IN_PLACE = next(m.code for m in MISTAKES if m.name == "forward adds the encoding into the caller's array")
FLOAT32_RETURN = next(m.code for m in MISTAKES if m.name == "float32 table")
FROZEN = learned_variant(forward_table="self.frozen")


@dataclasses.dataclass(frozen=True)
class Forgery:
    name: str
    twin: str          # the honest notebook's code (over the solution)
    forgery: str       # what is added to it


FORGERIES = [
    Forgery("the record function and every probe replaced by canned passing answers", STUBS,
            ATTACKS["forge_record_and_probe_functions"]),          # the same code as the sandbox attack
    Forgery("numpy patched so that every array compares equal and copies come back unchanged", IN_PLACE, '''
import numpy as np
_copy = np.array
np.array_equal = lambda *a, **k: True
np.allclose = lambda *a, **k: True
np.array = lambda value, *a, **k: _copy(value, *a, **k)
'''),
    Forgery("numpy patched from inside the student's own function", IN_PLACE, '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def forward(self, X):
        np.array_equal = lambda *a, **k: True
        np.asarray = lambda value, *a, **k: value
        return super().forward(X)
'''),
    Forgery("an ndarray subclass that says float64 when asked, around a float32 table", FLOAT32_RETURN,
            LYING_SUBCLASS + '''
_float32_table = sinusoidal_positional_encoding
def sinusoidal_positional_encoding(seq_len, d_model):
    return _float32_table(seq_len, d_model).view(Float64Looking)
'''),
    Forgery("the numerical gradient replaced (a forward that reads a frozen copy)", FROZEN, FIND_PROBES + '''
probes["positional_encoding"].numerical_gradient = lambda layer, X, upstream, epsilon: layer.grad_embedding
probes["helpers"].to_plain = lambda value: value
'''),
    Forgery("tracing and profiling hooks that replace the probes' helpers while they run", FLOAT32_TABLE,
            FIND_PROBES + '''
import sys, threading
def hook(frame, event, arg):
    probes["helpers"].kind_of = lambda value: {"type": "ndarray", "dtype": "float64", "shape": [1]}
    return None
sys.settrace(hook)
sys.setprofile(hook)
threading.settrace(hook)
'''),
    Forgery("builtins patched (isinstance, type checks)", STUBS +
            "def sinusoidal_positional_encoding(seq_len, d_model):\n    return [[0.0] * d_model] * seq_len\n", '''
import builtins
builtins.isinstance = lambda obj, cls: True
builtins.callable = lambda obj: True
'''),
]


def points(code: str) -> dict[str, float]:
    """Hidden test -> points, grading `code` over the solution with the probes' tools kept first."""
    guard.snapshot()
    try:
        ns = namespace_from(implementation_source(solution_notebook("positional_encoding")), code)
        guard.restore()          # the shell runner's restore before the first probe: in the sandbox the trusted
        graded = graded_in_process("positional_encoding", ns)           # side is another process, untouched
    finally:
        guard.restore()
        guard.clear()
    return {cid: REGISTRY[cid].points_for(passed, total) for cid, (_, passed, total) in graded.items()}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("forgery", FORGERIES, ids=lambda f: f.name)
def test_a_forgery_scores_exactly_what_its_honest_twin_scores(forgery):
    twin = points(forgery.twin)
    assert points(forgery.twin + "\n" + forgery.forgery) == twin
    assert sum(twin.values()) < sum(points("").values())       # each twin has something to hide


def test_the_guard_puts_back_what_a_cell_replaced():
    import numpy as np
    original = np.array_equal
    guard.snapshot()
    try:
        np.array_equal = lambda *a, **k: True
        np.something_new = 1
        guard.restore()
        assert np.array_equal is original and not hasattr(np, "something_new")
    finally:
        guard.restore()
        guard.clear()


def test_the_guard_puts_back_what_a_cell_deleted_even_with_a_name_added_in_its_place():
    """The namespace keeps its length (one name deleted, one added): restore still finds both."""
    import builtins

    import numpy as np
    original_sum, original_len = np.sum, builtins.len
    guard.snapshot()
    try:
        del np.sum, builtins.len
        np.stand_in_sum = builtins.stand_in_len = lambda *a, **k: 0
        guard.restore()
        assert np.sum is original_sum and builtins.len is original_len
        assert not hasattr(np, "stand_in_sum") and not hasattr(builtins, "stand_in_len")
    finally:
        guard.restore()
        guard.clear()


def test_the_guard_leaves_a_namespace_unchanged_since_it_was_left_as_it_is():
    """A namespace whose version tag is the one snapshot() or restore() left it with is not written again (its kept
    copy altered here shows it: restoring every namespace every time, as before, wrote the copy's stand-in back);
    one changed since is put back, again after each change."""
    import numpy as np
    original = np.array_equal
    guard.snapshot()
    try:
        assert guard._TAGS, "this interpreter's dicts mark every change: the guard must see it"
        kept = next(k for namespace, k in guard._SNAPSHOT if namespace is vars(np))
        kept["array_equal"] = stand_in = lambda *a, **k: True
        guard.restore()
        assert np.array_equal is original
        kept["array_equal"] = original
        for _ in range(2):
            np.array_equal = stand_in
            guard.restore()
            assert np.array_equal is original
    finally:
        guard.restore()
        guard.clear()


def test_where_dicts_mark_no_change_the_guard_restores_every_namespace_every_time(monkeypatch):
    import numpy as np
    original = np.array_equal
    monkeypatch.setattr(guard, "_tags_mark_every_change", lambda: False)
    guard.snapshot()
    try:
        assert guard._TAGS == []
        np.array_equal = lambda *a, **k: True
        guard.restore()
        assert np.array_equal is original
    finally:
        guard.restore()
        guard.clear()


GUARDED_MEDIAN = r"""
import sys, types
import numpy as np
from posenc_autograder.probes import guard
assert "numpy.ma" not in sys.modules            # numpy imports np.ma on first use (np.median's NaN check)
guard.snapshot()
np.median(np.arange(5.0))                        # a student's cell
np.fake = types.ModuleType("numpy.fake")         # and a module of the student's own
guard.restore()                                  # before the first probe
print(np.median(np.arange(5.0)), hasattr(np, "fake"))
"""


def test_a_submodule_numpy_imported_after_the_snapshot_still_works_after_restore():
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-c", GUARDED_MEDIAN], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.split() == ["2.0", "False"], done.stderr[-1500:]


ROUNDED_THROUGH_FLOAT32 = '''
_exact_table = sinusoidal_positional_encoding
def sinusoidal_positional_encoding(seq_len, d_model):
    return _exact_table(seq_len, d_model).astype(np.float32).astype(np.float64)
'''


def _with_forged_dtype(value):
    """Every answer's record as student code writing its own result frames would send it: claiming float32."""
    if isinstance(value, dict):
        forged = {key: _with_forged_dtype(item) for key, item in value.items()}
        return {**forged, "dtype": "float32"} if "value" in value else forged
    return [_with_forged_dtype(item) for item in value] if isinstance(value, list) else value


def test_a_forged_dtype_buys_no_rounding_allowance():
    """float64 answers rounded through float32, their records claiming float32: they lose what their honest twin
    loses (the precision a judge allows is read from the array that crossed, never from the record)."""
    from posenc_autograder.checks.hidden import judge_all
    from posenc_autograder.notebook import hidden_tests, record_in_process

    guard.snapshot()
    try:
        ns = namespace_from(implementation_source(solution_notebook("positional_encoding")), ROUNDED_THROUGH_FLOAT32)
        guard.restore()
        tests = hidden_tests("positional_encoding")
        honest = {t.id: record_in_process(t.task_entry(), ns) for t in tests}
    finally:
        guard.restore()
        guard.clear()

    def scored(records):
        return {cid: REGISTRY[cid].points_for(passed, total)
                for cid, (_, passed, total) in judge_all(tests, records).items()}
    twin = scored(honest)
    assert scored({cid: _with_forged_dtype(record) for cid, record in honest.items()}) == twin
    assert sum(twin.values()) < sum(points("").values())


def _honest_records(code: str) -> tuple[list, dict]:
    from posenc_autograder.notebook import hidden_tests, record_in_process
    guard.snapshot()
    try:
        ns = namespace_from(implementation_source(solution_notebook("positional_encoding")), code)
        guard.restore()
        tests = hidden_tests("positional_encoding")
        return tests, {t.id: record_in_process(t.task_entry(), ns) for t in tests}
    finally:
        guard.restore()
        guard.clear()


def _scored(tests, records) -> float:
    from posenc_autograder.checks.hidden import judge_all
    return sum(REGISTRY[cid].points_for(passed, total) for cid, (_, passed, total) in judge_all(tests, records).items())


def _with_arguments_as_sent(tests, records: dict) -> dict:
    """Every contract record as student code writing its own frames would send it: the arguments copies of what
    was sent, taken before the probes ran (as a forward that writes into X would need)."""
    forged = dict(records)
    for test in (t for t in tests if t.reads_verdicts):
        calls = test.plain_inputs()["calls"]
        observations = {name: {**record, "arguments": [np.array(a, copy=True) if isinstance(a, np.ndarray) else a
                                                        for a in calls[name]["args"]]}
                        for name, record in records[test.id]["observations"].items()}
        forged[test.id] = {**records[test.id], "observations": observations}
    return forged


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_forged_contract_arguments_buy_no_contract_point():
    """A forward that writes into the caller's X, its record carrying the arguments as they were sent: it loses the
    contract point its honest twin loses (the second call on the same X answers for another X), and an honest
    solution keeps every point."""
    tests, honest = _honest_records(IN_PLACE)
    twin = _scored(tests, honest)
    assert _scored(tests, _with_arguments_as_sent(tests, honest)) == twin
    full = _scored(*_honest_records(""))
    assert twin < full and full == sum(t.points for t in tests)


@pytest.mark.parametrize("assignment", ["positional_encoding", "rope_alibi", "relative_positions", "context_extension"])
def test_every_contract_call_has_trusted_answers_and_a_writer_into_its_arguments_fails_them(assignment):
    """Each call of a manifest's contracts (not an attribute read) has answers the trusted side computed itself, and
    the same call on inputs that a write changed (every array argument doubled) is not one of them."""
    from posenc_autograder.checks.contracts import accepted_answers, agrees
    from posenc_autograder.checks.manifest import functions
    entries = functions(assignment)
    [test] = [t for t in REGISTRY.values() if t.assignment == assignment and t.reads_verdicts]
    inputs = test.plain_inputs()
    for name, c in inputs["calls"].items():
        if c.get("attribute"):
            continue
        stand_ins = inputs.get("stand_ins", {}).get(name, {})
        accepted = accepted_answers(assignment, entries, name, c, stand_ins)
        assert accepted, name
        floats = [i for i, a in enumerate(c["args"]) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        if not floats:
            continue             # no float array to write into (sizes, counts and positions only)
        written = {**c, "args": [2 * a + 1 if i in floats else a for i, a in enumerate(c["args"])]}
        changed = accepted_answers(assignment, entries, name, written, stand_ins)
        assert not any(agrees(w, a) for w in changed for a in accepted), name


def test_a_contract_call_met_again_is_answered_from_the_answers_kept_for_its_inputs(monkeypatch):
    """The course-wide calls every notebook's shared set makes: the reference runs once for them, and what is kept is
    read-only; the same call on other inputs (a student's variant) is answered for those."""
    from posenc_autograder.checks import contracts
    from posenc_autograder.checks.manifest import functions
    runs = []
    real = contracts.accepted_answers
    monkeypatch.setattr(contracts, "accepted_answers", lambda *args: runs.append(args[2]) or real(*args))
    [test] = [t for t in REGISTRY.values() if t.assignment == "positional_encoding" and t.reads_verdicts]
    kept = contracts.KeptAnswers("positional_encoding", functions("positional_encoding"))

    def answers(changed=False):
        inputs = test.plain_inputs()                    # fresh dicts each time, as each notebook's judge gets them
        name, c = next((n, c) for n, c in inputs["calls"].items()
                       if any(isinstance(a, np.ndarray) and a.dtype.kind == "f" for a in c["args"]))
        if changed:                                     # other inputs: a student's variant, say
            c = {**c, "args": [2 * a + 1 if isinstance(a, np.ndarray) else a for a in c["args"]]}
        return name, kept(name, c, inputs.get("stand_ins", {}).get(name, {}))
    name, first = answers()
    assert answers()[1] is first and runs == [name]      # old code: the reference ran for each notebook's call
    arrays = [a for a in first if isinstance(a, np.ndarray)]
    assert arrays and not any(a.flags.writeable for a in arrays)
    assert answers(changed=True)[1] is not first and runs == [name, name]


def test_agreeing_finite_answers_need_no_allclose_and_the_rest_get_its_answer(monkeypatch):
    from posenc_autograder.checks.contracts import agrees
    values = [0.0, -0.0, 1.0, 1.0 + 9e-7, 1.0 + 2e-6, 1e-9, 3e-9, np.nan, np.inf, -np.inf, 1e308, 5e-324]
    for a in values:
        for b in values:
            with np.errstate(all="ignore"):
                expected = bool(np.allclose(np.array([a, 2.0]), np.array([b, 2.0]), equal_nan=True, rtol=1e-6,
                                            atol=1e-9))
                assert agrees(np.array([a, 2.0]), [b, 2.0]) == expected, (a, b)
    monkeypatch.setattr(np, "allclose", lambda *a, **k: pytest.fail("allclose called on agreeing finite answers"))
    assert agrees(np.linspace(0, 1, 50) + 1e-10, np.linspace(0, 1, 50))       # old code: np.allclose every time
