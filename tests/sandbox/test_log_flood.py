"""A job's log (its raw stdout and stderr, the runner's own) has a byte budget: past it the supervisor drains the pipe
without reading it into the grader (34 GiB of writes cost the grader 14 CPU-s). The job still
runs to its end, and its cells' outputs (on the channel) are kept. Grader CPU before and after:
`python -m posenc_autograder.devtools.bench_floods log_flood`."""
import pathlib

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor
from posenc_autograder.settings import Limits

FLOOD_BYTES = 64 << 20                 # 64 times the budget read, 8 ticks of draining
FLOOD = f'''
import os
chunk = b"x" * (1 << 20)
for _ in range({FLOOD_BYTES >> 20}):
    os.write(1, chunk)
print("flood over")
'''


def _bytes_read_by_this_process() -> int:
    """What read(2) and its kin brought into this process so far (the kernel's count, /proc/self/io's rchar)."""
    return int(next(line.split()[1] for line in pathlib.Path("/proc/self/io").read_text().splitlines()
                    if line.startswith("rchar:")))


def _flooded(isolate: bool):
    cells = [{"cell_type": "code", "source": FLOOD}]
    before = _bytes_read_by_this_process()
    outcome = supervisor.run_job(cells, codec.frame({}), [], probe_files(),
                                 Limits(cell_seconds=60, notebook_seconds=90), isolate=isolate)
    return outcome, _bytes_read_by_this_process() - before


def test_a_log_flood_is_drained_without_being_read_into_the_grader():
    outcome, read = _flooded(isolate=False)
    assert outcome.finished, outcome.events
    assert "flood over" in "".join(o.get("text", "") for o in outcome.outputs[0]["outputs"])
    assert read < FLOOD_BYTES // 8, f"{read >> 20} MiB of a {FLOOD_BYTES >> 20} MiB log flood read into the grader"


def test_the_same_in_the_sandbox():
    outcome, read = _flooded(isolate=True)
    assert outcome.finished, outcome.events
    assert read < FLOOD_BYTES // 8, f"{read >> 20} MiB of a {FLOOD_BYTES >> 20} MiB log flood read into the grader"
