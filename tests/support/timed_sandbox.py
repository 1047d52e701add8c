"""A stand-in sandbox for a portal's grading process that imports nothing the grading side does not: its executed
copy says the CPU its grading process had used when the job came to run (tests/portal/test_grading_processes.py)."""
import time

from posenc_autograder.grading.execute import Execution

MARK = "# honest"


def graded_with_its_cpu(task):
    return Execution(task.key, {}, [], {}, 0.01, executed_notebook=task.notebook_json.replace(
        MARK, f"{MARK}, run at {time.process_time():.3f} CPU-s"))


def cpu_of(executed: str) -> float:
    """What graded_with_its_cpu wrote into an executed copy."""
    return float(executed.split(f"{MARK}, run at ", 1)[1].split(" CPU-s", 1)[0])
