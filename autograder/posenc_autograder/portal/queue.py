"""The grading queue is the attempts table: a job is a row, claimed by a conditional UPDATE (so two workers
never take the same one), and a restart puts back every job a dead process was running.

The queue is fair between students, in rounds: every student's first waiting job comes before anyone's second,
and a student with a job running comes after those without. So a classmate waits for at most one job per
student ahead of them, however many one student uploads (the policy also caps a student's waiting jobs)."""
from __future__ import annotations

import collections
import datetime as dt
import math

from sqlalchemy import func, select, update

from posenc_autograder.portal.models import WAITING, Attempt, Status, utcnow

RECENT_JOBS = 20                      # grading times averaged for the wait a student is shown
DEFAULT_JOB_SECONDS = 5.0


def enqueue(db, student: str, assignment: str, notebook: str, sha256: str, size: int, late: bool,
            now: dt.datetime) -> Attempt:
    """A new attempt, queued (the caller commits: the answer is sent only after)."""
    number = db.execute(select(func.coalesce(func.max(Attempt.number), 0)).where(
        Attempt.student_id == student, Attempt.assignment == assignment)).scalar_one() + 1
    attempt = Attempt(student_id=student, assignment=assignment, notebook=notebook, number=number, sha256=sha256,
                      size=size, uploaded_at=now, late=late, status=Status.QUEUED, runs=0, promoted=False)
    db.add(attempt)
    db.flush()
    return attempt


def fair_order(db) -> list[int]:
    """The queued jobs in the order they will be graded: by the student's jobs running, then the job's place among
    that student's waiting jobs (rounds), then upload order."""
    queued = db.execute(select(Attempt.id, Attempt.student_id).where(Attempt.status == Status.QUEUED)
                        .order_by(Attempt.id)).all()
    running = collections.Counter(db.execute(select(Attempt.student_id).where(Attempt.status == Status.RUNNING))
                                  .scalars())
    place: collections.Counter = collections.Counter()
    ranked = []
    for job, student in queued:
        ranked.append((running[student], place[student], job))
        place[student] += 1
    return [job for *_, job in sorted(ranked)]


def claim(db) -> int | None:
    """Take the next job in fair order (committed as running), or None when the queue is empty."""
    while True:
        order = fair_order(db)
        if not order:
            return None
        job = order[0]
        taken = db.execute(update(Attempt).where(Attempt.id == job, Attempt.status == Status.QUEUED)
                           .values(status=Status.RUNNING, started_at=utcnow(), runs=Attempt.runs + 1)).rowcount
        db.commit()
        if taken:
            return job


def requeue(db, attempt_id: int) -> None:
    """A running job back to the queue (its grading failed for the grader's reasons, or its thread died)."""
    db.execute(update(Attempt).where(Attempt.id == attempt_id, Attempt.status == Status.RUNNING)
               .values(status=Status.QUEUED))
    db.commit()


def requeue_orphans(db) -> int:
    """At start-up: jobs left running by a process that died go back to the queue (only one portal runs per
    course: the app holds a lock)."""
    count = db.execute(update(Attempt).where(Attempt.status == Status.RUNNING).values(status=Status.QUEUED)).rowcount
    db.commit()
    return count


def waiting_jobs(db, student: str) -> int:
    """The student's uploads queued or running, every assignment."""
    return db.execute(select(func.count()).select_from(Attempt).where(
        Attempt.student_id == student, Attempt.status.in_(WAITING))).scalar_one()


def mean_job_seconds(db) -> float:
    recent = db.execute(select(Attempt.started_at, Attempt.finished_at).where(Attempt.finished_at.is_not(None))
                        .order_by(Attempt.finished_at.desc()).limit(RECENT_JOBS)).all()
    seconds = [(end - start).total_seconds() for start, end in recent if start and end]
    return sum(seconds) / len(seconds) if seconds else DEFAULT_JOB_SECONDS


def poll_seconds(status: str, wait: float) -> float:
    """How soon a page should ask again: often while running, rarely while far back in the queue (a class of
    pollers must not cost the portal more than its grading)."""
    return 1.0 if status == Status.RUNNING else min(max(wait / 4, 1.0), 10.0)


def waiting(db, attempt: Attempt, workers: int) -> tuple[int, float]:
    """(jobs ahead of this one, estimated seconds until it is graded)."""
    if attempt.status not in WAITING:
        return 0, 0.0
    mean = mean_job_seconds(db)
    if attempt.status == Status.RUNNING:
        elapsed = (utcnow() - attempt.started_at).total_seconds() if attempt.started_at else 0.0
        return 0, max(mean - elapsed, 1.0)
    order = fair_order(db)
    ahead = order.index(attempt.id) if attempt.id in order else 0
    return ahead, (math.floor(ahead / max(workers, 1)) + 1) * mean


def counts(db) -> dict[str, int]:
    rows = db.execute(select(Attempt.status, func.count()).group_by(Attempt.status)).all()
    return {status: n for status, n in rows}
