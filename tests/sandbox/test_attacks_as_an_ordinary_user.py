"""The sandbox's attacks, graded by an ordinary user (the holds promised as root hold for them too): the
channel's forged, malformed and cut-short frames, a log flood, a cell that loops forever, run through the real
supervisor (run_job, the warm zygote as that user, no cgroups to write), with the tests' own interpreter, venv and
grader package, made reachable for that user in a mount namespace of its own (ordinary_user.reachable_as). The
privilege probe and
the neighbour, signal and leftover scenarios run as that user in test_sandbox_privileges.py and
test_warm_sandbox.py. Every scenario runs in one interpreter, so the set costs one start and one zygote."""
import json
import pathlib
import struct
import subprocess
import sys
import textwrap

import pytest
from ordinary_user import reachable_as
from test_log_flood import FLOOD, FLOOD_BYTES
from test_sandbox_privileges import ordinary_user  # noqa: F401 - a fixture
from test_unreadable_frames import WRITE

import posenc_autograder
from posenc_autograder.probes import codec
from posenc_autograder.sandbox.supervisor import LOG_BUDGET_BYTES

FRAMES = {"cell_seconds": 10, "notebook_seconds": 60}
FLOOD_MIB = 32                  # test_log_flood's flood, smaller: 32 times the log's budget still
MALFORMED = [repr({"result": ["x"]}).encode(), b"[[], {}", b"\xff\xfe"]
SCENARIOS = {
    "impossible_header": (["print('before')", WRITE + f"os.write(fd, {struct.pack('<IQ', 8, 2**60)!r})",
                           "print('after')"], FRAMES),
    "malformed_frames": ([WRITE + "os.write(fd, {!r})".format(b"".join(struct.pack("<IQ", len(s), 0) + s
                                                                     for s in MALFORMED)), "print('after')"], FRAMES),
    "frame_cut_short": ([WRITE + "os.write(fd, struct.pack('<IQ', 4096, 0) + b'[[], ')", "print('after')"], FRAMES),
    "log_flood": ([FLOOD.replace(f"range({FLOOD_BYTES >> 20})", f"range({FLOOD_MIB})")],
                  {"cell_seconds": 60, "notebook_seconds": 90}),
    "endless_loop": (["while True:\n    pass", "print('after')"], {"cell_seconds": 1, "notebook_seconds": 30}),
}

SCRIPT = '''
import json, pathlib, sys
sys.path[:0] = PATHS
from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor, warm
from posenc_autograder.settings import Limits

def read_so_far():     # this thread's: the process's count adds what its waited-for children read
    return int(next(line.split()[1] for line in pathlib.Path("/proc/thread-self/io").read_text().splitlines()
                    if line.startswith("rchar:")))

found = {}
for name, (cells, limits) in SCENARIOS.items():
    before = read_so_far()
    outcome = supervisor.run_job([{"cell_type": "code", "source": c} for c in cells], codec.frame({}), [],
                                 probe_files(), Limits(**limits))
    printed = {str(cell): "".join(o.get("text", "") for o in record["outputs"])
               for cell, record in outcome.outputs.items()}
    found[name] = {"finished": outcome.finished, "events": outcome.events, "printed": printed, "runs": outcome.runs,
                   "read": read_so_far() - before, "log_bytes": outcome.log_bytes}
found["sandbox"] = warm.status()
print(json.dumps(found))
'''


@pytest.fixture(scope="module")
def graded_by_an_ordinary_user(ordinary_user):   # noqa: F811
    grader = str(pathlib.Path(posenc_autograder.__file__).parents[1])
    script = f"PATHS = {[grader]!r}\nSCENARIOS = {SCENARIOS!r}\n" + textwrap.dedent(SCRIPT)
    command = reachable_as(ordinary_user, [sys.executable, "-I", "-c", script], [sys.executable, sys.prefix, grader])
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd="/")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])


def refused(found: dict) -> list[tuple]:
    return [(e["reason"], e["cell"], e.get("stopped", False))
            for e in found["events"] if e["event"] == "unreadable_data"]


@pytest.mark.slow
def test_the_warm_sandbox_ran_them(graded_by_an_ordinary_user):
    assert graded_by_an_ordinary_user["sandbox"].startswith("a warm interpreter"), graded_by_an_ordinary_user


@pytest.mark.slow
@pytest.mark.parametrize("name", ["impossible_header", "malformed_frames", "frame_cut_short"])
def test_frames_the_grader_cannot_read_cost_one_run(graded_by_an_ordinary_user, name):
    """A malformed frame is ignored; after an impossible header or a frame cut short nothing can be read: the run
    stops there, once (never run again), charged to the cell that wrote it."""
    found = graded_by_an_ordinary_user[name]
    last = str(len(SCENARIOS[name][0]) - 1)
    read_on = name == "malformed_frames"
    assert found["runs"] == 1 and found["finished"] == read_on, found
    assert (found["printed"].get(last) == "after\n") == read_on, found
    assert not [e for e in found["events"] if e["event"] == "kernel_died"], found
    expected = {"impossible_header": [(codec.TOO_LARGE, 1, True)], "malformed_frames": [(codec.MALFORMED, 0, False)],
                "frame_cut_short": [(codec.MALFORMED, 0, True)]}[name]
    assert refused(found) == expected, found


@pytest.mark.slow
def test_a_log_flood_is_drained_unread(graded_by_an_ordinary_user):
    found = graded_by_an_ordinary_user["log_flood"]
    assert found["finished"] and "flood over" in found["printed"]["0"], found
    assert found["read"] < (FLOOD_MIB << 20) // 8, found
    assert found["log_bytes"] == LOG_BUDGET_BYTES, found


@pytest.mark.slow
def test_an_endless_cell_is_interrupted_once_in_one_run(graded_by_an_ordinary_user):
    found = graded_by_an_ordinary_user["endless_loop"]
    assert found["runs"] == 1 and found["finished"] and found["printed"]["1"] == "after\n", found
    assert [(e["event"], e["cell"], e["stopped"]) for e in found["events"]] == [("cell_timeout", 0, False)], found
