"""Where sandbox jobs run: local threads (default, every core) or a Dask cluster."""
from __future__ import annotations

import concurrent.futures
import itertools
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


QUEUED_PER_JOB = 2                 # tasks taken from the (lazy) stream per job slot: jobs never wait


def run_local(tasks: Iterable[GradingTask], jobs: int) -> Iterator[Execution]:
    """Each job is a sandboxed subprocess, so threads are enough to keep every core busy. Tasks are taken
    from the stream as slots free up and a finished job is handed on and forgotten: memory stays flat."""
    stream = iter(tasks)
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        running = {}
        while True:
            for task in itertools.islice(stream, max(jobs * QUEUED_PER_JOB - len(running), 0)):
                running[pool.submit(execute_task, task)] = task
            if not running:
                return
            done, _ = concurrent.futures.wait(running, return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                yield _outcome(future, running.pop(future))


def run_dask(tasks: Iterable[GradingTask], scheduler: str) -> Iterator[Execution]:
    """Send each task (plain data) to a Dask worker; workers need the course's Python environment only.
    As locally, a bounded number of tasks is in flight and each result is released once handed on."""
    from distributed import Client, as_completed

    stream = iter(tasks)
    with Client(scheduler) as client:
        window = max(sum(client.nthreads().values()), 1) * QUEUED_PER_JOB
        running = {}

        def submit(count):
            for task in itertools.islice(stream, count):
                future = client.submit(execute_task, task, pure=False, key=f"grade-{'-'.join(task.key)}")
                running[future] = task
                yield future

        queue = as_completed(list(submit(window)))
        for future in queue:
            task = running.pop(future)
            outcome = _outcome(future, task)
            future.release()
            for fresh in submit(1):
                queue.add(fresh)
            yield outcome
