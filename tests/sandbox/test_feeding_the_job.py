"""The job's task reaches it whole even when the pipe takes it a part at a time."""
import io

from posenc_autograder.sandbox import supervisor


class ShortWrites(io.RawIOBase):
    """A raw pipe end that takes at most `step` bytes a call, as a write interrupted by a signal does."""

    def __init__(self, step: int):
        self.step, self.received = step, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        taken = bytes(data[: self.step])
        self.received += taken
        return len(taken)


def test_a_payload_taken_in_parts_arrives_whole():
    payload = bytes(range(256)) * 1000
    stream = ShortWrites(step=4093)
    supervisor._feed(stream, payload)
    assert bytes(stream.received) == payload
    assert stream.closed


def test_a_buffered_stream_is_fed_once_and_closed():
    stream = io.BytesIO()
    closed_with = []
    stream.close = lambda: closed_with.append(stream.getvalue())  # type: ignore[method-assign]
    supervisor._feed(stream, b"task frame")
    assert closed_with == [b"task frame"]
