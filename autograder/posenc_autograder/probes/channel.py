"""The one way out of the sandbox: frames (probes/codec.py) on an inherited pipe.

The supervisor owns the read end and treats every frame as untrusted (student code shares this
process and can write frames too); nothing the sandbox writes to a file is ever read back.
"""
from __future__ import annotations

import os

from . import codec

FD_VARIABLE = "POSENC_CHANNEL_FD"


def send(message: dict) -> None:
    data = memoryview(codec.frame(message))
    fd = int(os.environ.get(FD_VARIABLE, "-1"))
    while data:
        data = data[os.write(fd, data):]
