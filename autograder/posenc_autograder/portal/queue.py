"""The grading queue is the attempts table: a job is a row, claimed by a conditional UPDATE (so two workers
never take the same one), and a restart puts back every job a dead process was running.

The queue shares the sandboxes by grading time: the student who has used the least sandbox time lately
(`[sharing] usage_window_minutes`) goes first, a student's second waiting job counts as if their first had
taken a typical job's time, and a running job counts at least that. So a student's first upload waits only for
other students' first uploads, and whoever has burnt sandbox time (many attempts, slow or looping notebooks)
waits behind everyone who has burnt less, however many uploads they send (the policy also caps a student's
waiting jobs).

A job's first run is short while other students wait (`[sharing] rush_notebook_seconds`): a notebook that needs
longer goes back to the queue marked `full_run`, charged for the time it used, and runs again with its full time
only when no other student's job waits, on at most all sandboxes but one; so no notebook can hold the
sandboxes of a class in a rush."""
from __future__ import annotations

import collections
import datetime as dt
import math
import threading
import time
from collections.abc import Collection

from sqlalchemy import and_, bindparam, exists, func, literal_column, or_, select, update
from sqlalchemy.orm import aliased

from posenc_autograder.portal.models import ALONE, WAITING, Attempt, Status, utcnow
from posenc_autograder.settings import Sharing

RECENT_JOBS = 20                      # grading times averaged for the wait a student is shown
DEFAULT_JOB_SECONDS = 5.0
USAGE_WINDOW = dt.timedelta(minutes=Sharing().usage_window_minutes)     # a course's own: the worker passes it


def enqueue(db, student: str, assignment: str, notebook: str, sha256: str, size: int, late: bool,
            now: dt.datetime, door: str = "portal", earlier: Collection[Attempt] | None = None) -> Attempt:
    """A new attempt, queued (the caller commits: the answer is sent only after); `door`: the record's name of the
    way the student came in; `earlier`: every attempt of the student's at this assignment, as the caller read them
    in this session (holding their uploads' lock): the new number follows theirs without reading them again (the
    table's unique number refuses a row that raced past it). None: read."""
    if earlier is None:
        number = db.execute(select(func.coalesce(func.max(Attempt.number), 0)).where(
            Attempt.student_id == student, Attempt.assignment == assignment)).scalar_one() + 1
    else:
        number = max((attempt.number for attempt in earlier), default=0) + 1
    attempt = Attempt(student_id=student, assignment=assignment, notebook=notebook, number=number, sha256=sha256,
                      size=size, uploaded_at=now, late=late, status=Status.QUEUED, runs=0, promoted=False,
                      door=door)
    db.add(attempt)
    db.flush()
    return attempt


def used_seconds(db, now: dt.datetime, window: dt.timedelta, typical: float,
                 students: Collection[str] | None = None, queued_only: bool = False
                 ) -> collections.defaultdict[str, float]:
    """Sandbox seconds each student used lately: the runs of their attempts uploaded within `window`, and for a job
    running now what it has run so far, at least `typical` (it will take about that). `students`: only theirs;
    `queued_only`: only those whose jobs wait (the queue's order needs no one else's), chosen by the database
    (a list of 2,000 names bound one by one cost more than the sums)."""
    used: collections.defaultdict[str, float] = collections.defaultdict(float)     # a student without: 0
    recent = select(Attempt.student_id, func.sum(Attempt.grading_seconds)).where(Attempt.uploaded_at >= now - window)
    if students is not None:
        recent = recent.where(Attempt.student_id.in_(sorted(students)))
    if queued_only:
        recent = recent.where(Attempt.student_id.in_(select(Attempt.student_id).where(Attempt.status == Status.QUEUED)))
    for student, seconds in db.execute(recent.group_by(Attempt.student_id)):
        used[student] += seconds or 0.0
    for student, started in db.execute(select(Attempt.student_id, Attempt.started_at)
                                       .where(Attempt.status == Status.RUNNING)):
        used[student] += max((now - started).total_seconds() if started else 0.0, typical)
    return used


def fair_order(db, window: dt.timedelta = USAGE_WINDOW) -> list[int]:
    """The queued jobs in the order they will be graded: least sandbox time used first, each student's later
    waiting jobs counted as if the earlier ones had taken a typical job's time; then upload order."""
    queued = db.execute(select(Attempt.id, Attempt.student_id).where(Attempt.status == Status.QUEUED)
                        .order_by(Attempt.id)).all()
    if not queued:
        return []
    now, typical = utcnow(), mean_job_seconds(db)
    used = used_seconds(db, now, window, typical, queued_only=True)
    place: collections.Counter = collections.Counter()
    ranked = []
    for job, student in queued:
        ranked.append((used[student] + place[student] * typical, job))
        place[student] += 1
    return [job for _, job in sorted(ranked)]


def claim(db, window: dt.timedelta = USAGE_WINDOW, slots: int = 1, claimer: str | None = None) -> int | None:
    """claim_attempt's job, by its id."""
    claimed = claim_attempt(db, window, slots, claimer)
    return None if claimed is None else claimed.id


def claim_attempt(db, window: dt.timedelta = USAGE_WINDOW, slots: int = 1,
                  claimer: str | None = None) -> Attempt | None:
    """Take the next job in fair order (committed as running, in the name of `claimer`: the grading slot that takes
    it, so that whoever replaces a dead slot puts back what it held, requeue_claimed), as its row reads once taken,
    or None when none may run now. A job whose short run was stopped (`full_run`) runs only when no other student's
    job waits, and never on the last free slot of several (`slots`: the sandboxes), so a long run cannot hold them
    all. In a rush of first uploads the job is found, taken and read in one statement (next_job's FIRST_UNUSED
    inside the UPDATE, RETURNING its row), a transaction of its own; where it was found, taken, read again and
    committed in four, each a round trip on PostgreSQL."""
    while True:
        if mean_job_seconds(db) > 0:                             # next_job's rule for a job that ranks 0
            now = utcnow()
            taken = db.execute(TAKE_FIRST_UNUSED, {"since": now - window, "now": now, "claimer": claimer},
                               execution_options=TAKING).scalar()
            db.commit()
            if taken is not None:
                return taken
        job = next_job(db, window, slots)       # the order's; or the job ranked 0 after the one another slot took
        if job is None:
            return None
        taken = db.execute(TAKE, {"job": job, "now": utcnow(), "claimer": claimer}, execution_options=TAKING).scalar()
        db.commit()
        if taken is not None:
            return taken


def next_job(db, window: dt.timedelta = USAGE_WINDOW, slots: int = 1) -> int | None:
    """The first job of the fair order that may start now (may_start), without computing the whole order when it
    need not be: no job ranks below a student's first waiting job who has used no sandbox time in the window and
    runs nothing (rank 0: a charge is never negative and a typical job takes some time), and of those, upload order
    decides; a full run before it in the order is another student's, so it may not start. One indexed query that
    stops at its first row in a rush of first uploads, where the whole order read every waiting job and its
    student's time at every claim. Only when no job ranks 0 is the order computed as the status pages show it."""
    if mean_job_seconds(db) > 0:
        first = db.execute(FIRST_UNUSED, {"since": utcnow() - window}).scalar()
        if first is not None:
            return first
    order = fair_order(db, window)
    return next((j for j in order if may_start(db, j, order, slots)), None)


# FIRST_UNUSED is the smallest id (upload order) of the queued jobs whose student has no other job waiting before it or
# running and used no sandbox time in the window: one look-up by student a job. Both databases find the smallest by
# walking the queued jobs' index in id order and stop at the first job that passes (PostgreSQL's plan of min() is that
# index walk whatever its statistics say: none yet, or taken before the rush, when no row was queued), so a claim's work
# is the jobs it walks past, not the queue; and min() makes the answer the first in upload order by SQL's own rule,
# not by the order rows happen to reach a LIMIT. The test is one EXISTS that is IS NOT TRUE, where NOT EXISTS becomes
# an anti-join (which, planned for a queue of one, joined each queued job to every waiting one: 0.2-0.7 s a claim at
# 800 queued) and a second EXISTS could be hashed over the whole table. 'queued' is written in the statement, not
# bound: PostgreSQL's generic plan of the prepared statement (portal/prepared.py) cannot know a parameter's value, so
# it walked the whole table by its primary key past every graded job to the first queued one.
_OTHER = aliased(Attempt)
FIRST_UNUSED = (select(func.min(Attempt.id))
                .where(Attempt.status == literal_column(f"'{Status.QUEUED.value}'"), Attempt.full_run.is_not(True),
                       exists().where(_OTHER.student_id == Attempt.student_id,
                                      or_(_OTHER.status == Status.RUNNING,
                                          and_(_OTHER.status == Status.QUEUED, _OTHER.id < Attempt.id),
                                          and_(_OTHER.uploaded_at >= bindparam("since"),
                                               _OTHER.grading_seconds > 0))).is_not(True)))


# A claim of FIRST_UNUSED's job: found and taken in one statement, its row returned; a transaction of its own on
# PostgreSQL (models.ALONE: no BEGIN and COMMIT around it). The inner query reads the table on its own (correlate
# None), never the row being updated; a job another slot took in between is 'queued' no more, and is not taken.
# Both claims' UPDATEs are built once (a statement built at each claim cost its cache key and coercions every time).
TAKING = {"synchronize_session": False, ALONE: True}
_TAKEN = {"status": Status.RUNNING, "started_at": bindparam("now"), "runs": Attempt.runs + 1,
          "claimed_by": bindparam("claimer")}                 # running from now, one run more, in the claimer's name
TAKE_FIRST_UNUSED = (update(Attempt).where(Attempt.id == FIRST_UNUSED.scalar_subquery().correlate(None),
                                           Attempt.status == Status.QUEUED).values(_TAKEN).returning(Attempt))
TAKE = update(Attempt).where(Attempt.id == bindparam("job"), Attempt.status == Status.QUEUED).values(_TAKEN) \
    .returning(Attempt)                                       # a job of the fair order, by its id


def may_start(db, job: int, order: list[int], slots: int) -> bool:
    full_run, student = db.execute(select(Attempt.full_run, Attempt.student_id).where(Attempt.id == job)).one()
    if not full_run:
        return True
    others = db.execute(select(func.count()).select_from(Attempt).where(
        Attempt.id.in_(order), Attempt.student_id != student)).scalar_one()
    long_runs = db.execute(select(func.count()).select_from(Attempt).where(
        Attempt.status == Status.RUNNING, Attempt.full_run)).scalar_one()
    return others == 0 and long_runs < max(slots - 1, 1)


def others_waiting(db, attempt_id: int) -> bool:
    """Does another student's job wait now (then a job's run is short, `rush_notebook_seconds`)? The first such job
    answers: counting them all read the whole queue for every job run in a rush."""
    return another_students_job_waits(db, db.get(Attempt, attempt_id).student_id)


def another_students_job_waits(db, student: str) -> bool:
    """others_waiting for a job of `student`'s (its row read already)."""
    return db.execute(ANOTHER_WAITING, {"student": student}).first() is not None


ANOTHER_WAITING = select(Attempt.id).where(Attempt.status == Status.QUEUED,
                                           Attempt.student_id != bindparam("student")).limit(1)     # built once


def charge(db, attempt_id: int, now: dt.datetime | None = None) -> None:
    """Add the run that is ending to the job's sandbox time (the caller commits)."""
    attempt = db.get(Attempt, attempt_id)
    if attempt is not None and attempt.started_at is not None:
        db.execute(update(Attempt).where(Attempt.id == attempt_id).values(charged(attempt.started_at, now or utcnow())))


def charged(started_at: dt.datetime | None, now: dt.datetime) -> dict:
    """The values of an UPDATE of a job that add its run, started at `started_at` (as claimed) and ending `now`, to
    its sandbox time: none for a job never started."""
    if started_at is None:
        return {}
    seconds = max((now - started_at).total_seconds(), 0.0)
    return {"grading_seconds": func.coalesce(Attempt.grading_seconds, 0.0) + seconds}


def run_in_full_later(db, attempt_id: int) -> None:
    """A job whose short run was stopped: charged, back in the queue, to run with its full time."""
    charge(db, attempt_id)
    db.execute(update(Attempt).where(Attempt.id == attempt_id, Attempt.status == Status.RUNNING)
               .values(status=Status.QUEUED, full_run=True))
    db.commit()


def requeue(db, attempt_id: int) -> None:
    """A running job back to the queue (its grading failed for the grader's reasons, or its thread died)."""
    charge(db, attempt_id)
    db.execute(update(Attempt).where(Attempt.id == attempt_id, Attempt.status == Status.RUNNING)
               .values(status=Status.QUEUED))
    db.commit()


def requeue_claimed(db, claimer: str) -> list[int]:
    """The jobs a grading slot that died (or faulted outside a job) had claimed and left running, back to the queue,
    each charged for its run: from the database, so a slot that died just after its claim was committed, before it
    could tell anyone, loses no job either. Returns them."""
    jobs = list(db.execute(select(Attempt.id).where(Attempt.status == Status.RUNNING,
                                                    Attempt.claimed_by == claimer)).scalars())
    for job in jobs:
        charge(db, job)
    if jobs:
        db.execute(update(Attempt).where(Attempt.id.in_(jobs), Attempt.status == Status.RUNNING,
                                         Attempt.claimed_by == claimer).values(status=Status.QUEUED))
    db.commit()
    return jobs


def requeue_orphans(db) -> int:
    """At start-up: jobs left running by a process that died go back to the queue (only one portal runs per
    course: the app holds a lock)."""
    count = db.execute(update(Attempt).where(Attempt.status == Status.RUNNING).values(status=Status.QUEUED)).rowcount
    db.commit()
    return count


def waiting_jobs(db, student: str) -> int:
    """The student's uploads queued or running, every assignment."""
    return db.execute(WAITING_JOBS, {"student": student}).scalar_one()


WAITING_JOBS = select(func.count()).select_from(Attempt).where(Attempt.student_id == bindparam("student"),
                                                               Attempt.status.in_(WAITING))     # built once


def mean_job_seconds(db) -> float:
    recent = db.execute(RECENT_TIMES).all()
    seconds = [(end - start).total_seconds() for start, end in recent if start and end]
    return sum(seconds) / len(seconds) if seconds else DEFAULT_JOB_SECONDS


RECENT_TIMES = (select(Attempt.started_at, Attempt.finished_at).where(Attempt.finished_at.is_not(None))
                .order_by(Attempt.finished_at.desc()).limit(RECENT_JOBS))             # built once: every claim reads it


ROUTER_TIMEOUT_SECONDS = 30.0       # a hosting router's wait for a response to begin (Heroku's; nginx's default is 60)
HOLD_SECONDS = {Status.QUEUED: 25.0, Status.RUNNING: 25.0}    # a status request held at most: under that timeout


def poll_seconds(status: str, wait: float) -> float:
    """How soon a page that is not held should ask again: often while running, rarely while far back in the queue,
    never more often than a held request is answered (a class of pollers must not cost the portal more than its
    grading)."""
    return 1.0 if status == Status.RUNNING else min(max(wait / 4, 1.0), HOLD_SECONDS[Status.QUEUED])


def hold_seconds(status: str) -> float:
    """How long a status request waits for its attempt's status to change before it is answered unchanged: as long
    as a router lets a response wait, less a margin. A change answers it at once (watch.StatusWatch), so the hold
    only sets how often a page far back in the queue refreshes the jobs ahead it shows; a shorter one made a longer
    queue cost more requests (every waiting page asked again each 10 s: 12.9 requests a student in a rush of
    2,000 against ~7 when the queue is short), a load that fed the queue it measured."""
    return HOLD_SECONDS[status]


class QueueView:
    """The queue's fair order and mean job time as every status request reads them, from memory: computed again
    only after the queue changed (`changed`, called on every upload and status change in this process, and the
    portal is the only writer of its queue) or went stale (`max_age`: sandbox time used ages), and then no more
    often than `spacing` times as long as the last computation took after it, counted as at least `least_cost`, so
    however many students ask, the ordering costs at most one computation per change and about a tenth of a core,
    never one per request; and however often the queue changes, at most two computations a second (spacing 10):
    a rush's uploads and claims change it ten times a second and more, as many computations of an order as long as
    the queue, where the jobs ahead a page shows need no fresher figure."""

    def __init__(self, max_age: float = 5.0, spacing: float = 10.0, clock=time.monotonic, least_cost: float = 0.05):
        self.max_age, self.spacing, self.clock, self.least_cost = max_age, spacing, clock, least_cost
        self._lock = threading.Lock()
        self._version, self._seen = 0, -1
        self._at, self._cost = -math.inf, 0.0
        self._places: dict[int, int] = {}
        self._mean = DEFAULT_JOB_SECONDS

    def changed(self) -> None:
        with self._lock:
            self._version += 1

    def snapshot(self, db, window: dt.timedelta = USAGE_WINDOW) -> tuple[dict[int, int], float]:
        """({queued job: jobs ahead of it}, mean job seconds), from memory unless due to be computed again."""
        with self._lock:
            age = self.clock() - self._at
            due = age >= self.max_age or (self._version != self._seen and
                                           age >= max(self._cost, self.least_cost) * self.spacing)
            if due:
                version, started = self._version, self.clock()
                self._places = {job: place for place, job in enumerate(fair_order(db, window))}
                self._mean = mean_job_seconds(db)
                self._seen, self._at = version, self.clock()
                self._cost = self._at - started
            return self._places, self._mean


def waiting(db, attempt: Attempt, workers: int, window: dt.timedelta = USAGE_WINDOW,
            view: QueueView | None = None) -> tuple[int, float]:
    """(jobs ahead of this one, estimated seconds until it is graded), read from the portal's view of the queue
    (without one: computed now; a job queued since the view was computed is behind every job in it)."""
    if attempt.status not in WAITING:
        return 0, 0.0
    view = view or QueueView(max_age=0.0)
    places, mean = view.snapshot(db, window)
    if attempt.status == Status.RUNNING:
        elapsed = (utcnow() - attempt.started_at).total_seconds() if attempt.started_at else 0.0
        return 0, max(mean - elapsed, 1.0)
    ahead = places.get(attempt.id, len(places))
    return ahead, (math.floor(ahead / max(workers, 1)) + 1) * mean


def counts(db) -> dict[str, int]:
    rows = db.execute(select(Attempt.status, func.count()).group_by(Attempt.status)).all()
    return {status: n for status, n in rows}
