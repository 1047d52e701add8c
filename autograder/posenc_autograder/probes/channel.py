"""The one way out of the sandbox: frames (probes/codec.py) on an inherited pipe.

The supervisor owns the read end and treats every frame as untrusted (student code shares this
process and can write frames too); nothing the sandbox writes to a file is ever read back.
"""
from __future__ import annotations

import os
import struct

from . import codec

FD_VARIABLE = "POSENC_CHANNEL_FD"
WRITE_PARTS = 512          # buffers in one gathering write (the kernel takes at most IOV_MAX, 1024)
# The way in after the task: the supervisor's go for a cell, written on the job's input when its own clock for the
# cell starts, is the cell's index (the job's clock for the cell starts on it: shell_runner.Interrupter).
GO = struct.Struct("<I")


def send(message: dict) -> None:
    """One frame on the channel, written from the buffers it is made of (an 8 MB record is never copied into one)."""
    parts = [view.cast("B") for view in (memoryview(part) for part in codec.frame_parts(message)) if view.nbytes]
    fd = int(os.environ.get(FD_VARIABLE, "-1"))
    first = 0
    while first < len(parts):
        written = os.writev(fd, parts[first:first + WRITE_PARTS])
        while written:                       # past what was written; the rest of a part written in part stays
            size = len(parts[first])
            if written >= size:
                written, first = written - size, first + 1
            else:
                parts[first], written = parts[first][written:], 0
