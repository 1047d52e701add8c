"""Where sandbox jobs run: local threads (default, every core) or a Dask cluster."""
from __future__ import annotations

import concurrent.futures
import os
from typing import Iterable, Iterator

from posenc_autograder.grading.execute import Execution, GradingTask, execute_task


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)))


def _outcome(future, task: GradingTask) -> Execution:
    """The job's execution; a job lost on the way (a dead worker) is that job's failure only."""
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001
        return Execution(task.key, {}, [], {}, 0.0, f"the grading job was lost ({type(exc).__name__}); "
                                                   f"run `make grade` again")


def run_local(tasks: Iterable[GradingTask], jobs: int) -> Iterator[Execution]:
    """Each job is a sandboxed subprocess, so threads are enough to keep every core busy."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(execute_task, task): task for task in tasks}
        for future in concurrent.futures.as_completed(futures):
            yield _outcome(future, futures[future])


def run_dask(tasks: Iterable[GradingTask], scheduler: str) -> Iterator[Execution]:
    """Send each task (plain data) to a Dask worker; workers need the course's Python environment only."""
    from distributed import Client, as_completed

    with Client(scheduler) as client:
        futures = {client.submit(execute_task, task, pure=False, key=f"grade-{'-'.join(task.key)}"): task
                   for task in tasks}
        for future in as_completed(futures):
            yield _outcome(future, futures[future])
