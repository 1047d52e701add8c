"""The portal's grading in processes of its own (`make portal`): one process per sandbox, each running the
Worker's loop (worker.py: claim, prepare, execute in the sandbox, judge, keep the evidence, store), so the trusted
CPU work of grading (0.1-0.2 CPU-s a notebook) never shares the web process's interpreter lock with the requests:
in a rush of 2,000 it was more work than one interpreter can do in the rush's 5 minutes, and every page waited
behind it.

The queue is the database's (a job is claimed by a conditional UPDATE), the gradebook's one writer a lock file
(worker.StoreLock), so the processes share nothing in memory, not even a lock a killed process could leave held:
each has one pipe with the web process. Down it go "wake" (an upload was queued) and "stop"; its end closing (the
web process killed outright) is a stop too, so no grading process outlives its portal. Up it go its reports: a
job's new status (the web process answers the status requests held on it) and an attempt that now counts (its
score goes back to the LMS). Each process claims its jobs under a name the web process gave it (the attempt's
claimed_by), so a process that dies is replaced and every job it left running put back in the queue, as a
grading thread's is, even one it died holding before it could report it (runs are counted on claim, so a job
that kills its process is given up after MAX_RUNS).
"""
from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import signal
import threading
from multiprocessing.connection import Connection, wait

from posenc_autograder.course import Course
from posenc_autograder.portal.models import open_database
from posenc_autograder.portal.worker import SUPERVISE_SECONDS, Execute, Worker, dask_execute, new_claimer
from posenc_autograder.settings import Limits

STOP_SECONDS = 30.0                  # a process finishing its job on stop, at most; then it is ended
# Each grading process is forked from a server process of its own (never from the web process and its threads),
# which imports the grading side once: a spawned interpreter imported it for each process, ~2.5 CPU-s (20 s at load
# 13 on 2 cores), so a grading process that died was replaced only that much later.
CONTEXT = multiprocessing.get_context("forkserver")
# This module (the worker, the pipeline, the gradebook, the sandbox's side) and what each job imports when it first
# stores (the feedback page).
PRELOADED = [__name__, "posenc_autograder.reports.feedback"]
log = logging.getLogger(__name__)


class GradingProcesses:
    """`worker.jobs` grading processes for the web process's Worker (which keeps recovery, the instructor's stores
    and the status callbacks); started and stopped in its place."""

    def __init__(self, worker: Worker, scheduler: str | None = None):
        self.worker, self.scheduler = worker, scheduler
        self.pipes_lock = threading.Lock()           # sends to the processes, from any thread of the web process
        worker.wake = Broadcast(self, "wake")        # notify(): an upload is queued, every process looks
        self.processes: dict[int, tuple[multiprocessing.process.BaseProcess, Connection]] = {}
        self.restarts = 0
        self.watcher: threading.Thread | None = None

    def start(self) -> None:
        self.worker.recover()
        for slot in range(self.worker.jobs):
            self._start(slot)
        self.watcher = threading.Thread(target=self._watch, name="portal-grading-processes", daemon=True)
        self.watcher.start()

    def _start(self, slot: int) -> None:
        ours, theirs = CONTEXT.Pipe()
        worker = self.worker
        worker.claimers[slot] = new_claimer(slot)   # this process's claims: what is put back when it ends
        CONTEXT.set_forkserver_preload(PRELOADED)   # read when the server starts (the first process), then kept
        process = CONTEXT.Process(target=grade_in_process, name=f"portal-grader-{slot}", daemon=True,
                                  args=(worker.course, worker.jobs, worker.limits, worker.execute, self.scheduler,
                                        slot, worker.claimers[slot], theirs, dict(os.environ)))
        process.start()
        theirs.close()                               # the child's end: EOF here once the child has gone
        with self.pipes_lock:
            self.processes[slot] = process, ours

    def send(self, message: str) -> None:
        """To every grading process ("wake", "stop"); one already gone is the watcher's to replace."""
        with self.pipes_lock:
            for _, pipe in self.processes.values():
                with contextlib.suppress(OSError):
                    pipe.send(message)

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        self.worker.stopping.set()
        self.send("stop")
        for process, _ in self.processes.values():
            process.join(timeout)
            if process.is_alive():
                process.terminate()
                process.join(5)
        if self.watcher is not None:
            self.watcher.join(timeout)
        for _, pipe in self.processes.values():
            self._read(pipe)
        self.worker.close()

    def _watch(self) -> None:
        while not self.worker.stopping.is_set():
            with self.pipes_lock:
                pipes = [pipe for _, pipe in self.processes.values()]
            readable = set(wait(pipes, SUPERVISE_SECONDS))
            for _, reading in list(self.processes.values()):
                if reading in readable:
                    self._read(reading)
            self.replace_dead_processes()

    def _read(self, reading: Connection) -> None:
        """Act on every report waiting in this pipe."""
        with contextlib.suppress(EOFError, OSError):
            while reading.poll():
                self._act(*reading.recv())

    def _act(self, kind: str, *args) -> None:
        try:
            if kind == "status":
                self.worker.status_changed(*args)
            elif kind == "stored":
                self.worker.counting_stored(*args)
        except Exception:  # noqa: BLE001 - a report the web process could not act on never stops the others
            log.exception("the grading processes' report %s %s", kind, args)

    def replace_dead_processes(self) -> int:
        """Start a new process for each that ended, after putting the jobs it left running back in the queue."""
        replaced = 0
        for slot, (process, reading) in list(self.processes.items()):
            if process.is_alive() or self.worker.stopping.is_set():
                continue
            self._read(reading)                      # what it said before it ended
            reading.close()
            jobs = self.worker.requeue_claimed(slot)
            log.error("grading process %s ended (exit code %s)%s; starting a new one", process.name,
                      process.exitcode, f" while grading attempt {', '.join(map(str, jobs))}" if jobs else "")
            self._start(slot)
            self.restarts += 1
            replaced += 1
        return replaced


class Broadcast:
    """The web process's Worker.wake: setting it wakes every grading process."""

    def __init__(self, processes: GradingProcesses, message: str):
        self.processes, self.message = processes, message

    def set(self) -> None:
        self.processes.send(self.message)

    def clear(self) -> None:
        pass

    def is_set(self) -> bool:
        return False

    def wait(self, timeout: float | None = None) -> bool:
        return False


def grade_in_process(course: Course, jobs: int, limits: Limits, execute: Execute, scheduler: str | None, slot: int,
                     claimer: str, pipe: Connection, environment: dict[str, str]) -> None:
    """A grading process: the Worker's loop on one slot, claiming as `claimer`, its reports sent to the web process.
    `execute`: the web process's Worker's (a function this process can import: the sandbox's execute_task unless a
    test's), or a Dask client of its own on `scheduler`. `environment`: the web process's when it started this one
    (the server it is forked from holds the one of its own start)."""
    os.environ.clear()
    os.environ.update(environment)
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C reaches the whole group: the web process stops us
    worker = Worker(course, open_database(course.gradebook_url), jobs, limits,
                    dask_execute(scheduler) if scheduler else execute)
    worker.status_changed = lambda attempt_id: pipe.send(("status", attempt_id))
    worker.counting_stored = lambda student, assignment: pipe.send(("stored", student, assignment))
    worker.claimers[slot] = claimer
    threading.Thread(target=listen, args=(pipe, worker), name="portal-grader-listens", daemon=True).start()
    try:
        worker.warm_up()
        keep_for_good()
        worker.run_slot(slot)
    finally:
        worker.close()
        pipe.close()


def keep_for_good() -> None:
    """What a grading process holds once warmed up (the modules, the checks' tables, the compiled templates) it holds
    for its life: frozen out of the cyclic collector, whose full collections walked all of it again every few jobs."""
    gc.collect()
    gc.freeze()


def listen(pipe: Connection, worker: Worker) -> None:
    """The web process's word to this grading process: "wake" wakes it, "stop" stops it after its job, and so does
    the pipe's end (the web process gone, even killed outright: no grading beside a portal started again)."""
    while True:
        try:
            message = pipe.recv()
        except (EOFError, OSError):
            message = "stop"
        if message == "stop":
            worker.stopping.set()
        worker.wake.set()
        if message == "stop":
            return
