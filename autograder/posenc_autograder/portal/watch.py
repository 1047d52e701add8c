"""Status requests held until their attempt's status changes (long polling), so a student's page learns that
their notebook is graded when it is, not at its next poll, and asks once per change instead of every second.

A held request costs no thread: it waits on an asyncio event that the grading threads set (from their own
threads) after they commit an attempt's new status. The grading threads live in the portal's process (the
sandboxes, local or on Dask, only run the notebooks), and one portal serves a course, so every change is seen
here. Held requests are bounded per student and in all: past either bound a request is answered at once, as a
plain poll, so no one (nor a hostile student with many tabs) can hold the portal's connections."""
from __future__ import annotations

import asyncio
import collections
import contextlib
import threading

HELD_PER_STUDENT = 2                   # a student's status requests held at once (two tabs, say)
HELD_IN_ALL = 400                      # every student's together (a class in a rush holds one each)


class StatusWatch:
    def __init__(self, per_student: int = HELD_PER_STUDENT, in_all: int = HELD_IN_ALL):
        self.per_student, self.in_all = per_student, in_all
        self._lock = threading.Lock()
        self._waiting: dict[int, list[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._by_student: collections.Counter = collections.Counter()
        self.closed = False

    @property
    def held(self) -> int:
        return sum(self._by_student.values())

    def held_by(self, student: str) -> int:
        return self._by_student[student]

    @contextlib.contextmanager
    def hold(self, student: str, attempt_id: int):
        """An event set when the attempt's status changes, for as long as the request is held; None when the
        student or the portal already holds all it may (the request is then answered at once). Enter it before
        reading the status, so that no change between the read and the wait is missed."""
        entry = (asyncio.get_running_loop(), asyncio.Event())
        with self._lock:
            allowed = not self.closed and self._by_student[student] < self.per_student and self.held < self.in_all
            if allowed:
                self._by_student[student] += 1
                self._waiting.setdefault(attempt_id, []).append(entry)
        try:
            yield entry[1] if allowed else None
        finally:
            if allowed:
                with self._lock:
                    self._by_student[student] -= 1
                    if not self._by_student[student]:
                        del self._by_student[student]
                    self._waiting[attempt_id].remove(entry)
                    if not self._waiting[attempt_id]:
                        del self._waiting[attempt_id]

    def changed(self, attempt_id: int) -> None:
        """The attempt's new status is committed: answer every request held on it. Called from any thread."""
        with self._lock:
            entries = list(self._waiting.get(attempt_id, ()))
        self._wake(entries)

    def close(self) -> None:
        """The server stops: answer every held request now, and hold no new one (a held request would keep the
        server waiting for its connection to close)."""
        with self._lock:
            self.closed = True
            entries = [entry for held in self._waiting.values() for entry in held]
        self._wake(entries)

    @staticmethod
    def _wake(entries) -> None:
        for loop, event in entries:
            with contextlib.suppress(RuntimeError):            # its event loop is closed: nothing waits there
                loop.call_soon_threadsafe(event.set)
