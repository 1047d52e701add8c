"""How a job's records go down its channel: a frame is written from the buffers it is made of (header and skeleton,
then each array's own memory), never first copied into one buffer, through a pipe widened to 1 MiB so an 8 MB core
record crosses in a few writes; the bytes are exactly codec.frame's."""
import os
import threading

import numpy as np

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import channel, codec
from posenc_autograder.sandbox import supervisor
from posenc_autograder.settings import Limits


def _sent(monkeypatch, messages) -> bytes:
    """What channel.send writes for each message, read from a pipe of the default size (writes are partial)."""
    read, write = os.pipe()
    monkeypatch.setenv(channel.FD_VARIABLE, str(write))
    received = bytearray()

    def drain():
        while data := os.read(read, 1 << 16):
            received.extend(data)
    reader = threading.Thread(target=drain)
    reader.start()
    try:
        for message in messages:
            channel.send(message)
    finally:
        os.close(write)
        reader.join()
        os.close(read)
    return bytes(received)


def test_a_record_is_written_from_its_parts_and_reads_back_exactly(monkeypatch):
    rng = np.random.default_rng(5)
    shared = rng.random(3)
    messages = [{"result": "hidden", "record": {"table": rng.random((1000, 512)), "scalar": np.array(2.5),
                                                 "empty": np.zeros((0, 4)), "many": [rng.random(7) for _ in range(600)],
                                                 "twice": [shared, shared], "text": "é" * 10_000, "nan": float("nan")}},
                {"done": True}]
    expected = b"".join(codec.frame(message) for message in messages)
    monkeypatch.setattr(codec, "frame", lambda value: (_ for _ in ()).throw(AssertionError("joined into one buffer")))
    assert _sent(monkeypatch, messages) == expected
    first, done = codec.FrameReader(len(expected)).feed(expected)
    record = first["record"]
    assert np.array_equal(record["table"], messages[0]["record"]["table"]) and done == {"done": True}
    assert record["empty"].shape == (0, 4) and len(record["many"]) == 600 and np.isnan(record["nan"])


def test_an_array_met_twice_is_framed_once_and_equal_arrays_are_not_merged():
    shared, equal = np.arange(4.0), np.arange(4.0)
    parts = codec.frame_parts({"a": shared, "b": [shared, equal], "c": {"d": shared}})
    assert len(parts) == 3                         # the skeleton, then `shared` once and `equal`
    skeleton = codec.frame_skeleton(b"".join(parts))
    assert skeleton.count('"__ndarray_index__": 0') == 3 and skeleton.count('"__ndarray_index__": 1') == 1


def test_a_jobs_channel_holds_a_mebibyte():
    cell = "import fcntl, os\nprint(fcntl.fcntl(int(os.environ['POSENC_CHANNEL_FD']), fcntl.F_GETPIPE_SZ))"
    outcome = supervisor.run_job([{"cell_type": "code", "source": cell}], codec.frame({}), [], probe_files(),
                                 Limits())
    assert outcome.finished, outcome
    assert outcome.outputs[0]["outputs"][0]["text"] == f"{supervisor.CHANNEL_READ_BYTES}\n" == "1048576\n"
