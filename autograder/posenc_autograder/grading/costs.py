"""CPU seconds spent per phase of grading, summed over a run: what `make bench` prints per notebook, so a
regression shows which phase grew. Never used to grade.

Trusted-side phases are timed on the thread doing them (time.thread_time, so parallel jobs do not blur
each other); the sandbox's CPU is the kernel's own account of the job's processes, read when they are reaped.
"""
from __future__ import annotations

import collections
import contextlib
import threading
import time

PHASES = ("prepare", "sandbox", "supervise", "judge", "store", "evidence")

_lock = threading.Lock()
_seconds: collections.defaultdict[str, float] = collections.defaultdict(float)


def add(phase: str, seconds: float) -> None:
    with _lock:
        _seconds[phase] += seconds


@contextlib.contextmanager
def timed(phase: str):
    started = time.thread_time()
    try:
        yield
    finally:
        add(phase, time.thread_time() - started)


def taken() -> dict[str, float]:
    """Seconds per phase since the last reset."""
    with _lock:
        return {phase: _seconds.get(phase, 0.0) for phase in PHASES}


def reset() -> None:
    with _lock:
        _seconds.clear()
