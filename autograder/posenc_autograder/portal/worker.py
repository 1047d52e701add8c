"""Grading the queue: worker threads in the portal claim attempts and grade each through the same pipeline as
`make grade` (prepare → execute in the sandbox, locally or on Dask → judge). Student code runs only inside the
sandbox's subprocess (or on a Dask worker), never in the portal's process.

The attempt that counts (best or last, by policy) is then stored exactly as `make grade` stores a submission:
its file in submitted/ with nbgrader's timestamp.txt, its scores in the gradebook, the autograded notebook,
the feedback page and the results store (orchestration.grade.settle), and its time and late flag in the roster; so
`make grade` sees an unchanged file and `make feedback`, the LMS exports and `make integrity` read it as theirs.
"""
from __future__ import annotations

import json
import threading
from typing import Callable

from sqlalchemy import select, update

from posenc_autograder.course import Course
from posenc_autograder.grading.execute import Execution, GradingTask, execute_task
from posenc_autograder.grading.regrade import grader_fingerprint
from posenc_autograder.orchestration.grade import settle
from posenc_autograder.grading.pipeline import grader_error, judge, prepare
from posenc_autograder.intake import roster
from posenc_autograder.intake.submissions import Submission
from posenc_autograder.portal import policy as rules
from posenc_autograder.portal import queue, uploads
from posenc_autograder.portal.models import Attempt, Policy, Student, utcnow
from posenc_autograder.records import evidence, gradebook, nbgrader_files
from posenc_autograder.results import NotebookResult
from posenc_autograder.sandbox.bubblewrap import Limits

IDLE_POLL_SECONDS = 1.0               # a worker also wakes at once when an upload is queued in this process
Execute = Callable[[GradingTask], Execution]


def dask_execute(scheduler: str) -> Execute:
    """Send each task (plain data) to a Dask cluster, through one client for the portal's lifetime."""
    from distributed import Client

    client = Client(scheduler)
    return lambda task: client.submit(execute_task, task, pure=False).result()


class Worker:
    def __init__(self, course: Course, sessions, jobs: int, limits: Limits = Limits(), execute: Execute = execute_task):
        self.course, self.sessions, self.jobs, self.limits, self.execute = course, sessions, jobs, limits, execute
        self.wake, self.stopping = threading.Event(), threading.Event()
        self.store_lock = threading.Lock()           # one writer for the gradebook, submitted/ and the roster
        self.threads: list[threading.Thread] = []
        self._fingerprints: dict[str, str] = {}

    # --- lifecycle --------------------------------------------------------------------------------

    def recover(self) -> int:
        """Before any thread starts: put back jobs a dead process was running; finish interrupted stores."""
        with self.sessions() as db:
            requeued = queue.requeue_orphans(db)
            pending = db.execute(select(Attempt.student_id, Attempt.assignment).where(
                Attempt.status == "graded").distinct()).all()
        for student, assignment in pending:
            self.store_counting(student, assignment)
        return requeued

    def start(self) -> None:
        self.recover()
        self.threads = [threading.Thread(target=self._loop, name=f"portal-grader-{i}", daemon=True)
                        for i in range(self.jobs)]
        for thread in self.threads:
            thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self.wake.set()
        for thread in self.threads:
            thread.join(timeout)

    def notify(self) -> None:
        self.wake.set()

    def run_until_idle(self) -> int:
        """Grade queued jobs in the calling thread until none is left (tests, benchmarks); how many."""
        done = 0
        while (job := self._claim()) is not None:
            self.grade(job)
            done += 1
        return done

    def _claim(self) -> int | None:
        with self.sessions() as db:
            return queue.claim(db)

    def _loop(self) -> None:
        while not self.stopping.is_set():
            job = self._claim()
            if job is None:
                self.wake.wait(IDLE_POLL_SECONDS)
                self.wake.clear()
                continue
            self.grade(job)

    # --- one job ----------------------------------------------------------------------------------

    def grade(self, attempt_id: int) -> None:
        with self.sessions() as db:
            attempt = db.get(Attempt, attempt_id)
        submission = Submission(attempt.student_id, attempt.assignment, attempt.notebook,
                                uploads.path(self.course, attempt.student_id, attempt.assignment, attempt.sha256))
        result, executed, grader_failed = self._result(submission)
        if executed:
            uploads.write_durably(uploads.executed_path(self.course, attempt.student_id, attempt.assignment,
                                                        attempt.id), executed.encode())
        with self.sessions() as db:
            db.execute(update(Attempt).where(Attempt.id == attempt_id).values(
                status="error" if grader_failed else "graded", finished_at=utcnow(), score=result.score,
                max_score=result.max_score, result_json=json.dumps(result.to_json())))
            db.commit()
        self.store_counting(attempt.student_id, attempt.assignment)

    def _result(self, submission: Submission) -> tuple[NotebookResult, str | None, bool]:
        """(result, executed notebook, did the grader itself fail?) — never raises."""
        try:
            prepared = prepare(self.course, submission, self.limits, isolate=True)
            if isinstance(prepared, NotebookResult):              # unreadable: nothing to run
                return prepared, None, False
            execution = self.execute(prepared)
            result = judge(self.course, submission, execution, self.limits)
            evidence.keep_graded(self.course, submission, execution)     # the latest judged attempt, for integrity
            return result, execution.executed_notebook, execution.failure is not None
        except Exception as exc:  # noqa: BLE001 - one attempt's failure, reported on it
            return grader_error(self.course, submission, exc), None, True

    # --- the attempt that counts --------------------------------------------------------------------

    def fingerprint(self, assignment: str) -> str:
        if assignment not in self._fingerprints:
            self._fingerprints[assignment] = grader_fingerprint(self.course, assignment, self.limits)
        return self._fingerprints[assignment]

    def store_counting(self, student: str, assignment: str) -> Attempt | None:
        """Store the attempt that counts now where `make grade` stores a submission (a no-op when it already is)."""
        with self.store_lock, self.sessions() as db:
            attempts = list(db.execute(select(Attempt).where(Attempt.student_id == student,
                                                             Attempt.assignment == assignment)).scalars())
            chosen = rules.counting_attempt(db.get(Policy, assignment) or rules.defaults(assignment), attempts)
            if chosen is None or chosen.promoted:
                return chosen
            self._store(chosen, db.get(Student, student))
            db.execute(update(Attempt).where(Attempt.student_id == student, Attempt.assignment == assignment)
                       .values(promoted=Attempt.id == chosen.id))
            db.commit()
            return chosen

    def _store(self, attempt: Attempt, student: Student | None) -> None:
        course, key = self.course, (attempt.student_id, attempt.assignment, attempt.notebook)
        folder = course.submitted / attempt.student_id / attempt.assignment
        source = uploads.path(course, attempt.student_id, attempt.assignment, attempt.sha256)
        uploads.write_durably(folder / f"{attempt.notebook}.ipynb", source.read_bytes())
        uploads.write_durably(folder / nbgrader_files.TIMESTAMP,
                              nbgrader_files.format_timestamp(attempt.uploaded_at).encode())
        executed_file = uploads.executed_path(course, attempt.student_id, attempt.assignment, attempt.id)
        executed = executed_file.read_text() if executed_file.is_file() else None
        result = NotebookResult.from_json(json.loads(attempt.result_json))
        with gradebook.open_gradebook(course) as gb:
            settle(course, gb, Submission(*key, folder / f"{attempt.notebook}.ipynb"), lambda: result,
                   attempt.sha256, self.fingerprint(attempt.assignment), executed)
        rows = roster.load(course)
        row = rows.get((attempt.student_id, attempt.assignment)) or {"lms": "portal"}
        rows[attempt.student_id, attempt.assignment] = {
            **row, "student_id": attempt.student_id, "assignment": attempt.assignment,
            "name": row.get("name") or (student.name if student else ""),
            "submitted_at": attempt.uploaded_at.isoformat() + "+00:00", "late": "yes" if attempt.late else "no",
            "attempt": f"portal attempt {attempt.number}", "file_name": f"{attempt.notebook}.ipynb",
            "source_zip": "", "sha256": attempt.sha256}
        roster.save(course, rows)

