"""Grading the queue: worker threads in the portal claim attempts and grade each through the same pipeline as
`make grade` (prepare → execute in the sandbox, locally or on Dask → judge). Student code runs only inside the
sandbox's subprocess (or on a Dask worker), never in the portal's process.

The attempt that counts (best or last, by policy) is then stored exactly as `make grade` stores a submission:
its file in submitted/ with nbgrader's timestamp.txt, its scores in the gradebook, the autograded notebook,
the feedback page and the results store (records.graded.settle), and its time and late flag in the roster; so
`make grade` sees an unchanged file and `make feedback`, the LMS exports and `make integrity` read it as theirs.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import logging
import secrets
import threading
import typing
from typing import Callable

from sqlalchemy import bindparam, select, update

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.grading.execute import Execution, GradingTask, execute_task
from posenc_autograder.grading.pipeline import grader_error, judge, prepare, probe_files
from posenc_autograder.grading.regrade import grader_fingerprint
from posenc_autograder.intake import attempts as record_of_attempts
from posenc_autograder.intake import roster
from posenc_autograder.intake.submissions import Submission
from posenc_autograder.portal import policy as rules
from posenc_autograder.portal import queue, uploads
from posenc_autograder.portal.models import ALONE, Attempt, Policy, Status, Student, utcnow
from posenc_autograder.records import evidence, gradebook, graded
from posenc_autograder.results import Note, NotebookResult, NoteKind
from posenc_autograder.sandbox import warm
from posenc_autograder.settings import Limits

IDLE_POLL_SECONDS = 1.0               # a worker also wakes at once when an upload is queued in this process
SUPERVISE_SECONDS = 1.0               # how often dead grading threads are noticed and replaced
FAULT_PAUSE_SECONDS = 1.0             # after a fault outside any job (the database away): wait, then go on
PORTAL_DOORS = ("portal", "lti", "hub")   # the record's doors whose attempts the portal grades (auth.RECORDED_AS)
MAX_RUNS = 3                          # a job the grader fails on this many times is a grader error, not retried
# Graded attempts' answers held for their evidence until a slot is idle, per process (an honest notebook's ~8 MB:
# its arrays); an attempt that would pass this has its evidence kept at once, before it is recorded graded.
EVIDENCE_BACKLOG_BYTES = 128 * 2**20
GAVE_UP = (f"the grader failed on this notebook {MAX_RUNS} times, for its own reasons, not your code's; it is "
           f"not graded, it does not use up one of your attempts, and the instructor sees it")
Execute = Callable[[GradingTask], Execution]
# An assignment's saved rules by its key, a statement built once: Session.get builds its SELECT at every call, and
# every page, status and upload asks for the rules (and on most courses finds no saved row, so nothing is kept).
SAVED_POLICY = select(Policy).where(Policy.assignment == bindparam("assignment"))
# A job's end and a store's promotion are each their session's one write, committed right after it: on PostgreSQL a
# transaction of its own (models.ALONE), without the BEGIN and COMMIT round trips around it.
WRITE_ALONE = {ALONE: True}


class Signal(typing.Protocol):
    """What a Worker waits on and sets: a threading.Event, or the grading processes' (grading_processes.py)."""
    def set(self) -> None: ...
    def clear(self) -> None: ...
    def is_set(self) -> bool: ...
    def wait(self, timeout: float | None = None) -> bool: ...


log = logging.getLogger(__name__)


def dask_execute(scheduler: str) -> Execute:
    """Send each task (plain data) to a Dask cluster, through one client for the portal's lifetime."""
    from distributed import Client

    client = Client(scheduler)
    return lambda task: client.submit(execute_task, task, pure=False).result()


class GraderFailed(Exception):
    """The grader (not the student's code) could not grade this attempt: it is retried, up to MAX_RUNS runs."""


class StoppedShort(Exception):
    """The job's short run (others were waiting) reached its time: it runs again in full later, ungraded so far."""


@dataclasses.dataclass
class Deferred:
    """A graded attempt whose integrity evidence is still to be kept (when no graded-first job waits). Its pending
    marker (records.evidence.pending_path) is on disk before the attempt is recorded as graded and stays locked by this
    process until the evidence is kept: a process that dies leaves it unlocked, and a slot that finds it so keeps
    that evidence by running the notebook again (execution None). `make integrity` waits for no marker to be left."""
    attempt: Attempt
    result: NotebookResult
    execution: Execution | None
    marker: typing.BinaryIO


class Worker:
    """Grading threads, each taking one job at a time, and a supervisor that replaces any thread that dies.

    Every step of a job (reading the upload, running it, judging, storing the executed notebook, recording the
    result) is inside the job's own failure handling: a job that fails for the grader's reasons goes back to
    the queue until it has run MAX_RUNS times, then is recorded as a grader error (shown so to the student and
    the instructor; it does not use up an attempt). Runs are counted when a job is claimed, so a job that kills
    its thread, or the whole process, is given up after MAX_RUNS as well and never blocks the queue."""

    def __init__(self, course: Course, sessions, jobs: int, limits: Limits | None = None,
                 execute: Execute = execute_task):
        self.course, self.sessions, self.jobs, self.execute = course, sessions, jobs, execute
        self.limits = limits or settings.load(course).sandbox      # the course's ([sandbox] in course.toml)
        self.sharing = settings.load(course).sharing                # [sharing]: the queue's order, short runs
        self.wake: Signal = threading.Event()
        self.stopping: Signal = threading.Event()
        self.store_lock = StoreLock(course)          # one writer for the gradebook, submitted/ and the roster
        self.threads: dict[int, threading.Thread] = {}
        self.claimers: dict[int, str] = {}           # slot -> the name its claims are committed under (queue.claim)
        self.restarts = 0
        self.supervisor: threading.Thread | None = None
        self._fingerprints: dict[str, str] = {}
        self._course_policies: tuple[settings.Settings | None, dict[str, Policy]] = (None, {})    # policy_of's
        self._gradebook: tuple[contextlib.ExitStack, typing.Any] | None = None  # kept open between stores
        self.backlog: collections.deque[Deferred] = collections.deque()    # evidence to keep when idle
        self.backlog_lock = threading.Lock()
        self._orphans_looked_for = False             # markers another (dead) process left: looked for once idle
        self.status_changed: Callable[[int], None] = lambda attempt_id: None    # after a new status is committed
        self.counting_stored: Callable[[str, str], None] = lambda student, assignment: None   # another one counts

    # --- lifecycle --------------------------------------------------------------------------------

    def recover(self) -> int:
        """Before any thread starts: put back jobs a dead process was running; finish interrupted stores."""
        with self.sessions() as db:
            requeued = queue.requeue_orphans(db)
            pending = db.execute(select(Attempt.student_id, Attempt.assignment).where(
                Attempt.status == Status.GRADED).distinct()).all()
        for student, assignment in pending:
            self.store_counting_safely(student, assignment)
        return requeued

    def start(self) -> None:
        self.recover()
        for slot in range(self.jobs):
            self._start_thread(slot)
        self.supervisor = threading.Thread(target=self._supervise, name="portal-grader-supervisor", daemon=True)
        self.supervisor.start()

    def warm_up(self) -> None:
        """Before a grading process's first claim, what its first job would otherwise start: the warm sandbox's
        zygote (~1.5 CPU-s, seconds of the first student's wait) and the feedback page's compiled template."""
        from posenc_autograder.reports import feedback, templating

        try:
            if self.execute is execute_task and warm.enabled():
                warm.zygote_for(probe_files())
            templating.ENVIRONMENT.get_template(feedback.TEMPLATE)
        except Exception:  # noqa: BLE001 - the first job meets the same fault as its own, never the process's end
            log.exception("warming the grading process up")

    def _start_thread(self, slot: int) -> None:
        self.claimers[slot] = new_claimer(slot)
        thread = threading.Thread(target=self.run_slot, args=(slot,), name=f"portal-grader-{slot}", daemon=True)
        self.threads[slot] = thread
        thread.start()

    def _supervise(self) -> None:
        while not self.stopping.wait(SUPERVISE_SECONDS):
            self.replace_dead_threads()

    def replace_dead_threads(self) -> int:
        """Start a new thread for every grading thread that died, after putting its jobs back in the queue."""
        replaced = 0
        for slot, thread in list(self.threads.items()):
            if thread.is_alive() or self.stopping.is_set():
                continue
            jobs = self.requeue_claimed(slot)
            log.error("grading thread %s died%s; starting a new one", thread.name,
                      f" while grading attempt {', '.join(map(str, jobs))}" if jobs else "")
            self._start_thread(slot)
            self.restarts += 1
            replaced += 1
        return replaced

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.wake.set()
        for thread in [*self.threads.values(), self.supervisor]:
            if thread is not None:
                thread.join(timeout)
        self.close()

    def close(self) -> None:
        """Keep the evidence still waiting in this worker (not a dead process's: that would run notebooks again), then
        close the gradebook kept open between stores. Evidence that could not be kept is let go of: its markers stay
        on disk, unlocked, and the next worker to look keeps it."""
        self._orphans_looked_for = True
        with contextlib.suppress(Exception):
            while self.keep_deferred_evidence():
                pass
        with self.store_lock:
            self._close_gradebook()
        with self.backlog_lock:
            while self.backlog:
                self.backlog.popleft().marker.close()

    def notify(self) -> None:
        self.wake.set()

    def run_until_idle(self) -> int:
        """Grade queued jobs in the calling thread until none is left (tests, benchmarks); how many."""
        done = 0
        while (claimed := self._claim_attempt()) is not None:
            self.grade_claimed(claimed)
            done += 1
        while self.keep_deferred_evidence():
            pass
        return done

    def requeue_claimed(self, slot: int) -> list[int]:
        """The jobs the slot claimed and left running (it died, or faulted outside a job) back in the queue."""
        claimer = self.claimers.get(slot)
        if claimer is None:
            return []
        jobs: list[int] = []
        with contextlib.suppress(Exception), self.sessions() as db:
            jobs = queue.requeue_claimed(db, claimer)
        for job in jobs:
            self.status_changed(job)
        return jobs

    def _claim(self, claimer: str | None = None) -> int | None:
        """The next job to run, claimed in the name of `claimer` (_claim_attempt), by its id."""
        claimed = self._claim_attempt(claimer)
        return None if claimed is None else claimed.id

    def _claim_attempt(self, claimer: str | None = None) -> Attempt | None:
        """The next job to run, claimed in the name of `claimer`, as read once claimed (grade_claimed grades it from
        that row); jobs already run MAX_RUNS times (they killed a thread or the process) are recorded as grader
        errors on the way, never run again."""
        while True:
            with self.sessions() as db:
                claimed = queue.claim_attempt(db, self.usage_window, self.jobs, claimer)
            if claimed is None:
                return None
            if claimed.runs <= MAX_RUNS:
                self.status_changed(claimed.id)                   # running now
                return claimed
            self._give_up(claimed.id, GraderFailed(f"grading stopped {MAX_RUNS} times before it finished"))

    @property
    def usage_window(self) -> dt.timedelta:
        return dt.timedelta(minutes=self.sharing.usage_window_minutes)

    def run_slot(self, slot: int) -> None:
        """Claim and grade jobs one at a time until stopped (a grading thread's, or a grading process's, life)."""
        claimer = self.claimers.setdefault(slot, new_claimer(slot))
        while not self.stopping.is_set():
            try:
                claimed = self._claim_attempt(claimer)
                if claimed is None:
                    if self.keep_deferred_evidence():        # graded-first: only when no job waits
                        continue
                    self.wake.wait(IDLE_POLL_SECONDS)
                    self.wake.clear()
                    continue
                self.grade_claimed(claimed)
            except Exception:  # noqa: BLE001 - not a job's fault (grade() handles those): the database, say
                log.exception("grading thread %s: fault outside a job; going on", slot)
                self.stopping.wait(FAULT_PAUSE_SECONDS)
                self.requeue_claimed(slot)           # a job it claimed and could not go on with: back in the queue

    # --- one job ----------------------------------------------------------------------------------

    def grade(self, attempt_id: int) -> None:
        """Grade one claimed job; never raises for the job's own reasons."""
        with self.sessions() as db:
            attempt = db.get(Attempt, attempt_id)
        self.grade_claimed(attempt)

    def grade_claimed(self, attempt: Attempt) -> None:
        """grade, from the job's row as its claim read it (only the slot that claimed a job changes its row until it
        ends: reading it again was one more statement a job)."""
        attempt_id = attempt.id
        try:
            result, execution = self._graded(attempt)
            if execution is not None and execution.executed_notebook:
                uploads.write_durably(uploads.executed_path(self.course, attempt.student_id, attempt.assignment,
                                                            attempt.id), encode_text(execution.executed_notebook))
            if execution is not None:
                self._defer_evidence(attempt, result, execution)
            self._record(attempt, Status.GRADED, result)
        except StoppedShort:
            with self.sessions() as db:
                queue.run_in_full_later(db, attempt_id)
            self.status_changed(attempt_id)
            log.info("attempt %s: its short run was stopped while others waited; it runs in full later", attempt_id)
            return
        except Exception as exc:  # noqa: BLE001 - this job's failure, retried or recorded on it alone
            self._failed(attempt, exc)
            return
        self.store_counting_safely(attempt.student_id, attempt.assignment)

    def _graded(self, attempt: Attempt) -> tuple[NotebookResult, Execution | None]:
        """(result, the run it was judged on: None when nothing ran); GraderFailed (or anything else) when the grader
        could not grade it. Its integrity evidence is not kept here: the student's result does not need it."""
        submission = self._submission(attempt)
        limits = self.limits_for(attempt.assignment)
        short = self.short_run(attempt, limits)
        prepared = prepare(self.course, submission, short or limits, isolate=True)
        if isinstance(prepared, NotebookResult):              # unreadable: nothing to run
            return prepared, None
        execution = self.execute(prepared)
        if execution.failure is not None:
            raise GraderFailed(execution.failure)
        if short is not None and any(e.get("event") == "notebook_time_limit" for e in execution.events):
            raise StoppedShort()
        return judge(self.course, submission, execution, limits), execution

    # --- integrity evidence, after the result ------------------------------------------------------

    def _defer_evidence(self, attempt: Attempt, result: NotebookResult, execution: Execution) -> None:
        """Before the attempt is recorded as graded: its evidence goes to the backlog, its marker on disk (locked);
        kept at once when the backlog is full, or when another worker holds that marker."""
        marker = None
        with self.backlog_lock:
            held = sum(deferred.execution.held_bytes for deferred in self.backlog if deferred.execution is not None)
            if held + execution.held_bytes <= EVIDENCE_BACKLOG_BYTES:
                marker = lock_marker(evidence.pending_path(self.course, attempt.id), create=True)
            if marker is not None:
                execution.executed_notebook = None           # on disk already: the backlog holds the answers only
                self.backlog.append(Deferred(attempt, result, execution, marker))
                return
        self._keep_evidence(attempt, result, execution)

    def keep_deferred_evidence(self) -> bool:
        """Keep the evidence of one graded attempt that waits for it (the first time, also take over the markers a
        dead process left); False when none waits."""
        if not self._orphans_looked_for:
            self._orphans_looked_for = True
            self._take_orphans()
        with self.backlog_lock:
            deferred = self.backlog.popleft() if self.backlog else None
        if deferred is None:
            return False
        try:
            execution = deferred.execution or self._run_again(deferred.attempt)
            self._keep_evidence(deferred.attempt, deferred.result, execution)
        finally:
            deferred.marker.close()
        return True

    def _keep_evidence(self, attempt: Attempt, result: NotebookResult, execution: Execution | None) -> None:
        """Keep the attempt's evidence (every attempt's, for when it counts), then drop its marker and, if it counts
        now, copy it where the report reads it: under the store lock, so a store of this student sees either the
        marker or the evidence."""
        kept = uploads.evidence_path(self.course, attempt.student_id, attempt.assignment, attempt.id)
        if execution is None:                                 # unreadable now: as an unreadable notebook, none
            kept.unlink(missing_ok=True)
        else:
            evidence.keep_graded(self.course, self._submission(attempt), execution, kept, judged=result)
        with self.store_lock, self.sessions() as db:
            evidence.pending_path(self.course, attempt.id).unlink(missing_ok=True)
            now = db.get(Attempt, attempt.id)
            if now is not None and now.promoted:
                self._counting_evidence(now)

    def _run_again(self, attempt: Attempt) -> Execution | None:
        """The run whose evidence a dead process did not keep: the notebook runs again in full (rare: only after a
        crash). A failed run still gives evidence that names the student and keeps their code (evidence.keep)."""
        prepared = prepare(self.course, self._submission(attempt), self.limits_for(attempt.assignment), isolate=True)
        if isinstance(prepared, NotebookResult):
            return None
        return self.execute(prepared)

    def _take_orphans(self) -> None:
        """Markers no live process holds: their evidence goes to this worker's backlog (run again when kept); a
        marker of an attempt not graded is dropped (it is graded again, and keeps its evidence then)."""
        for file in evidence.pending_markers(self.course):
            marker = lock_marker(file)
            if marker is None:
                continue                                       # a live worker's
            attempt_id = evidence.pending_attempt(file)
            with self.sessions() as db:
                attempt = db.get(Attempt, attempt_id) if attempt_id is not None else None
            if attempt is None or attempt.status != Status.GRADED or attempt.result_json is None:
                file.unlink(missing_ok=True)
                marker.close()
                continue
            result = NotebookResult.from_json(json.loads(attempt.result_json))
            with self.backlog_lock:
                self.backlog.append(Deferred(attempt, result, None, marker))

    def default_policy(self, assignment: str) -> Policy:
        """The rules of an assignment the instructor has not set: the course's ([portal] in course.toml)."""
        return rules.defaults(assignment, settings.load(self.course).portal)

    def policy_for(self, db, assignment: str) -> Policy:
        """The assignment's rules as they apply: the portal's (saved, else the course's defaults), with the deadline
        and grace of course.toml's [late.<assignment>] where it states them (one deadline, read everywhere)."""
        return self.policy_of(db.execute(SAVED_POLICY, {"assignment": assignment}).scalar_one_or_none(), assignment)

    def policy_of(self, saved: Policy | None, assignment: str) -> Policy:
        """policy_for from the assignment's saved row (None: none saved), read by the caller. Without a saved row, the
        course's rules, made once per reading of course.toml and shared (read only: a copy is saved, default_policy):
        every page and upload asks for them, and making them again cost ~0.15 ms each time."""
        course_settings = settings.load(self.course)
        if saved is not None:
            return rules.with_course_deadline(saved, course_settings, assignment)
        made_from, made = self._course_policies
        if made_from is not course_settings:                # course.toml read again: its rules made again
            made = {}
            self._course_policies = course_settings, made
        if assignment not in made:
            made[assignment] = rules.with_course_deadline(self.default_policy(assignment), course_settings, assignment)
        return made[assignment]

    def limits_for(self, assignment: str) -> Limits:
        """The sandbox's limits, with the notebook's time as the assignment's policy states it (never longer
        than the portal's own limit)."""
        with self.sessions() as db:
            policy = self.policy_for(db, assignment)
        seconds = min(policy.notebook_seconds or self.limits.notebook_seconds, self.limits.notebook_seconds)
        return dataclasses.replace(self.limits, notebook_seconds=seconds)

    def short_run(self, attempt: Attempt, limits: Limits) -> Limits | None:
        """The limits of a short first run ([sharing] rush_notebook_seconds) when other students' jobs wait and
        the notebook's own time is longer; None: run with `limits` in full."""
        seconds = self.sharing.rush_notebook_seconds
        if attempt.full_run or not seconds or seconds >= limits.notebook_seconds:
            return None
        with self.sessions() as db:
            if not queue.another_students_job_waits(db, attempt.student_id):
                return None
        return dataclasses.replace(limits, notebook_seconds=seconds)

    def _submission(self, attempt: Attempt) -> Submission:
        return Submission(attempt.student_id, attempt.assignment, attempt.notebook,
                          uploads.path(self.course, attempt.student_id, attempt.assignment, attempt.sha256))

    def _record(self, attempt: Attempt, status: Status, result: NotebookResult) -> None:
        """The job's end; an attempt the grader failed on has no score (every page leaves it blank, never 0). Its run
        is charged in the same statement (queue.charged), from the claim's start as read when the job began: reading
        the row again and charging it took two more."""
        now = utcnow()
        with self.sessions() as db:
            db.execute(update(Attempt).where(Attempt.id == attempt.id).values(
                status=status, finished_at=now, score=result.score if status == Status.GRADED else None,
                max_score=result.max_score,
                result_json=json.dumps(result.to_json()), **queue.charged(attempt.started_at, now)),
                execution_options=WRITE_ALONE)
            db.commit()
        self.status_changed(attempt.id)

    def _failed(self, attempt: Attempt, exc: Exception) -> None:
        """Back to the queue while runs are left; then a grader error."""
        log.warning("grading attempt %s failed on run %s: %s: %s", attempt.id, attempt.runs, type(exc).__name__,
                    str(exc)[:300])
        with self.sessions() as db:
            runs = db.get(Attempt, attempt.id).runs
            if runs < MAX_RUNS:
                queue.requeue(db, attempt.id)
        if runs < MAX_RUNS:
            self.status_changed(attempt.id)
            return
        self._give_up(attempt.id, exc)

    def _give_up(self, attempt_id: int, exc: Exception) -> None:
        with self.sessions() as db:
            attempt = db.get(Attempt, attempt_id)
        log.error("attempt %s: grader error after %s runs (%s)", attempt_id, attempt.runs, type(exc).__name__)
        try:
            result = grader_error(self.course, self._submission(attempt), exc)
            result.notes[-1] = Note(NoteKind.GRADER_ERROR, GAVE_UP)        # in place of the exception's name
        except Exception:  # noqa: BLE001 - even the error's result failed: record the bare status
            result = NotebookResult(attempt.student_id, attempt.assignment, attempt.notebook, False, [],
                                    [Note(NoteKind.GRADER_ERROR, GAVE_UP)])
        self._record(attempt, Status.ERROR, result)

    # --- the attempt that counts --------------------------------------------------------------------

    def fingerprint(self, assignment: str) -> str:
        if assignment not in self._fingerprints:
            self._fingerprints[assignment] = grader_fingerprint(self.course, assignment, self.limits)
        return self._fingerprints[assignment]

    def store_counting_safely(self, student: str, assignment: str) -> None:
        """store_counting; a failure is logged and left for the next store or restart (the attempt stays graded
        and unstored), never raised into a grading thread."""
        try:
            self.store_counting(student, assignment)
        except Exception:  # noqa: BLE001 - the gradebook step of one student, retried later
            log.exception("storing the counting attempt of %s for %s failed", student, assignment)

    def record(self, attempt: Attempt) -> record_of_attempts.Attempt:
        """The attempt in the record of every door's attempts (intake/attempts.py), with its points once graded. Each
        portal attempt is one already (service.same_upload asked the record's rule of every upload, those the grader
        failed on included, which the record does not hold)."""
        source = uploads.path(self.course, attempt.student_id, attempt.assignment, attempt.sha256)
        stated = as_recorded(attempt)
        score, most = attempt.score, attempt.max_score
        points = {attempt.sha256: (score, most)} if attempt.status == Status.GRADED and score is not None \
            and most is not None else None
        return record_of_attempts.add(self.course, stated.student, stated.assignment, stated.door, stated.source,
                                      stated.time, {name: source.read_bytes() for name in stated.files},
                                      judged_by_door=True, scores=points)

    def store_counting(self, student: str, assignment: str) -> Attempt | None:
        """Store the attempt that counts now, by [course] counted_attempt among every door's attempts, where
        `make grade` stores a submission (a no-op when it already is). An attempt from another door that counts is
        put back in submitted/ (make grade grades it again if need be); then no portal attempt is promoted."""
        from posenc_autograder.reports import late_policy

        with self.store_lock, self.sessions() as db:
            deadlines = late_policy.Deadlines(self.course, connection=db, student=student)  # one for this store
            attempts = list(db.execute(select(Attempt).where(Attempt.student_id == student, Attempt.assignment ==
                                                             assignment).order_by(Attempt.number)).scalars())
            recorded = {a.id: self.record(a) for a in attempts if a.status == Status.GRADED}    # in upload order
            counted = counted_in_record(self.course, student, assignment, deadlines)
            chosen = portal_attempt(counted, attempts)
            if chosen is None:
                if counted is not None:
                    record_of_attempts.place(self.course, counted)
                    db.execute(update(Attempt).where(Attempt.student_id == student, Attempt.assignment == assignment)
                               .values(promoted=False), execution_options=WRITE_ALONE)
                    db.commit()
                return None
            if chosen.promoted and record_of_attempts.in_submitted(self.course, student, assignment) == counted.files:
                return chosen
            self._store(chosen, db.get(Student, student), deadlines, recorded.get(chosen.id))
            db.execute(update(Attempt).where(Attempt.student_id == student, Attempt.assignment == assignment)
                       .values(promoted=Attempt.id == chosen.id), execution_options=WRITE_ALONE)
            db.commit()
        self.counting_stored(student, assignment)
        return chosen

    def _store(self, attempt: Attempt, student: Student | None, deadlines,
               recorded: record_of_attempts.Attempt | None = None) -> None:
        """Store the attempt as make grade stores a submission (records.graded), then its evidence and roster row;
        `recorded`: its entry in the record of attempts, if this store has just made it."""
        from posenc_autograder.reports import feedback

        course, key = self.course, (attempt.student_id, attempt.assignment, attempt.notebook)
        folder = course.submitted / attempt.student_id / attempt.assignment
        record_of_attempts.place(course, recorded or self.record(attempt))   # any other door's files there are kept
        executed_file = uploads.executed_path(course, attempt.student_id, attempt.assignment, attempt.id)
        executed = executed_file.read_bytes().decode("utf-8", "replace") if executed_file.is_file() else None
        result = NotebookResult.from_json(json.loads(attempt.graded_json()))
        with self._open_gradebook() as gb:
            graded.settle(course, gb, Submission(*key, folder / f"{attempt.notebook}.ipynb"), result, attempt.sha256,
                          self.fingerprint(attempt.assignment), feedback.page_writer(course, deadlines), executed)
        self._counting_evidence(attempt)
        rows = dict(roster.rows(course))             # its rows as read (read-only): this one is replaced
        row = rows.get((attempt.student_id, attempt.assignment)) or {"lms": "portal"}
        rows[attempt.student_id, attempt.assignment] = {
            **row, "student_id": attempt.student_id, "assignment": attempt.assignment,
            "name": row.get("name") or (student.name if student else ""),
            "submitted_at": settings.stamp(attempt.uploaded_at.replace(tzinfo=dt.timezone.utc)),
            "late": "yes" if attempt.late else "no",
            "attempt": f"portal attempt {attempt.number}", "file_name": f"{attempt.notebook}.ipynb",
            "source_zip": "", "sha256": attempt.sha256}
        roster.save(course, rows)

    @contextlib.contextmanager
    def _open_gradebook(self):
        """The gradebook for one store (the caller holds store_lock), kept open from one store to the next: opening it
        makes two engines, checks every table and reads the course's row (~10 ms, a new connection each on
        PostgreSQL); on PostgreSQL its statements then go through the portal's engine (gradebook.through_engine). Each
        store ends its transaction, so the next one reads what others wrote since (a manual grade
        in formgrader); after a failure it is closed, and the next store opens it afresh."""
        if self._gradebook is None:
            stack = contextlib.ExitStack()
            self._gradebook = stack, stack.enter_context(gradebook.open_gradebook(self.course))
            gradebook.through_engine(self._gradebook[1], self.sessions.kw["bind"])
        try:
            yield self._gradebook[1]
        except BaseException:
            self._close_gradebook()
            raise
        self._gradebook[1].db.remove()               # the session closed, its connection back in the pool

    def _close_gradebook(self) -> None:
        if self._gradebook is not None:
            stack, self._gradebook = self._gradebook[0], None
            with contextlib.suppress(Exception):
                stack.close()

    def _counting_evidence(self, attempt: Attempt) -> None:
        """The integrity report reads the evidence of the attempt that counts: its own, or none if it has none
        (an unreadable notebook) or none yet (its marker: _keep_evidence copies it), never another attempt's."""
        kept = uploads.evidence_path(self.course, attempt.student_id, attempt.assignment, attempt.id)
        target = evidence.path(self.course, attempt.assignment, attempt.notebook, attempt.student_id)
        pending = evidence.pending_path(self.course, attempt.id)
        if kept.is_file() and not pending.exists():
            uploads.write_durably(target, kept.read_bytes())
        else:
            target.unlink(missing_ok=True)


def lock_marker(file, create: bool = False) -> typing.BinaryIO | None:
    """The pending marker opened and locked by this process (released when closed, or when the process ends);
    None when another process (or another worker of this one) holds it, or it is gone."""
    try:
        if create:
            file.parent.mkdir(parents=True, exist_ok=True)
        handle = open(file, "ab" if create else "rb")
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def new_claimer(slot: int) -> str:
    """A name for one life of a grading slot (a thread, or a grading process), unique to it."""
    return f"{slot}-{secrets.token_hex(8)}"


class StoreLock:
    """The one writer of the gradebook, submitted/ and the roster: a thread of this process (a lock), and a process
    of this course (a lock file: the portal's grading processes and its web process each store)."""

    FILE = "portal-store.lock"                   # in the course's work folder

    def __init__(self, course: Course):
        self.path, self.threads = course.work / self.FILE, threading.Lock()
        self.handle: typing.BinaryIO | None = None

    def __enter__(self) -> None:
        self.threads.acquire()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = open(self.path, "ab")
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        except BaseException:
            self._let_go()
            raise

    def __exit__(self, *exc_info) -> None:
        self._let_go()

    def _let_go(self) -> None:
        if self.handle is not None:
            self.handle.close()                  # closing the file releases its lock
            self.handle = None
        self.threads.release()


def counted_in_record(course: Course, student: str, assignment: str, deadlines) -> record_of_attempts.Attempt | None:
    """The attempt that counts among every door's ([course] counted_attempt over the record of attempts; `deadlines`:
    reports.late_policy.Deadlines)."""
    return counted_among(course, deadlines.recorded(student, assignment), deadlines)


def counted_among(course: Course, record: list[record_of_attempts.Attempt],
                  deadlines) -> record_of_attempts.Attempt | None:
    """counted_in_record of the student's record of attempts, as the caller has read it."""
    return record_of_attempts.choose(record, settings.load(course).course.counted_attempt, deadlines.attempt_percent)


def portal_attempt(counted: record_of_attempts.Attempt | None, attempts: list[Attempt]) -> Attempt | None:
    """The portal's own attempt that is `counted` (None: the one that counts came in by another door)."""
    if counted is None or counted.door not in PORTAL_DOORS:
        return None
    holding = [a for a in attempts if counted.files == {f"{a.notebook}.ipynb": a.sha256}]
    # a file uploaded again after another is an attempt of its own: the one uploaded at the counted time
    at_time = [a for a in holding if as_recorded(a).received_at == counted.received_at]
    found = at_time or holding
    return found[-1] if found else None


def as_recorded(attempt: Attempt) -> record_of_attempts.Attempt:
    """A portal attempt as the record of attempts states it (worker.record writes it so, once graded)."""
    return record_of_attempts.Attempt(attempt.student_id, attempt.assignment, attempt.door or "portal",
                                      f"portal attempt {attempt.number}",
                                      settings.stamp(attempt.uploaded_at.replace(tzinfo=dt.timezone.utc)),
                                      {f"{attempt.notebook}.ipynb": attempt.sha256})


def encode_text(text: str) -> bytes:
    """UTF-8 of text that came within reach of student code: a lone surrogate becomes '?' instead of raising."""
    return text.encode("utf-8", "replace")
