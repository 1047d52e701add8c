"""No parser on the trusted side costs more than linear time in what a student sends it.

Every entry point that reads bytes a student chose (records frames and the probes' records, the job's outputs and
messages, notebooks read by the grader and uploaded to the portal, zips and their member names, LMS notes, the
roster's rows) is timed on the input that is worst for it, at 64 kB and at 1 MB: its bytes per second may not
drop by more than MAX_RATIO (a quadratic parser's drop by 16). Each is timed in a forked child, in CPU seconds,
and stopped when the 1 MB input takes far longer than linear growth allows: an old quadratic parser fails here
in seconds instead of freezing the suite for hours.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import time
from typing import Callable

import pytest

from posenc_autograder.portal import uploads
from posenc_autograder.probes import codec

SMALL, LARGE = 64 * 2**10, 2**20
MAX_RATIO = 4.0                  # bytes per second at SMALL over at LARGE: 1 when linear, 16 when quadratic
MIN_SECONDS = 0.03               # an input is called again until this much CPU is spent: a steadier per-call figure
TIMINGS = 3                      # of each size; the least counts
SLACK_SECONDS = 2.0              # on top of what linear growth allows LARGE, before the child is stopped
MAX_SECONDS = 10.0               # for either size, whatever the growth: a linear parser reads 1 MB in far less


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
]


def _refused(parse, *args):
    try:
        return parse(*args)
    except ValueError as exc:
        return exc


def cpu_per_call(entry: Entry, size: int) -> float:
    """CPU seconds of one call, the least of TIMINGS (each repeated until MIN_SECONDS): a first touch of new memory or
    a busy neighbour only ever adds time."""
    data, best = entry.make(size), float("inf")
    for _ in range(TIMINGS):
        calls, started = 0, time.process_time()
        while (spent := time.process_time() - started) < MIN_SECONDS or not calls:
            entry.call(data)
            calls += 1
        best = min(best, spent / calls)
    return best


def _child(entry: Entry, pipe) -> None:
    pipe.send(cpu_per_call(entry, SMALL))
    pipe.send(cpu_per_call(entry, LARGE))


def growth(entry: Entry) -> tuple[float, float]:
    """(CPU seconds at SMALL, at LARGE) of one entry point, in a forked child stopped when LARGE takes more than
    linear growth (times MAX_RATIO, plus slack) allows; AssertionError then."""
    ours, theirs = multiprocessing.get_context("fork").Pipe()
    child = multiprocessing.get_context("fork").Process(target=_child, args=(entry, theirs), daemon=True)
    child.start()
    try:
        assert ours.poll(MAX_SECONDS), f"{entry.name}: {SMALL} bytes took over {MAX_SECONDS} s"
        small = ours.recv()
        allowed = min(small * LARGE / SMALL * MAX_RATIO + SLACK_SECONDS, MAX_SECONDS)
        assert ours.poll(allowed), \
            f"{entry.name}: {LARGE} bytes took over {allowed:.1f} s (64 kB took {small:.4f} s): superlinear"
        return small, ours.recv()
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
