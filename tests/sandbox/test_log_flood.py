"""A job's log (its raw stdout and stderr, the runner's own) has a byte budget: past it the supervisor drains the pipe
without reading it into the grader (34 GiB of writes cost the grader 14 CPU-s). The job still
runs to its end, and its cells' outputs (on the channel) are kept. Grader CPU before and after:
`python -m posenc_autograder.devtools.bench_floods log_flood`."""
import pathlib

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor, warm
from posenc_autograder.settings import Limits

FLOOD_BYTES = 64 << 20                 # 64 times the budget read, 8 ticks of draining
FLOOD = f'''
import os
chunk = b"x" * (1 << 20)
for _ in range({FLOOD_BYTES >> 20}):
    os.write(1, chunk)
print("flood over")
'''


# Three bytes alone first (read alone once the pipe is empty again), then the flood: a log read in whole chunks
# from there would end past the budget.
OFF_THE_CHUNKS = '''
import fcntl, os, struct, termios, time
os.write(1, b"abc")
waited = time.monotonic() + 10
while struct.unpack("i", fcntl.ioctl(1, termios.FIONREAD, b"\\0" * 4))[0] and time.monotonic() < waited:
    time.sleep(0.01)
''' + FLOOD


def _bytes_read_by_this_thread() -> int:
    """What read(2) and its kin brought into this thread so far (the kernel's count, /proc/thread-self/io's rchar).
    The supervisor reads in the thread that runs the job; the process's count (/proc/self/io) also adds what each
    child it waited for had read, such as a zygote for other probes stopped when this job began (~7 MiB of imports)."""
    return int(next(line.split()[1] for line in pathlib.Path("/proc/thread-self/io").read_text().splitlines()
                    if line.startswith("rchar:")))


def _flooded(isolate: bool, source: str = FLOOD):
    cells = [{"cell_type": "code", "source": source}]
    before = _bytes_read_by_this_thread()
    outcome = supervisor.run_job(cells, codec.frame({}), [], probe_files(),
                                 Limits(cell_seconds=60, notebook_seconds=90), isolate=isolate)
    return outcome, _bytes_read_by_this_thread() - before


def test_a_log_flood_is_drained_without_being_read_into_the_grader():
    outcome, read = _flooded(isolate=False)
    assert outcome.finished, outcome.events
    assert "flood over" in "".join(o.get("text", "") for o in outcome.outputs[0]["outputs"])
    assert outcome.log_bytes == supervisor.LOG_BUDGET_BYTES
    assert read < FLOOD_BYTES // 8, f"{read >> 20} MiB of a {FLOOD_BYTES >> 20} MiB log flood read into the grader"


def test_the_log_read_ends_at_its_budget_not_a_chunk_past_it():
    outcome, _ = _flooded(isolate=False, source=OFF_THE_CHUNKS)
    assert outcome.finished, outcome.events
    assert outcome.log_bytes == supervisor.LOG_BUDGET_BYTES, outcome.log_bytes - supervisor.LOG_BUDGET_BYTES


def test_the_same_in_the_sandbox_while_the_grader_replaces_its_zygote():
    """An earlier job's zygote, for other probes, is stopped as this job starts (as under a test run's or a portal's
    changing releases): what that zygote had read is not the grader reading the flood."""
    other = dict(probe_files())
    name = next(iter(other))
    other[name] += "\n# another release's probes\n"
    warm.zygote_for(other)
    outcome, read = _flooded(isolate=True)
    assert outcome.finished, outcome.events
    assert outcome.log_bytes == supervisor.LOG_BUDGET_BYTES
    assert read < FLOOD_BYTES // 8, f"{read >> 20} MiB of a {FLOOD_BYTES >> 20} MiB log flood read into the grader"
