"""Hidden tests for sinusoidal_positional_encoding and SinusoidalPositionalEncoding."""
from __future__ import annotations

import collections
import functools
import threading

import numpy as np

from posenc_autograder.checks.comparison import (
    Rejected,
    against_any,
    call_label,
    compare,
    expect_error,
    known_cause,
    mismatch,
    observed_array,
    problems_of,
    raised_problem,
    with_cause,
)
from posenc_autograder.checks.hidden import (
    HiddenTest,
    References,
    call,
    calling,
    each_call,
    each_case,
    judging_all,
    normal,
)
from posenc_autograder.checks.positional_encoding import reference
from posenc_autograder.checks.positional_encoding.diagnosis import diagnose_pe_table
from posenc_autograder.checks.positional_encoding.stand_ins import table_stand_in
from posenc_autograder.checks.reproduction import called, reproduced, reproducing, reproduction, step
from posenc_autograder.probes.helpers import call_each
from posenc_autograder.probes.positional_encoding import probe_pe_class

ref = References(reference)        # sizes and settings asked for again: computed once, read-only

ASSIGNMENT = "positional_encoding"
PE_FN, PE_CLASS = "sinusoidal_positional_encoding", "SinusoidalPositionalEncoding"
ODD = "for an odd d_model"
NORM_TOLERANCE = 1e-6    # the norms are structure; exact digits are hidden_pe_values' job


def _table_calls(*cases):
    return calling(PE_FN, tables=[call(seq_len, d_model) for seq_len, d_model in cases])


def _table_problem(c, record, atol=1e-9):
    """An observed table against the formula, with a diagnosis of the known mistakes."""
    seq_len, d_model = c["args"]
    return compare(record, ref.sinusoidal_positional_encoding(seq_len, d_model), call_label(PE_FN, c), atol,
                   diagnose=lambda table: diagnose_pe_table(table, seq_len, d_model))


def _table_problems(inputs, obs, atol=1e-9):
    return each_case(functools.partial(_table_problem, atol=atol), inputs["groups"]["tables"], obs["tables"],
                     function=PE_FN)


# --- shapes and the odd-width error -----------------------------------------------------------

def _shapes_inputs():
    inputs = _table_calls((1, 2), (5, 6), (33, 18), (200, 130))
    inputs["groups"]["odd"] = [call(10, d_model) for d_model in (3, 9, 101)]
    return inputs


_judge_shapes = judging_all(
    each_call(PE_FN, "tables", lambda *size, record, label: observed_array(record, label, size)),
    each_call(PE_FN, "odd", lambda *_, record, label: expect_error(record, "ValueError", label, ODD)))


# --- uniqueness, bounds, determinism, norms ----------------------------------------------------

def _unique_inputs():
    return _table_calls((1000, 12), (1000, 12))


def _judge_unique(inputs, obs):
    c = inputs["groups"]["tables"][0]
    seq_len, d_model = c["args"]
    what = call_label(PE_FN, c)
    try:
        table, second = (observed_array(r, what, (seq_len, d_model)) for r in obs["tables"])
    except Rejected as problem:
        return _of_call([problem.args[0]], c)
    problems = []        # what the values show: a cause of them is theirs too (the determinism problem is not)
    if not _rows_apart(table, 1e-12):
        squared = (table ** 2).sum(axis=1)
        distances = squared[:, None] + squared[None, :] - 2 * table @ table.T
        np.fill_diagonal(distances, np.inf)
        i, j = np.unravel_index(int(np.argmin(distances)), distances.shape)
        problems.append(f"rows {i} and {j} of {what} are identical: every position needs its own vector")
    if not np.abs(table).max() <= 1.0:
        problems.append(f"{what} has an entry of magnitude {np.abs(table).max():.6g}; sin and cos stay within [-1, 1]")
    norms = np.linalg.norm(table, axis=1)
    target = np.sqrt(d_model / 2)
    if not np.abs(norms - target).max() <= NORM_TOLERANCE:
        p = int(np.argmax(np.abs(norms - target)))
        problems.append(f"row {p} of {what} has norm {norms[p]:.10g}; every row should have norm "
                        f"sqrt(d_model/2) = {target:.10g} because each (sin, cos) pair contributes 1")
    problems = _with_table_cause(problems, table, seq_len, d_model)
    if not np.array_equal(table, second):
        problems.append(f"two calls of {what} returned different tables: the function must be deterministic")
    return _of_call(problems, c)


def _with_table_cause(problems: list, table: np.ndarray, seq_len: int, d_model: int) -> list:
    """Problems found in a table's structure (its rows, norms, wavelengths), each with the known mistake its values
    show (the values tests' diagnosis, or whole numbers: an integer table), when one does."""
    cause = known_cause(table, ref.sinusoidal_positional_encoding(seq_len, d_model), 1e-9,
                        lambda wrong: diagnose_pe_table(wrong, seq_len, d_model)) if problems else None
    return [with_cause(p, cause) for p in problems] if cause else problems


ROWS_AT_ONCE = 64       # rows of the squared distances worked out at a time: a block that stays in the cache
# Tables whose _rows_apart verdict is kept, by their exact bytes: a class's correct notebooks return the same few tables
# bit for bit (one per way of writing the formula), and the verdict was ~10 ms of CPU of each solved notebook's
# judging (a million-entry product). A 1000 x 12 table is 96 KB: the kept ones are under 1 MB a process.
ROWS_APART_KEPT = 8


class _KeptVerdicts:
    """_rows_apart's verdicts of the last ROWS_APART_KEPT tables, each found again only by a table equal byte for byte
    (its bytes are the key: compared in full, never by a digest), of the same dtype and shape, and the same `least`."""

    def __init__(self, kept: int = ROWS_APART_KEPT):
        self.kept, self.lock = kept, threading.Lock()
        self.verdicts: collections.OrderedDict[tuple, bool] = collections.OrderedDict()

    def rows_apart(self, table: np.ndarray, least: float) -> bool:
        key = (table.dtype.str, table.shape, least, table.tobytes())
        with self.lock:
            verdict = self.verdicts.get(key)
            if verdict is not None:
                self.verdicts.move_to_end(key)
                return verdict
        verdict = _rows_apart_worked_out(table, least)        # on the table as given: the same products as before
        with self.lock:
            self.verdicts[key] = verdict
            while len(self.verdicts) > self.kept:
                self.verdicts.popitem(last=False)
        return verdict


KEPT_VERDICTS = _KeptVerdicts()


def _rows_apart(table: np.ndarray, least: float) -> bool:
    """Whether every two rows' squared distance is above `least` (_rows_apart_worked_out); kept for tables met."""
    return KEPT_VERDICTS.rows_apart(table, least)


def _rows_apart_worked_out(table: np.ndarray, least: float) -> bool:
    """Whether every two rows' squared distance, squared[i] + squared[j] - (2 * table) @ table.T, is above `least`: the
    same numbers _judge_unique's matrix holds (the same operations on the same products), a block of rows at a time
    instead of three more million-entry arrays."""
    squared = (table ** 2).sum(axis=1)
    products = 2 * table @ table.T
    for start in range(0, len(table), ROWS_AT_ONCE):
        block = squared[start:start + ROWS_AT_ONCE, None] + squared[None, :]
        block -= products[start:start + ROWS_AT_ONCE]
        rows = np.arange(start, start + len(block))
        block[rows - start, rows] = np.inf                   # a row's distance to itself
        if not block.min() > least:
            return False
    return True


def _of_call(problems: list, c: dict) -> list:
    """Problems of one table call, each carrying the call (what the page writes as the line that reproduces it)."""
    return [reproduced(p, called(PE_FN, c)) for p in problems]


# --- frequency structure -----------------------------------------------------------------------

def _measured_wavelength(sin_column: np.ndarray, cos_column: np.ndarray) -> float:
    """Wavelength read off a (sin, cos) column pair through the unwrapped phase's slope."""
    phase = np.unwrap(np.arctan2(sin_column, cos_column))
    slope = np.polyfit(np.arange(len(phase)), phase, 1)[0]
    return float(2 * np.pi / slope) if slope > 0 else float("inf")


def _judge_frequency(inputs, obs):
    c = inputs["groups"]["tables"][0]
    seq_len, d_model = c["args"]
    try:
        table = observed_array(obs["tables"][0], call_label(PE_FN, c), (seq_len, d_model))
    except Rejected as problem:
        return _of_call([problem.args[0]], c)
    problems = []
    fast, slow = table[:, 0].var(), table[:, d_model - 2].var()
    if not fast > 20 * slow:
        problems.append(f"column 0 should oscillate fast and column d-2 barely move, but their variances over "
                        f"positions are {fast:.4g} and {slow:.4g}")
    expected = 2 * np.pi / ref.angular_frequencies(d_model)
    for pair, label in ((0, "first"), (d_model // 2 - 1, "last")):
        measured = _measured_wavelength(table[:, 2 * pair], table[:, 2 * pair + 1])
        if not abs(measured - expected[pair]) <= 1e-3 * expected[pair]:
            problems.append(f"the {label} (sin, cos) pair has wavelength {measured:.6g} positions; expected "
                            f"2*pi*10000^(2i/d) = {expected[pair]:.6g}")
    return _of_call(_with_table_cause(problems, table, seq_len, d_model), c)


# --- the SinusoidalPositionalEncoding class ----------------------------------------------------

def _class_inputs():
    max_seq_len, d_model = 520, 10
    batches = [(1, 1), (4, 16), (16, 128), (2, 512), (3, 37)]
    return {"class": PE_CLASS, "max_seq_len": max_seq_len, "d_model": d_model, "odd": [16, 7],
            "stand_ins": {PE_FN: table_stand_in(normal(7, (max_seq_len, d_model)))},
            "inputs": [normal(batch * 1000 + seq_len, (batch, seq_len, d_model)) for batch, seq_len in batches],
            "encoding_length": 45, "too_long": np.zeros((1, max_seq_len + 1, d_model))}


def _judge_class(inputs, obs):
    """The module against the table it was given (the stand-in for sinusoidal_positional_encoding) or, for a
    module that builds its own, the formula's table: either way a table mistake is not charged here."""
    max_seq_len, d_model = inputs["max_seq_len"], inputs["d_model"]
    module = step(PE_CLASS, max_seq_len, d_model, assign="module")

    def of_module(*lines):
        return reproduction(module, *lines, stand_ins=(PE_FN,))
    if "error" in obs:
        return [reproduced(raised_problem(f"building or using {PE_CLASS}({max_seq_len}, {d_model}) failed: "
                                          f"{obs['error']}", obs["error"]), of_module())]
    tables = (ref.sinusoidal_positional_encoding(max_seq_len, d_model), inputs["stand_ins"][PE_FN]["table"])

    def forward_problem(X, record):
        seq_len = X.shape[1]

        def against(table):
            encoding_only = np.broadcast_to(table[:seq_len], X.shape)
            return compare(record, X + table[None, :seq_len], f"forward(X) with X of shape {X.shape}", 1e-9,
                           diagnose=lambda out: "it returns the encoding alone; forward must return X + PE[:L]"
                           if out.shape == X.shape and mismatch(out, encoding_only, 1e-9, "") is None else None)
        return against_any(against, *tables)

    length = inputs["encoding_length"]
    return each_case(forward_problem, inputs["inputs"], obs["forward"],
                     reproduce=lambda X, record: of_module(step("module.forward", X))) + problems_of(
        reproducing(lambda: against_any(lambda t: compare(obs["encoding"], t[:length], f"get_encoding({length})",
                                                          1e-9), *tables),
                    of_module(step("module.get_encoding", length))),
        reproducing(lambda: expect_error(obs["too_long"], "ValueError", f"forward with L = {max_seq_len + 1}",
                                         f"when L > max_seq_len = {max_seq_len}"),
                    of_module(step("module.forward", inputs["too_long"]))),
        reproducing(lambda: expect_error(obs["odd"], "ValueError", f"{PE_CLASS}{tuple(inputs['odd'])}", ODD),
                    reproduction(step(PE_CLASS, *inputs["odd"]), stand_ins=(PE_FN,))))


TESTS = [
    HiddenTest(id="hidden_pe_shapes", partial=True, assignment=ASSIGNMENT, points=2, answer_cell=PE_FN,
               subjects=(PE_FN,),
               title="output shapes for several (L, d_model), and ValueError for odd widths",
               bullets=("shape.sinusoidal", "shape.odd_d_model"),
               inputs=_shapes_inputs, probe=call_each, judge=_judge_shapes),
    HiddenTest(id="hidden_pe_values", partial=True, assignment=ASSIGNMENT, points=4, answer_cell=PE_FN,
               subjects=(PE_FN,),
               title="exact values against the formula, for several sizes",
               bullets=("values.position_zero", "values.small_example"),
               inputs=lambda: _table_calls((3, 4), (7, 10), (60, 34)), probe=call_each, judge=_table_problems),
    HiddenTest(id="hidden_pe_unique_bounded", assignment=ASSIGNMENT, points=3, answer_cell=PE_FN,
               subjects=(PE_FN,),
               title="distinct rows for L = 1000, |PE| <= 1, determinism, row norms sqrt(d/2)",
               bullets=("unique.rows", "unique.bounded", "unique.deterministic", "unique.norms"),
               inputs=_unique_inputs, probe=call_each, judge=_judge_unique),
    HiddenTest(id="hidden_pe_stability", partial=True, assignment=ASSIGNMENT, points=2, answer_cell=PE_FN,
               subjects=(PE_FN,),
               title="no NaN or Inf for L = 10000 and for d_model = 4096, precision of the frequencies",
               bullets=("stability.long_sequence", "stability.wide_model", "stability.log_space"),
               inputs=lambda: _table_calls((10000, 32), (24, 4096)), probe=call_each,
               judge=lambda inputs, obs: _table_problems(inputs, obs, atol=1e-8)),
    HiddenTest(id="hidden_pe_frequency", assignment=ASSIGNMENT, points=2, answer_cell=PE_FN,
               subjects=(PE_FN,),
               title="fast low dimensions, slow high dimensions, wavelengths 2*pi and 2*pi*10000^((d-2)/d)",
               bullets=("frequency.low_fast", "frequency.high_slow", "frequency.first_wavelength",
                        "frequency.last_wavelength"),
               inputs=lambda: _table_calls((2000, 36)), probe=call_each, judge=_judge_frequency),
    HiddenTest(id="hidden_pe_class", assignment=ASSIGNMENT, points=3, answer_cell=PE_CLASS,
               title="forward for batch sizes 1..16 and lengths 1..512, get_encoding, ValueError cases",
               bullets=("shape.batched_forward", "shape.batch_sizes", "shape.sequence_lengths"),
               subjects=(f"{PE_CLASS}.forward", f"{PE_CLASS}.get_encoding"), depends=(PE_FN,),
               inputs=_class_inputs, probe=probe_pe_class, judge=_judge_class),
]
