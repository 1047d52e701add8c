"""No parser on the trusted side costs more than linear time in what a student sends it.

Every entry point that reads bytes a student chose (records frames and the probes' records, the job's outputs and
messages, notebooks read by the grader and uploaded to the portal, zips and their member names, LMS notes, the
roster's rows) is timed on the input that is worst for it, at 64 kB and at 1 MB: its bytes per second may not
drop by more than MAX_RATIO (a quadratic parser's drop by 16). Each is timed in a forked child, in CPU seconds,
and stopped when the 1 MB input takes far longer than linear growth allows: an old quadratic parser fails here
in seconds instead of freezing the suite for hours. The least of TIMINGS counts at either size; at 1 MB the timing
stops at the first that is within MAX_RATIO (the least of all TIMINGS would be too: more only lowers it).
"""
from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import pathlib
import resource
import tempfile
import time
from typing import Callable

import pytest

from posenc_autograder import results
from posenc_autograder.devtools import portal_load
from posenc_autograder.grading import execute, pipeline
from posenc_autograder.intake.lms import blackboard, canvas, moodle, plain
from posenc_autograder.intake.submissions import read_notebook
from posenc_autograder.portal import uploads
from posenc_autograder.probes import codec, magics
from posenc_autograder.sandbox.channel_reader import sanitise_outputs

SMALL, LARGE = 64 * 2**10, 2**20
MAX_RATIO = 6.0                  # bytes per second at SMALL over at LARGE: 1 when linear, 16 when quadratic
MIN_SECONDS = 0.03               # an input is called again until this much CPU is spent: a steadier per-call figure
TIMINGS = 3                      # of each size; the least counts
SLACK_SECONDS = 2.0              # on top of what linear growth allows LARGE, before the child is stopped
MAX_SECONDS = 10.0               # CPU for LARGE, whatever the growth: a linear parser reads 1 MB in far less
WALL_SECONDS = 60.0              # for either size on the wall, however busy the machine


@dataclasses.dataclass(frozen=True)
class Entry:
    """A trusted-side entry point: make(size) -> the worst input of about `size` bytes (untimed); call(input)."""
    name: str
    make: Callable[[int], object]
    call: Callable[[object], object]


def frame_of(skeleton: bytes, array_bytes: bytes = b"") -> bytes:
    """A channel frame as student code can write one by hand: header, skeleton, array bytes."""
    return codec.HEADER.pack(len(skeleton), len(array_bytes)) + skeleton + array_bytes


def unterminated_escaped_quotes(size: int) -> bytes:
    """What froze the grader: a string of escaped quotes that never ends (a string pattern backtracks on it)."""
    return b'"' + b'\\"' * (size // 2)             # one byte over size


def read_frames(data: bytes, max_nodes: int = codec.MAX_NODES):
    return codec.FrameReader(codec.HEADER.size + len(data) + 1, max_nodes, writable=False).feed(data)


def scan_frames(data: bytes):
    """The reader with a value cap under SMALL, so that every size is scanned before it is parsed (a skeleton of
    fewer bytes than the cap is parsed at once): the path whose cost the bytes decide."""
    return read_frames(data, max_nodes=1000)


ENTRIES = [
    Entry("bench-portal's reading of the attempt page's status", lambda n: 'id="status"' * (n // 11),
          lambda text: portal_load.STATUS_SHOWN.search(text)),
    Entry("records frame: unterminated escaped quotes", lambda n: frame_of(unterminated_escaped_quotes(n)),
          scan_frames),
    Entry("records frame: deep nesting", lambda n: frame_of(b"[" * n), scan_frames),
    Entry("records frame: brackets in escaped strings", lambda n: frame_of(b'[[], ["' + b'\\\"[{,' * (n // 6)
                                                                                + b'"]]'), scan_frames),
    Entry("records frame: many values", lambda n: frame_of(b"[[], [" + b"0," * (n // 2) + b"0]]"), read_frames),
    Entry("codec.loads: unterminated escaped quotes", lambda n: unterminated_escaped_quotes(n).decode(),
          lambda text: _refused(codec.loads, text)),
    Entry("portal upload check: unterminated escaped quotes", lambda n: b'{"cells": ' + unterminated_escaped_quotes(n),
          uploads.problem),
    Entry("submitted notebook: a source of many pieces", lambda n: notebook_file(["x\\n"] * (n // 6)), read_notebook),
    Entry("submitted notebook: escapes", lambda n: notebook_file(["\\u00e9\\\"" * (n // 8)]), read_notebook),
    Entry("probe record: long and many messages", lambda n: {"observations": {"a": [{"error": "[" * (n // 2)}] +
                                                                           [{"missing": "1 "}] * (n // 40)}},
          execute.decode_record),
    Entry("cell outputs: control characters", lambda n: {"outputs": [{"output_type": "stream", "name": "stdout",
                                                                      "text": "\x00[" * (n // 2)}]},
          lambda frame: sanitise_outputs(frame, SMALL + LARGE)),
    Entry("visible check failures", lambda n: failing_checks("FAILED ([" + "[ 1" * (n // 3)),
          lambda nb: execute.visible_cell_errors(nb, set())),
    Entry("student's text summarised: brackets", lambda n: "[" * n, results.summarised),
    Entry("student's text summarised: digits", lambda n: "1" * n + "x", results.summarised),
    Entry("student's text summarised: numbers", lambda n: "1, " * (n // 3), results.summarised),
    Entry("student's message: brackets", lambda n: "[ " * (n // 2), execute.student_message),
    Entry("Blackboard note", lambda n: "Name: " + " " * (n // 3) + "x\nAssignment: a" + " " * (n // 3) + "b\n"
                                      "Date Submitted: " + "a" * (n // 3), blackboard.note_facts),
    Entry("Blackboard notes: the assignment's prefix", lambda n: {
        "A_u_attempt_2024-01-01-00-00-00": "Assignment: a" + " " * (n // 2) + "b\nName: (" + " " * (n // 2)},
          lambda notes: blackboard.blackboard_prefix(list(notes), notes)),
    Entry("Blackboard file name", lambda n: "x_attempt_2024-01-01-00-00-0" * (n // 28) + "_f.ipynb",
          lambda name: blackboard.parse(name, {"positional_encoding"})),
    Entry("Canvas file name", lambda n: "a" * n + "_late_1_2-3-4-5" * 2, lambda name: canvas.parse(name, {"pe"})),
    Entry("Moodle file name", lambda n: "a" * n + "_1_assignsubmission_file" + "_" * n,
          lambda name: moodle.parse(name, {"pe"})),
    Entry("cell's magics: empty lines", lambda n: "\n" * n + "x", magics.skipped_in),
    Entry("cell's magics: one a line", lambda n: "%time x\n" * (n // 8), magics.skipped_in),
    Entry("answer cell read as IPython", lambda n: "(" * (n // 2) + "\n%time x\n",
          lambda source: pipeline.defined_before(source, {"f"}, 3)),
    Entry("plain file name", lambda n: "ep" * (n // 2), lambda name: plain.parse(name, {"pe", "pp", "ee"})),
]


def notebook_file(source: list[str]) -> pathlib.Path:
    """A notebook on disk (its text escaped as JSON, the pieces as a notebook's lines), for read_notebook."""
    cell = '{"cell_type": "code", "metadata": {}, "outputs": [], "source": ["' + '", "'.join(source) + '"]}'
    text = '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [' + cell + "]}"
    path = pathlib.Path(tempfile.mkdtemp()) / "notebook.ipynb"
    path.write_text(text)
    json.loads(text)                              # the input is a valid notebook: its whole cost is the reading
    return path


def failing_checks(text: str):
    """An executed notebook whose visible check printed `text`."""
    import nbformat
    cell = nbformat.v4.new_code_cell("check()", metadata={"nbgrader": {"grade": True, "grade_id": "visible"}})
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    return nbformat.v4.new_notebook(cells=[cell])


def _refused(parse, *args):
    try:
        return parse(*args)
    except ValueError as exc:
        return exc


def cpu_per_call(entry: Entry, size: int, enough: Callable[[float], bool] = lambda best: False) -> float:
    """CPU seconds of one call, the least of TIMINGS (each repeated until MIN_SECONDS): a first touch of new memory or
    a busy neighbour only ever adds time. Fewer when the least so far is `enough` (more could only lower it)."""
    data, best = entry.make(size), float("inf")
    for _ in range(TIMINGS):
        calls, started = 0, time.process_time()
        while (spent := time.process_time() - started) < MIN_SECONDS or not calls:
            entry.call(data)
            calls += 1
        best = min(best, spent / calls)
        if enough(best):
            break
    return best


def _child(entry: Entry, pipe) -> None:
    _cpu_limit(MAX_SECONDS)
    small = cpu_per_call(entry, SMALL)
    pipe.send(small)
    # Stopped by the kernel (SIGXCPU) past the CPU linear growth allows LARGE: a busy machine slows the clock on
    # the wall, not this.
    _cpu_limit(min(small * LARGE / SMALL * MAX_RATIO * TIMINGS + SLACK_SECONDS, MAX_SECONDS))
    pipe.send(cpu_per_call(entry, LARGE, lambda large: bytes_per_second_ratio(small, large) <= MAX_RATIO))


def _cpu_limit(seconds: float) -> None:
    """SIGXCPU (the child ends) after this much more CPU."""
    spent = resource.getrusage(resource.RUSAGE_SELF)
    limit = math.ceil(spent.ru_utime + spent.ru_stime + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 1))


def growth(entry: Entry) -> tuple[float, float]:
    """(CPU seconds at SMALL, at LARGE) of one entry point, in a forked child the kernel stops when LARGE takes more
    CPU than linear growth (times MAX_RATIO, plus slack) allows; AssertionError then."""
    ours, theirs = multiprocessing.get_context("fork").Pipe()
    child = multiprocessing.get_context("fork").Process(target=_child, args=(entry, theirs), daemon=True)
    child.start()
    theirs.close()
    try:
        try:
            assert ours.poll(WALL_SECONDS), f"{entry.name}: {SMALL} bytes took over {WALL_SECONDS} s"
            small = ours.recv()
        except EOFError:
            raise AssertionError(f"{entry.name}: {SMALL} bytes took over {MAX_SECONDS} CPU seconds") from None
        try:
            assert ours.poll(WALL_SECONDS), f"{entry.name}: {LARGE} bytes took over {WALL_SECONDS} s"
            return small, ours.recv()
        except EOFError:
            raise AssertionError(f"{entry.name}: {LARGE} bytes took more CPU than linear growth allows (64 kB took "
                                 f"{small:.4f} s): superlinear") from None
    finally:
        child.kill()
        child.join()


def bytes_per_second_ratio(small: float, large: float) -> float:
    """Bytes per second at SMALL over bytes per second at LARGE."""
    return (SMALL / max(small, 1e-9)) / (LARGE / max(large, 1e-9))


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_cost_grows_linearly(entry):
    small, large = growth(entry)
    ratio = bytes_per_second_ratio(small, large)
    print(f"{entry.name}: {small * 1e3:.2f} ms at 64 kB, {large * 1e3:.1f} ms at 1 MB, ratio {ratio:.2f}")
    assert ratio <= MAX_RATIO, f"{entry.name}: {ratio:.1f} times fewer bytes per second at 1 MB than at 64 kB"


def _freeze_child(pipe) -> None:
    frame = frame_of(unterminated_escaped_quotes(1_000_000))
    started = time.process_time()
    frames = read_frames(frame)
    pipe.send((frames == [codec.REFUSED], time.process_time() - started))


def test_the_frame_that_froze_the_grader_is_refused_at_once():
    """The frame that froze the grader: a 1,000,000-byte skeleton that is an unterminated string of escaped quotes.
    Its string pattern held the GIL for hours and froze every grader thread; it is refused in well under a second."""
    ours, theirs = multiprocessing.get_context("fork").Pipe()
    child = multiprocessing.get_context("fork").Process(target=_freeze_child, args=(theirs,), daemon=True)
    child.start()
    try:
        assert ours.poll(20), "the frame was still being read after 20 s"
        refused, seconds = ours.recv()
    finally:
        child.kill()
        child.join()
    assert refused
    assert seconds < 1.0, f"{seconds:.2f} CPU seconds for one frame"


def test_a_cell_of_more_magics_than_ipython_rewrites_is_read_without_raising():
    """IPython gives up (RuntimeError) after rewriting 500 escapes, each after reading the whole cell again: the grader
    reads such a cell within its budget and says nothing of it, instead of failing on the notebook."""
    cell = "%time x = 1\n" * 600 + "!ls\n"
    assert magics.skipped_in(cell) == []
    assert pipeline.defined_before(cell + "def f():\n    pass\n", {"f"}, 700) is False
    assert magics.skipped_in("x = 1\n%pip install y\n") == [magics.Skipped("%pip", 2)]
