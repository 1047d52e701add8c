"""The job's task reaches it whole even when the pipe takes it a part at a time; a warm job's carries no probe
source."""
import io
import json

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor, warm
from posenc_autograder.sandbox.layout import HEADER_LENGTH_BYTES
from posenc_autograder.settings import Limits


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


def test_a_warm_jobs_payload_carries_no_probe_source_and_a_fresh_interpreters_does(monkeypatch):
    """The warm zygote imported the probes before it served: their 100 kB of sources in each job's header were
    parsed by the job, then dropped. A fresh interpreter (bubblewrap) still gets them; both run the cell."""
    fed = []
    feed = supervisor._feed
    monkeypatch.setattr(supervisor, "_feed", lambda stream, payload: fed.append(payload) or feed(stream, payload))
    cells = [{"cell_type": "code", "source": "print('ran')"}]
    for warm_sandbox in ("1", "0"):
        monkeypatch.setenv(warm.SWITCH, warm_sandbox)
        outcome = supervisor.run_job(cells, codec.frame({}), [], probe_files(), Limits())
        assert outcome.finished and outcome.outputs[0]["outputs"][0]["text"] == "ran\n", outcome
    headers = [json.loads(payload[HEADER_LENGTH_BYTES:][:int.from_bytes(payload[:HEADER_LENGTH_BYTES], "little")])
               for payload in fed]
    assert [header.get("probe_files") for header in headers] == [None, probe_files()]
