"""Who may have an upload read and checked now, asked before a byte of its body is read.

Checking an upload costs the portal's CPU (reading up to the size cap, hashing, the linear scan, parsing), which
every student's upload and every grading needs at once in a rush. So a student has at most one upload being
read and checked at a time, and after a file refused by its checks (not a notebook, too deep, too many values,
unreadable, larger than the cap while streaming) their next upload waits `[sharing] refused_wait_seconds`,
twice as long after each further refusal in a row, at most `refused_wait_max_seconds`; an accepted upload, or no
refusal for the longest wait after the last wait ended, starts the count again. A student who keeps sending bad
files thus costs one check per wait, whatever they send.

The state is the portal process's own (the event loop's thread alone touches it): a restart forgets the waits.
"""
from __future__ import annotations

import dataclasses
import time

from posenc_autograder.settings import Sharing


@dataclasses.dataclass
class Refusals:
    count: int = 0                   # refused in a row
    last: float = 0.0                # when the last one was refused (the clock's seconds)


class UploadGate:
    def __init__(self, sharing: Sharing, clock=time.monotonic):
        self.sharing, self.clock = sharing, clock
        self.checking: set[str] = set()
        self.refusals: dict[str, Refusals] = {}

    def wait_seconds(self, student: str) -> float:
        """How long until this student's next upload may be read (0: now)."""
        refused = self.refusals.get(student)
        if refused is None or refused.count == 0:
            return 0.0
        return max(refused.last + self.wait_after(refused.count) - self.clock(), 0.0)

    def wait_after(self, count: int) -> float:
        """The wait after `count` refusals in a row."""
        base, longest = self.sharing.refused_wait_seconds, self.sharing.refused_wait_max_seconds
        return float(min(base * 2 ** min(count - 1, 30), max(longest, base)))

    def enter(self, student: str) -> bool:
        """Mark an upload of this student as being checked; False if one already is."""
        if student in self.checking:
            return False
        self.checking.add(student)
        return True

    def leave(self, student: str, refused: bool | None) -> None:
        """The upload's checks are over: refused (True), accepted (False) or neither (None: busy, no file)."""
        self.checking.discard(student)
        if refused is None:
            return
        if not refused:
            self.refusals.pop(student, None)
            return
        now, kept = self.clock(), self.refusals.setdefault(student, Refusals())
        quiet = now - kept.last > self.sharing.refused_wait_max_seconds + self.wait_after(max(kept.count, 1))
        kept.count = 1 if quiet else kept.count + 1
        kept.last = now
