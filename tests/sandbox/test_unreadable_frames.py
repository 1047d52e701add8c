"""What a job sends that the grader cannot read is the student's: a header announcing an impossible length, a frame
cut short, a malformed or oversized frame. A malformed frame is ignored and the rest is read; after a header or a
frame cut short nothing can be read, so the run stops there (one run: the notebook is not run again). Each is said as
the student's, never as the grader failing."""
import struct

import pytest

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor
from posenc_autograder.sandbox.channel_reader import ChannelReader
from posenc_autograder.settings import Limits

WRITE = "import os, struct\nfd = int(os.environ['POSENC_CHANNEL_FD'])\n"


def run(*cells: str):
    return supervisor.run_job([{"cell_type": "code", "source": c} for c in cells], codec.frame({}), [], probe_files(),
                              Limits(cell_seconds=10, notebook_seconds=60))


def printed(outcome, cell: int) -> str:
    return "".join(o.get("text", "") for o in outcome.outputs.get(cell, {}).get("outputs", []))


def refused_events(outcome) -> list[dict]:
    return [e for e in outcome.events if e["event"] == "unreadable_data"]


@pytest.mark.parametrize("header", [struct.pack("<IQ", 8, 2**60), struct.pack("<IQ", 2**32 - 1, 2**64 - 1)],
                         ids=["2**60 array bytes", "every length at its largest"])
def test_a_header_announcing_an_impossible_length_stops_the_run_at_its_cell(header):
    outcome = run("print('before')", WRITE + f"os.write(fd, {header!r})", "print('after')")
    assert not outcome.finished and outcome.runs == 1, outcome.events
    assert printed(outcome, 0) == "before\n" and 2 not in outcome.outputs
    assert refused_events(outcome) == [{"event": "unreadable_data", "reason": codec.TOO_LARGE,
                                        "bytes": codec.HEADER.size + sum(struct.unpack("<IQ", header)),
                                        "cell": 1, "stopped": True}]
    assert not [e for e in outcome.events if e["event"] == "kernel_died"]


def test_malformed_frames_are_ignored_and_everything_after_them_is_read():
    skeletons = [repr({"result": ["x"]}).encode(), b"[[], {}", b"\xff\xfe", b"[[[3]], {}]"]
    frames = b"".join(struct.pack("<IQ", len(s), 0) + s for s in skeletons)
    outcome = run(WRITE + f"os.write(fd, {frames!r})", "print('after')")
    assert outcome.finished and printed(outcome, 1) == "after\n"
    assert refused_events(outcome) == [{"event": "unreadable_data", "reason": codec.MALFORMED,
                                        "bytes": codec.HEADER.size + len(skeletons[0]), "cell": 0}]


def test_a_frame_cut_short_is_the_cells_and_stops_the_run_there():
    """The rest of the cell's frame swallows what the runner sends after it; the run ends without its end, charged
    to the cell that wrote it, never as a death or the grader's failure."""
    outcome = run(WRITE + "os.write(fd, struct.pack('<IQ', 4096, 0) + b'[[], ')", "print('after')")
    assert not outcome.finished and outcome.runs == 1 and 1 not in outcome.outputs
    assert [(e["event"], e["cell"], e.get("stopped")) for e in outcome.events] == [("unreadable_data", 0, True)]


def test_each_attempt_reads_its_channel_from_its_first_byte():
    reader = ChannelReader(Limits())
    reader.feed(struct.pack("<IQ", 8, 2**60))
    assert reader.lost and reader.refusal == codec.TOO_LARGE
    reader.start_attempt()
    assert not reader.lost and reader.refusal is None
    assert reader.feed(codec.frame({"cell": 3})) == [{"cell": 3}]


def test_decoding_a_jobs_channel_stops_at_its_cpu_budget():
    """The grader's own time reading one job is bounded as its bytes are: past it the job is stopped (a flood)."""
    limits = Limits(channel_cpu_seconds=0)
    attempt = supervisor.Attempt(None, b"", [0], [], limits, ChannelReader(limits), {}, {})
    frame = codec.frame({"output": 0, "outputs": [], "padding": list(range(200_000))})
    assert attempt._read(frame, set()) == "flood"
    generous = Limits()
    attempt = supervisor.Attempt(None, b"", [0], [], generous, ChannelReader(generous), {}, {})
    assert attempt._read(frame, set()) is None


def test_a_refused_frame_is_charged_to_the_cell_it_came_in_when_later_frames_arrive_with_it():
    """The grader may read a cell's bad frame together with the runner's marks for the next cell (a loaded machine
    reads late): the refusal belongs to the cell that was running when the frame came, not to the last mark read."""
    limits = Limits(cell_seconds=10, notebook_seconds=60)
    attempt = supervisor.Attempt(None, b"", [0, 1], [], limits, ChannelReader(limits), {}, {})
    bad = repr({"result": ["x"]}).encode()
    chunk = codec.frame({"cell": 0}) + struct.pack("<IQ", len(bad), 0) + bad + codec.frame({"cell": 1})
    assert attempt._read(chunk, set()) is None
    assert attempt.refused == {"reason": codec.MALFORMED, "bytes": codec.HEADER.size + len(bad), "cell": 0}
    assert attempt.current == 1
