"""A progress bar on standard error for the commands that take more than a moment (grade, feedback, integrity)."""
from __future__ import annotations

import sys
import time


class Progress:
    """`step(label)` after each unit of work: a bar, the count, the seconds so far and what was just done
    (one line rewritten in a terminal; one line per step in a log)."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.stream, self.started = total, 0, stream, time.monotonic()

    def step(self, label: str) -> None:
        self.done += 1
        if self.stream is None:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        elapsed = time.monotonic() - self.started
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {elapsed:5.0f}s {label[:40]}"
        if self.stream.isatty():
            self.stream.write("\r" + line.ljust(100) + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
