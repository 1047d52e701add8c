"""`make bench` reads each job's CPU from the kernel (the job's cgroup, else the processes waited for: the warm
sandbox's zygote waits for the job's init, which waits for the job): a
sandbox's own count of the CPU it burned is never more than what the supervisor reports for it."""
import re

import pytest

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import cgroups, supervisor, warm
from posenc_autograder.settings import Limits

BURN = "import time\nwhile time.process_time() < 0.4:\n    pass\nprint('burned', time.process_time())\n"


@pytest.mark.parametrize("isolate", [True, False], ids=["sandboxed", "plain"])
def test_a_jobs_cpu_is_counted_whole(isolate):
    if isolate and not cgroups.process_limit_enforced() and warm.zygote_for(probe_files()) is None:
        pytest.skip("no writable cgroup here and no warm sandbox: bubblewrap does not wait for the sandbox, so its "
                    "CPU is not counted")
    outcome = supervisor.run_job([{"cell_type": "code", "source": BURN}], codec.frame({}), [], probe_files(),
                                 Limits(), isolate=isolate)
    assert outcome.finished, outcome.log_tail
    burned = float(re.search(r"burned ([\d.]+)", outcome.outputs[0]["outputs"][0]["text"]).group(1))
    assert outcome.cpu_seconds >= burned >= 0.4
