"""What a student's code does costs one run of the notebook: a cell past its limit is interrupted, as
Jupyter's interrupt stops a cell, and the run goes on; the function it was running raises at once from then on, so a
loop called by every test costs one cell limit, not one each. A cell that ignores the interrupt, a process that dies,
or a channel the grader cannot read (a header announcing an impossible length, a frame cut short) stops the run there;
malformed JSON is ignored. Nothing of the student's runs the notebook again. The first cell appends to a file of the
test's, so the runs are counted by the notebook itself (a plain job, without the sandbox, can write there)."""
import pathlib
import time

import pytest

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor
from posenc_autograder.settings import Limits

# Half a second a cell (the runner reads the limit as a float): each looping cell costs the limit in CPU, and the
# supervisor counts an interrupt from the limit on.
LIMITS = Limits(cell_seconds=0.5, notebook_seconds=30)
GRACE = 1.5          # after the job's interrupt, before the supervisor kills it: shorter than a course's, for speed,
                     # but not so short that a job waiting for a core on a loaded machine (load 8 on 2 cores) is
                     # killed before it could take its interrupt (0.5 s was, once: the cell read as killed)


@pytest.fixture(autouse=True)
def short_grace(monkeypatch):
    monkeypatch.setattr(supervisor, "INTERRUPT_GRACE_SECONDS", GRACE)


LOOP = "def forever():\n    while True:\n        pass\n"


def run(*cells: str, isolate: bool = False):
    return supervisor.run_job([{"cell_type": "code", "source": c} for c in cells], codec.frame({}), [], probe_files(),
                              LIMITS, isolate=isolate)


def counting(log: pathlib.Path) -> str:
    return f"with open({str(log)!r}, 'a') as log:\n    log.write('run\\n')\n"


def printed(outcome, cell: int) -> str:
    return "".join(o.get("text", "") for o in outcome.outputs.get(cell, {}).get("outputs", []))


def kinds(outcome) -> list[tuple]:
    return [(e["event"], e["cell"], e.get("stopped")) for e in outcome.events]


def test_a_cell_that_loops_forever_is_interrupted_once_and_the_rest_runs(tmp_path):
    log = tmp_path / "runs.txt"
    outcome = run(counting(log), "while True:\n    pass", "print('after')")
    assert log.read_text() == "run\n" and outcome.runs == 1
    assert outcome.finished and printed(outcome, 2) == "after\n"
    assert kinds(outcome) == [("cell_timeout", 1, False)]


def test_a_function_that_loops_in_every_test_costs_one_cell_limit_and_says_so(tmp_path):
    log = tmp_path / "runs.txt"
    outcome = run(counting(log) + LOOP, "forever()", "forever()", "forever()", "print('after')")
    assert log.read_text() == "run\n" and outcome.runs == 1
    assert outcome.finished and printed(outcome, 4) == "after\n"
    assert kinds(outcome) == [("cell_timeout", 1, False)]
    for cell in (2, 3):                      # what the student sees in those cells: true, and at once
        [error] = [o for o in outcome.outputs[cell]["outputs"] if o["output_type"] == "error"]
        assert error["ename"] == "TimeoutError" and error["evalue"] == (
            "forever ran longer than 0.5 s and was interrupted; it is not called again in this run (line 1)")


@pytest.mark.parametrize("cell, event", [("import os\nos._exit(3)", "kernel_died"),
                                         ("while True:\n    try:\n        forever()\n    except BaseException:\n"
                                          "        pass", "cell_timeout")], ids=["dies", "swallows the interrupt"])
def test_a_cell_that_kills_its_process_or_ignores_the_interrupt_stops_the_one_run(tmp_path, cell, event):
    log = tmp_path / "runs.txt"
    outcome = run(counting(log) + LOOP, cell, "print('after')")
    assert log.read_text() == "run\n" and outcome.runs == 1
    assert [(e["event"], e["cell"]) for e in outcome.events] == [(event, 1)] and 2 not in outcome.outputs


CHANNEL = "import os, struct\nfd = int(os.environ['POSENC_CHANNEL_FD'])\n"
CORRUPTED = {"impossible length": "os.write(fd, struct.pack('<IQ', 8, 2**60))",
             "frame cut short": "os.write(fd, struct.pack('<IQ', 4096, 0) + b'[[], ')",
             "malformed JSON": "bad = repr({'result': ['x']}).encode()\n"
                               "os.write(fd, struct.pack('<IQ', len(bad), 0) + bad)"}


@pytest.mark.parametrize("cell", list(CORRUPTED.values()), ids=list(CORRUPTED))
def test_a_channel_the_grader_cannot_read_costs_one_run(tmp_path, cell):
    log = tmp_path / "runs.txt"
    outcome = run(counting(log), CHANNEL + cell, "print('after')")
    assert log.read_text() == "run\n" and outcome.runs == 1
    [refused] = [e for e in outcome.events if e["event"] == "unreadable_data"]
    assert refused["cell"] == 1 and not [e for e in outcome.events if e["event"] == "kernel_died"], outcome.events


def test_the_interrupt_reaches_a_cell_in_the_sandbox():
    outcome = run("while True:\n    pass", "print('after')", isolate=True)
    assert outcome.runs == 1 and outcome.finished and printed(outcome, 1) == "after\n", outcome.events
    assert kinds(outcome) == [("cell_timeout", 0, False)]


def test_an_interrupted_frame_forged_early_in_a_cell_counts_for_nothing():
    """The student's code can write frames: one saying its cell was interrupted, sent long before the cell's limit,
    makes no timeout (no note, no event), and the run goes on."""
    forged = ("from posenc_autograder.probes import channel\n"
              "channel.send({'output': 0, 'outputs': [], 'interrupted': True})\n")
    outcome = supervisor.run_job([{"cell_type": "code", "source": c} for c in (forged, "print(1)")], codec.frame({}),
                                 [], probe_files(), Limits(cell_seconds=5, notebook_seconds=30), isolate=False)
    assert outcome.finished and kinds(outcome) == [] and printed(outcome, 1) == "1\n", outcome.events


def test_a_cells_standard_input_is_empty():
    """The job's input carries the task, then the supervisor's go words on a descriptor the runner keeps: a cell (or a
    process it starts) reading its standard input finds it empty at once, as when the input ended there."""
    outcome = run("import os\nprint(repr(os.read(0, 10)))", "print(1)")
    assert outcome.finished and printed(outcome, 0) == "b''\n" and printed(outcome, 1) == "1\n", outcome.events


LATE_SECONDS = 1.5       # how late a starved supervisor reads each cell's mark here: past the 0.5 s the job's clock
                         # was once allowed to start before the supervisor's


@pytest.fixture
def late_supervisor(monkeypatch):
    """The supervisor's thread starved, injected: it takes each cell's mark LATE_SECONDS after reading it."""
    accept = supervisor.Attempt.accept

    def late(attempt, frame, tasks):
        if "cell" in frame:
            time.sleep(LATE_SECONDS)
        accept(attempt, frame, tasks)

    monkeypatch.setattr(supervisor.Attempt, "accept", late)


@pytest.mark.parametrize("isolate", [False, True], ids=["plain", "sandboxed"])
def test_an_interrupt_keeps_its_note_however_late_the_supervisor_reads_the_cells_mark(late_supervisor, isolate):
    """The cell's clock in the job starts on the supervisor's go for it, sent once the supervisor's own clock runs: its
    interrupt comes a full limit after the supervisor's start and counts (the note says it timed out), and the run goes
    on; the late read only gave the cell more time."""
    outcome = supervisor.run_job([{"cell_type": "code", "source": c} for c in ("while True:\n    pass", "print(1)")],
                                 codec.frame({}), [], probe_files(), Limits(cell_seconds=1, notebook_seconds=30),
                                 isolate=isolate)
    assert outcome.finished and printed(outcome, 1) == "1\n", outcome.events
    assert kinds(outcome) == [("cell_timeout", 0, False)]


def test_no_cell_waits_for_a_late_supervisor(late_supervisor):
    """Cells start at once, whatever the supervisor's delay: the cells after the first ran in the job before the
    supervisor had taken a single mark of theirs (waiting on it, they would take LATE_SECONDS each)."""
    cells = ["import time\nstarted = time.monotonic()", "x = 1", f"print(time.monotonic() - started < {LATE_SECONDS})"]
    outcome = supervisor.run_job([{"cell_type": "code", "source": c} for c in cells], codec.frame({}), [],
                                 probe_files(), Limits(cell_seconds=30, notebook_seconds=60), isolate=False)
    assert outcome.finished and printed(outcome, 2) == "True\n", outcome.events
