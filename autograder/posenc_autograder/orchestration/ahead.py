"""Work of a class run computed ahead, in order, by processes forked from the run: what needs no sandbox and stores
nothing (a re-judge from kept records, up to its storing), so the run's other core works too.

Each process computes one item at a time from what it inherited when forked (the function and the class: nothing but
an index and the item's answer cross), a few items ahead of the run, which takes the answers in order and stores them
itself: one writer of the gradebook and of every file, as with no process. An item a process did not answer (it died,
the work raised, the pool could not start) is answered None: the run does it itself, so a crash loses nothing.
"""
from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Callable, Iterable
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

T = TypeVar("T")
AHEAD_PER_PROCESS = 4               # items in flight per process: each holds one notebook's answer (bounded memory)

_WORK: Callable[[int], Any] | None = None      # the work of the processes forked next (a fork inherits it)


def _run(index: int) -> Any:
    assert _WORK is not None
    return _WORK(index)


class Ahead(Generic[T]):
    """work(index) for each of `indices`, computed by `processes` forked processes; take() them in this order."""

    def __init__(self, work: Callable[[int], T | None], indices: Iterable[int], processes: int):
        global _WORK
        self._indices = iter(indices)
        self._futures: dict[int, concurrent.futures.Future] = {}
        self._window = AHEAD_PER_PROCESS * processes
        _WORK = work
        try:
            # Forked now, before the run starts any thread (a fork copies only the thread that forks).
            self._pool: concurrent.futures.ProcessPoolExecutor | None = concurrent.futures.ProcessPoolExecutor(
                processes, mp_context=multiprocessing.get_context("fork"))
        except (OSError, ValueError):
            self._pool = None                 # no processes here: take() answers None, the run does the work
        self._fill()

    def _fill(self) -> None:
        while self._pool is not None and len(self._futures) < self._window:
            index = next(self._indices, None)
            if index is None:
                return
            try:
                self._futures[index] = self._pool.submit(_run, index)
            except (BrokenProcessPool, RuntimeError, OSError):
                return                        # the pool is gone: what is left is done by the run

    def take(self, index: int) -> T | None:
        """The answer for `index`, waiting for it; None when no process answered it."""
        future = self._futures.pop(index, None)
        if future is None:
            return None
        try:
            found = future.result()
        except Exception:  # noqa: BLE001 - a process died (BrokenProcessPool) or the work raised: the run does it
            found = None
        self._fill()
        return found

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
