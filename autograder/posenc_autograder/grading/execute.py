"""Execute one grading task in the sandbox and bring back only validated, plain data.

`execute_task` needs nothing but its GradingTask, so it can run in a local thread or on a remote
Dask worker without a shared filesystem. Everything that comes back from the sandbox was within
reach of student code: results are decoded defensively, outputs are plain text, error messages are
cut to a short line of the student's own, and any failure here is this job's failure alone.
"""
from __future__ import annotations

import dataclasses
import functools
import io
import itertools
import json
import re
import sys
import time
import tokenize

import nbformat
import numpy as np

from posenc_autograder.course import grade_id, nbgrader_meta
from posenc_autograder.grading.shared_probes import SHARED_CELL
from posenc_autograder.probes import codec
from posenc_autograder.results import quote
from posenc_autograder.sandbox.supervisor import RunOutcome, run_job
from posenc_autograder.settings import Limits

MESSAGE_CHARACTERS = 200
VISIBLE_MESSAGE_CHARACTERS = 3000       # a self-check's failures, shown folded; the rest are in the notebook
QUOTE_WINDOW = 24                     # a message sharing this many characters with grader code is withheld
MAX_KEPT_BYTES = 48 * 2**20           # what one job's decoded records may hold here, all together (an honest
                                      # notebook's hold ~8 MiB; returning a test's tables as lists, ~20 MiB more)
TOO_LARGE = "too_large"               # the key of the record kept in place of one over MAX_KEPT_BYTES


@dataclasses.dataclass
class GradingTask:
    """Everything the sandbox side needs, as plain data."""
    key: tuple[str, str, str]
    notebook_json: str                # the assembled notebook, probe cells in place
    task_frame: bytes                 # per probe cell: probe module, name and inputs (codec.frame)
    task_ids: list[str]               # the probe cells' ids: the task's keys
    probe_files: dict[str, str]       # the probes package, file name -> source
    limits: dict
    isolate: bool
    whole_task: str | None = None     # a task of only some probes (reprobe.py): the skeleton of the whole one, which a
                                      # message may no more quote than in a full run (grader_quotable)
    release_cells: list[int] = dataclasses.field(default_factory=list)   # code cells that are the release's own, byte
                                      # for byte: the warm sandbox keeps them compiled (probes/known_cells.py)


@dataclasses.dataclass
class Execution:
    key: tuple[str, str, str]
    observations: dict[str, dict]     # cell id -> what the probe recorded
    events: list[dict]
    cell_errors: dict[str, dict]      # visible test cell id -> its failure (pipeline.visible_problem)
    seconds: float
    failure: str | None = None        # the job itself could not run
    executed_notebook: str | None = None
    sandbox_cpu: float = 0.0          # CPU seconds of the sandboxed processes (costs.py; never graded)
    supervise_cpu: float = 0.0        # CPU seconds of this side's work for the job: the supervisor and decoding
    held_bytes: int = 0               # what its decoded records hold here, estimated (Holding; at most MAX_KEPT_BYTES)


def execute_task(task: GradingTask) -> Execution:
    """Run the task; any exception becomes this job's failure, never the run's."""
    started, cpu = time.monotonic(), time.thread_time()
    try:
        # The trusted side's own compact JSON of a notebook it assembled (Prepared.notebook_json), not validated again:
        # nbformat.reads' schema pass only logs, and cost 1.1 of its 1.8 ms a job
        nb = nbformat.v4.reads(task.notebook_json)
        cells = [{"cell_type": c.cell_type, "source": c.source} for c in nb.cells]
        grader_text, holding = secret_windows(grader_quotable(task), public_text(nb)), Holding()
        outcome = run_job(cells, task.task_frame, task.task_ids, task.probe_files, Limits(**task.limits),
                          isolate=task.isolate, decode=functools.partial(decode_record, grader_text=grader_text,
                                                                         holding=holding),
                          release_cells=task.release_cells)
        execution = _execution(task, nb, outcome, grader_text, time.monotonic() - started)
        execution.sandbox_cpu, execution.supervise_cpu = outcome.cpu_seconds, time.thread_time() - cpu
        execution.held_bytes = sum(holding.by_cell.values())
        return execution
    except Exception as exc:  # noqa: BLE001 - the sandbox failing is reported, never fatal
        return Execution(task.key, {}, [], {}, time.monotonic() - started,
                         f"the grader could not run this notebook ({type(exc).__name__}: {str(exc)[:300]})")


def grader_quotable(task: GradingTask) -> str:
    """The grader's text no message shown to a student may quote: the shipped probes' code and the task."""
    whole = task.whole_task if task.whole_task is not None else codec.frame_skeleton(task.task_frame)
    return "\n".join(map(code_only, task.probe_files.values())) + whole


def public_text(nb) -> str:
    """What the student has seen or written: every cell of the assembled notebook (the template's code and names,
    the student's own code, the probe cells' one-line calls). A message may quote it, even where the grader's
    code happens to say the same (a function's name, a parameter list)."""
    return "\n".join(cell.source for cell in nb.cells)


def secret_windows(grader_text: str, public: str) -> SecretWindows:
    """The QUOTE_WINDOW-character pieces of the grader's text that the student has not seen: only they are secret."""
    return SecretWindows(_windows(grader_text), public)


class SecretWindows:
    """The secret pieces, asked one at a time: a piece of the grader's text is secret unless the public text holds it.
    Only the pieces a message shares with the grader's text are looked for in the public text (once each), instead
    of cutting every job's whole notebook into pieces when most jobs have no message at all."""

    def __init__(self, grader: frozenset[str], public: str):
        self.grader, self.public, self.known = grader, public, {}

    def __contains__(self, piece: str) -> bool:
        if piece not in self.grader:
            return False
        if piece not in self.known:      # pieces are QUOTE_WINDOW long: held by the text iff one of its pieces
            self.known[piece] = piece not in self.public
        return self.known[piece]

    def __bool__(self) -> bool:
        return bool(self.grader)


Quotable = str | SecretWindows        # what a message is checked against: the grader's text, or its secret pieces


def _execution(task: GradingTask, nb, outcome: RunOutcome, grader_text: Quotable, seconds: float) -> Execution:
    for index, record in outcome.outputs.items():
        if 0 <= index < len(nb.cells) and nb.cells[index].cell_type == "code":
            nb.cells[index].outputs = [nbformat.from_dict(o) for o in record["outputs"]]
    events = [{**e, "where": cell_label(nb, e.get("cell"))} for e in outcome.events]
    events += [{"event": "output_truncated", "cell": i, "where": cell_label(nb, i)}
               for i, record in sorted(outcome.outputs.items()) if record["truncated"]]
    failure = None
    if not outcome.finished and not events:
        failure = f"the grading sandbox could not run the notebook: {outcome.log_tail[-500:]}"
    elif any(e["event"] == "kernel_died" and e.get("cell") is None for e in events):
        # No student cell had started, so the log is the grader's own: safe and useful to show.
        failure = f"the notebook's process died before running any cell: {outcome.log_tail[-500:]}"
    # Compact JSON: the trusted side parses it once (pipeline.executed) and stores the autograded notebook in
    # nbformat's own form; nbformat's indented writer (Python's slow encoder) would cost 3 ms a core notebook here.
    return Execution(task.key, dict(outcome.results), events, visible_cell_errors(nb, set(task.task_ids), grader_text),
                     seconds, failure, json.dumps(nb, ensure_ascii=False))


class Holding:
    """What one job's decoded records hold on this side, estimated as each is sanitised: the job keeps at most
    MAX_KEPT_BYTES in all, whatever it sends within the channel's caps (a record sent again for its cell, a replay's,
    takes the place of the one before)."""

    def __init__(self, limit: int = MAX_KEPT_BYTES):
        self.limit, self.by_cell = limit, {}

    def room(self, cell) -> int:
        return self.limit - sum(self.by_cell.values()) + self.by_cell.get(cell, 0)


class OverHolding(Exception):
    pass


def decode_record(record, grader_text: Quotable = "", holding: Holding | None = None, cell=None) -> dict | None:
    """One probe record as the channel decoded it (counted first, codec.FrameReader), its messages cut to
    short lines of the student's own; an oddly shaped one is simply no answer (None). A record that would take the
    job past its holding is not kept: in its place, a note that the test's answers were too large (the student's)."""
    if not (isinstance(record, dict) and ("observations" in record or isinstance(record.get("missing"), str))):
        return None
    record.pop(TOO_LARGE, None)           # this side's own mark (below): a job claiming it would hide its evidence
    room = holding.room(cell) if holding is not None else float("inf")
    try:
        size = sanitise_errors(record, grader_text, room)
    except OverHolding:
        holding.by_cell[cell] = 0                  # the record before it is dropped too (supervisor.Attempt.accept)
        limit = holding.limit / 2**20
        return {"missing": f"your notebook sent the grader more answers for this test than it keeps (at most "
                           f"{limit:.0f} MiB for the whole notebook): return what the test asks for, nothing more",
                TOO_LARGE: True}
    if holding is not None:
        holding.by_cell[cell] = size
    return record


WITHHELD = "(message withheld: it quotes the grader's own code)"


def short_message(text: str, grader_text: Quotable = "", limit: int = MESSAGE_CHARACTERS, lines: int = 1) -> str:
    """The first lines of a message, printable and short; withheld if it quotes the grader's code."""
    text = str(text).encode("utf-8", "replace").decode("utf-8")          # no lone surrogates
    kept = text.strip().splitlines()[:lines] or [""]
    line = re.sub(r"[^\x20-\x7e\u00a0-\uffff]", "?", " ".join(line.strip() for line in kept))[:limit]
    if grader_text and _quotes(line, grader_text):
        return WITHHELD
    return line


NOT_CODE = {tokenize.STRING: '""', tokenize.COMMENT: "", getattr(tokenize, "FSTRING_MIDDLE", -1): ""}


@functools.lru_cache(maxsize=64)
def code_only(source: str) -> str:
    """The grader's code, laid out as written, without its string literals and comments as Python's tokenizer reads
    them: the probes' own messages to students ("the function is still the template stub") may be repeated; its code
    may not. (A pattern over the text took the apostrophe of a comment's "a student's" for a quote, and from there
    held the rest of the file's messages for code and its code for messages.) A text that does not tokenize is all
    code. Kept per source: every job ships the same probe files."""
    lines = source.splitlines(keepends=True)
    starts = list(itertools.accumulate((len(line) for line in lines), initial=0))
    kept, at = [], 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in NOT_CODE:
                (row, column), (end_row, end_column) = token.start, token.end
                kept += [source[at:starts[row - 1] + column], NOT_CODE[token.type]]
                at = starts[end_row - 1] + end_column
    except (tokenize.TokenError, SyntaxError):
        return source
    return "".join(kept) + source[at:]


def _pieces(text: str) -> frozenset[str]:
    return frozenset(text[i:i + QUOTE_WINDOW] for i in range(len(text) - QUOTE_WINDOW + 1))


@functools.lru_cache(maxsize=4)
def _windows(grader_text: str) -> frozenset[str]:
    """Every QUOTE_WINDOW-character piece of the grader's text, built once: a message is then checked in
    time proportional to its own length, not to the grader's."""
    return _pieces(grader_text)


def _quotes(line: str, grader_text: Quotable) -> bool:
    """Whether the line holds a piece of the grader's text (or one of its secret pieces)."""
    windows = _windows(grader_text) if isinstance(grader_text, str) else grader_text
    return any(line[i:i + QUOTE_WINDOW] in windows for i in range(0, max(len(line) - QUOTE_WINDOW + 1, 0)))


def sanitise_errors(record: dict, grader_text: Quotable, room: float = float("inf")) -> int:
    """Every 'error' or 'missing' text inside a record cut to a short line of the student's own, in place (the record
    is this side's own decoded copy: nothing is built twice). Returns what the record holds here, estimated as it
    goes (sys.getsizeof of every object met, and the buffers under its arrays, each once): OverHolding as soon as
    that passes `room`, so an oversized record is given up after `room` bytes of walking, not all of it."""
    held, buffers, size_of = 0, set(), sys.getsizeof
    stack: list[dict | list | np.ndarray] = [record]
    while stack:
        value = stack.pop()
        held += size_of(value)
        if isinstance(value, dict):
            for key, item in value.items():
                held += size_of(key)
                if key in ("error", "missing") and isinstance(item, str):
                    value[key] = item = short_message(item, grader_text)
                if isinstance(item, (dict, list, np.ndarray)):
                    stack.append(item)
                else:
                    held += size_of(item)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, (dict, list, np.ndarray)):
                    stack.append(item)
                else:
                    held += size_of(item)
        elif isinstance(value, np.ndarray):
            base = value
            while isinstance(base, np.ndarray) and base.base is not None:
                base = base.base
            if id(base) not in buffers:            # a frame's arrays are views of its one buffer: counted once
                buffers.add(id(base))
                held += base.nbytes if isinstance(base, np.ndarray) else memoryview(base).nbytes
        if held > room:
            raise OverHolding
    return held


def cell_label(nb, index, first_line: bool = True) -> str:
    """How the student can find a cell: its nbgrader id, or its position and first line (a cell of the template's
    own, such as its scratch cell, or one the student added: the grader cannot tell which, so it says neither)."""
    if index is None or not 0 <= index < len(nb.cells):
        return "a cell"
    cell_id = grade_id(nb.cells[index])
    if cell_id == SHARED_CELL:
        return "the grader's extra calls of your functions after your last cell"
    if cell_id:
        return f"cell '{cell_id}'"
    first = next((line.strip() for line in nb.cells[index].source.splitlines() if line.strip()), "")
    return f"cell {index + 1} (the one starting `{first[:40]}`)" if first and first_line else f"cell {index + 1}"


SELF_CHECK_FAILED = re.compile(r"^FAILED \(.*", re.M)    # how the released helpers' check_part reports a failure
SELF_CHECK_PASSED = ": all visible checks pass"          # how check_part's last line ends when none failed
SELF_CHECK_PROBLEMS = " problem(s) above"                 # ... and when some did


def visible_cell_errors(nb, hidden: set[str], grader_text: Quotable = "") -> dict[str, dict]:
    """Visible test cell id -> {"ename", "text"} for visible tests that raised, or ({"ename": None}) printed the
    failures the released helpers report without raising (under the one quote rule: a student's function can
    raise from a visible check as well as from a probe)."""
    errors = {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and meta.get("grade_id") not in hidden:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    errors[meta["grade_id"]] = {"ename": short_message(output.get("ename"), grader_text, 100),
                                                **student_message(output.get("evalue", ""), grader_text)}
                elif output.get("output_type") == "stream" and meta["grade_id"] not in errors:
                    reported = SELF_CHECK_FAILED.search(output.get("text", ""))
                    if reported:
                        failure = output["text"][reported.start():].split("\n\n", 1)[0]
                        errors[meta["grade_id"]] = {"ename": None, **student_message(failure, grader_text)}
            if errors.get(meta["grade_id"], {}).get("ename", "") is None and _every_part_passed(cell):
                del errors[meta["grade_id"]]       # the 'FAILED (' lines were the student's own prints
    return errors


def _every_part_passed(cell) -> bool:
    """Whether the check's status lines (one a part: a cell may check several) say that every part passed: the
    helpers print each after what the student's functions print while checked; a part that failed says so."""
    said = [line.rstrip() for o in cell.get("outputs", []) if o.get("output_type") == "stream"
            for line in str(o.get("text", "")).splitlines()]
    status = [line for line in said if line.endswith((SELF_CHECK_PASSED, SELF_CHECK_PROBLEMS))]
    return bool(status) and all(line.endswith(SELF_CHECK_PASSED) for line in status)


def student_message(text: str, grader_text: Quotable = "") -> dict:
    """{"text": a summary a sentence can carry (results.summarised), "quoted": the message in full when the summary
    leaves some of it out}: a visible check's own message explains its failure, so all of it is kept, folded; the
    whole is withheld if any of it quotes the grader's code."""
    full = short_message("\n".join(line.rstrip() for line in str(text).strip().splitlines()), grader_text,
                         VISIBLE_MESSAGE_CHARACTERS, lines=len(str(text).splitlines()) or 1)
    if full == WITHHELD:
        return {"text": full, "quoted": None}
    printable = re.sub(r"[^\x20-\x7e\u00a0-\uffff\n]", "?", str(text).strip())[:VISIBLE_MESSAGE_CHARACTERS]
    summary, quoted = quote(printable)
    return {"text": summary, "quoted": quoted}
