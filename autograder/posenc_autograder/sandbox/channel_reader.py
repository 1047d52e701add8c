"""What a job sends, read on the trusted side: the channel split into decoded frames within the job's budgets, and
a cell's outputs cut down to plain text. Every byte is the student's and untrusted."""
from __future__ import annotations

import re

from posenc_autograder.probes import codec
from posenc_autograder.settings import Limits

OUTPUT_KINDS = {"stdout", "stderr"}


class ChannelReader:
    """Splits the channel into decoded frames, within the job's budgets (bytes read and the CPU this side spends
    decoding them, all attempts); every frame is untrusted. Each attempt's channel is a new pipe, read from its
    first byte by a new frame reader: nothing an attempt sent (a frame cut short, a header announcing more than
    can come) reaches the next."""

    def __init__(self, limits: Limits):
        self.limits, self.total, self.cpu_seconds = limits, 0, 0.0
        self.output_bytes = 0            # output text kept so far, all attempts
        self.start_attempt()

    def start_attempt(self) -> None:
        self.frames = codec.FrameReader(self.limits.max_frame_bytes, writable=False)    # read-only: arrays not copied

    @property
    def over_budget(self) -> bool:
        return self.total > self.limits.channel_bytes or self.cpu_seconds > self.limits.channel_cpu_seconds

    @property
    def refusal(self) -> str | None:
        """Why a frame of this attempt was refused (codec.TOO_LARGE, codec.MALFORMED; the first), or None."""
        return self.frames.refusal

    @property
    def lost(self) -> bool:
        """A header announced more bytes than the channel's budget leaves: no frame can follow it."""
        return self.frames.skipping > self.limits.channel_bytes - self.total

    def read(self, data: bytes) -> list:
        """The frames in `data`, in order: each a dict, or codec.REFUSED where a frame was dropped (where it came
        decides which cell it is charged to)."""
        self.total += len(data)
        return [f for f in self.frames.feed(data) if isinstance(f, dict) or f is codec.REFUSED]

    def feed(self, data: bytes) -> list[dict]:
        """The frames in `data` that were read, in order."""
        return [f for f in self.read(data) if f is not codec.REFUSED]


CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean_text(value, limit: int) -> str:
    """Text that any JSON, HTML or terminal can carry: valid UTF-8, no control characters, capped."""
    text = value[:limit] if isinstance(value, str) else ""
    return CONTROL_CHARACTERS.sub("", text.encode("utf-8", "replace").decode("utf-8"))


def sanitise_outputs(frame: dict, limit: int) -> dict:
    """Only plain text survives: stream text and an error's name and message, each capped."""
    outputs = []
    for output in frame.get("outputs", []) if isinstance(frame.get("outputs"), list) else []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream" and isinstance(output.get("name"), str) and output["name"] in OUTPUT_KINDS:
            outputs.append({"output_type": "stream", "name": output["name"],
                            "text": _clean_text(output.get("text"), limit)})
        elif kind == "error":
            outputs.append({"output_type": "error", "ename": _clean_text(output.get("ename"), 100),
                            "evalue": _clean_text(output.get("evalue"), 1000), "traceback": []})
    return {"outputs": outputs, "truncated": frame.get("truncated") is True}
