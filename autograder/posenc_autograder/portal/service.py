"""What the portal does, apart from HTTP: the operations its routes call, each on its own database session.

Everything here is synchronous (SQLAlchemy, the file system); the routes run it in Starlette's thread pool.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import threading
import time
import typing

from sqlalchemy import and_, bindparam, literal, select
from sqlalchemy.orm import defer

from posenc_autograder import settings
from posenc_autograder.course import RELEASE_DIRECTORY, Course
from posenc_autograder.intake import attempts as record_of_attempts
from posenc_autograder.intake.submissions import UnreadableNotebook
from posenc_autograder.portal import auth, hub, queue, uploads
from posenc_autograder.portal import policy as rules
from posenc_autograder.portal.gate import UploadGate
from posenc_autograder.portal.grading_processes import GradingProcesses
from posenc_autograder.portal.lti.service import LtiTool
from posenc_autograder.portal.models import (
    Attempt,
    Extension,
    Policy,
    Session,
    Status,
    Student,
    open_database,
    utcnow,
    write_alone,
)
from posenc_autograder.portal.watch import StatusWatch
from posenc_autograder.portal.worker import (
    PORTAL_DOORS,
    Worker,
    as_recorded,
    counted_among,
    counted_in_record,
    portal_attempt,
)
from posenc_autograder.records import gradebook, portal_dates
from posenc_autograder.reports import late_policy
from posenc_autograder.results import NotebookResult

UPLOAD_CHECK_SECONDS = 60.0            # reading, checking and storing one upload, at most
LOCK_FILE = "portal.lock"              # in the course's work folder: one portal per course


def released_assignments(course: Course) -> list[str]:
    """Assignments whose every notebook is released (in exercises/, written by `make release`): a draft in
    solutions/ is neither listed nor open to uploads."""
    release = course.path(RELEASE_DIRECTORY)
    return [a for a in course.assignments()
            if course.notebooks(a) and all((release / a / f"{n}.ipynb").is_file() for n in course.notebooks(a))]


def database(course: Course, register: bool = True):
    """The portal's session factory on the gradebook's database. The gradebook's tables come first (nbgrader
    stamps its schema version only on an empty database), so every assignment is registered before."""
    if register:
        for assignment in released_assignments(course):
            gradebook.register(course, assignment)
    return open_database(course.gradebook_url)


# A student's pages' statements, built once (building one costs about as much as running it on SQLite).
OWN_ATTEMPT = select(Attempt).where(Attempt.id == bindparam("attempt_id"), Attempt.student_id == bindparam("student"))
_ASSIGNMENTS = bindparam("assignments", expanding=True)
SAVED_POLICIES = select(Policy).where(Policy.assignment.in_(_ASSIGNMENTS))
SAVED_EXTENSION = select(Extension).where(Extension.student_id == bindparam("student"),
                                          Extension.assignment == bindparam("assignment"))
SAVED_EXTENSIONS = select(Extension).where(Extension.student_id == bindparam("student"),
                                           Extension.assignment.in_(_ASSIGNMENTS))
# The assignment's saved rules and the student's saved extension (None where none is saved) in one statement, each
# joined to a row of nothing; an upload's decision reads how many of the student's uploads wait with them. An upload
# is decided twice (before its body is read, then with its file), each time on the rows as they are then.
_NOTHING = select(literal(1).label("one_row")).subquery("one_row")
SAVED_DATES = (select(Policy, Extension).select_from(_NOTHING)
               .outerjoin(Policy, Policy.assignment == bindparam("assignment"))
               .outerjoin(Extension, and_(Extension.student_id == bindparam("student"),
                                          Extension.assignment == bindparam("assignment"))))
SAVED_RULES = SAVED_DATES.add_columns(queue.WAITING_JOBS.scalar_subquery())
# A student's attempts as their pages and upload decisions count them, without each graded one's result (kilobytes
# an attempt, read again for every page and every refused upload; the feedback reads its own attempt's)
STUDENTS_ATTEMPTS = select(Attempt).where(Attempt.student_id == bindparam("student"),
                                          Attempt.assignment.in_(_ASSIGNMENTS)).order_by(Attempt.number) \
    .options(defer(Attempt.result_json, raiseload=True))


class PortalBusy(Exception):
    """Another portal already serves this course."""


class Portal:
    def __init__(self, course: Course, *, jobs: int, worker_options: dict | None = None, register: bool = True,
                 processes: bool = False, scheduler: str | None = None):
        """`processes`: grade in processes of their own (grading_processes.py; `make portal`), each executing on the
        Dask `scheduler` if given; else in this process's threads, through `worker_options`' execute (tests)."""
        self.course = course
        self.assignments = released_assignments(course)
        self.upload_bytes = settings.load(course).caps.notebook_bytes      # [caps] in course.toml
        self.gate = UploadGate(settings.load(course).sharing)               # [sharing]: waits after refused files
        self.sessions = database(course, register)
        self.worker = Worker(course, self.sessions, jobs, **(worker_options or {}))
        self.grading = GradingProcesses(self.worker, scheduler) if processes else None
        self.watch = StatusWatch()                                          # status requests held for a change
        self.queue_view = queue.QueueView()                                 # the order status requests read
        self.worker.status_changed = self.status_changed
        self.hub = hub.HubDoor(course, self.sessions) if hub.configured() else None    # the hub's door (hub.py)
        self.lti = LtiTool(course, self.sessions, self.assignments)             # the LMS's door (portal/lti/)
        self.worker.counting_stored = self.lti.outbox.changed                  # its score goes back to the LMS
        secret, self.secret_file = auth.instructor_secret(course)
        self.secret_hash = auth.digest(secret)
        self._student_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self._lock_handle: typing.TextIO | None = None
        self.now = utcnow              # replaced in tests to move the clock

    @property
    def zone(self) -> dt.tzinfo:
        """The course's zone ([course] time_zone), in which a student reads every time (settings.for_student)."""
        return settings.load(self.course).course.zone

    # --- lifecycle ----------------------------------------------------------------------------------

    def status_changed(self, attempt_id: int) -> None:
        """An attempt's new status is committed (queued, running, graded, back in the queue): the queue's order is
        due again and the requests held on it are answered."""
        self.queue_view.changed()
        self.watch.changed(attempt_id)

    def acquire_lock(self) -> None:
        """One portal per course (its restart recovery assumes so); PortalBusy when another holds the lock."""
        if self._lock_handle is not None:
            return
        self.course.work.mkdir(parents=True, exist_ok=True)
        handle = open(self.course.work / LOCK_FILE, "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise PortalBusy(f"another portal is running on {self.course.root}") from None
        self._lock_handle = handle

    def start(self) -> None:
        """Take the course's portal lock, recover the queue, start grading."""
        self.acquire_lock()
        (self.grading or self.worker).start()
        self.lti.start()

    def stop(self) -> None:
        (self.grading or self.worker).stop()
        self.lti.stop()
        if self._lock_handle is not None:
            self._lock_handle.close()
            self._lock_handle = None

    def notebook_for(self, assignment: str, file_name: str) -> str | None:
        names = self.course.notebooks(assignment)
        if len(names) == 1:
            return names[0]
        stem = file_name.rsplit("/", 1)[-1].removesuffix(".ipynb")
        return stem if stem in names else None

    # --- who is asking ------------------------------------------------------------------------------

    def session(self, cookie: str | None) -> Session | None:
        with self.sessions() as db:
            return auth.session_for(db, cookie)

    def sign_in(self, token: str, client: str, current: Session | None = None,
                confirmed: bool = False) -> tuple[str, str | None]:
        """('ok', cookie) | ('blocked', None) | ('invalid', None) | ('confirm', None): the link is valid but would
        replace the browser's session of another account (`current`), which needs the student's own click
        (`confirmed`: the confirmation form, CSRF-checked by the route)."""
        now, account = self.now(), auth.account_key(token)
        with self.sessions() as db:
            if auth.account_locked(db, account, now):
                return "blocked", None
            student = auth.student_for_token(db, token)
            if student is None:
                if auth.address_over(db, client, now):
                    return "blocked", None
                auth.record_failure(db, client, account, now)
                db.commit()
                return "invalid", None
            if current is not None and current.student_id != student.id and not confirmed:
                return "confirm", None
            write_alone(db)
            cookie = auth.open_session(db, student.id)
            db.commit()
            return "ok", cookie

    def instructor_sign_in(self, secret: object, client: str) -> tuple[str, str | None]:
        now = self.now()
        with self.sessions() as db:
            if auth.instructor_locked(db, client, now):
                return "blocked", None
            if not auth.instructor_ok(self.secret_hash, secret):
                auth.record_failure(db, client, auth.INSTRUCTOR, now)
                db.commit()
                return "invalid", None
            cookie = auth.open_session(db, None, instructor=True)
            db.commit()
            return "ok", cookie

    def sign_out(self, cookie: str | None) -> None:
        with self.sessions() as db:
            auth.close_session(db, cookie)
            db.commit()

    # --- a student's view ---------------------------------------------------------------------------

    def rules_for(self, db, student: str, assignment: str) -> tuple[Policy, Extension | None, list[Attempt], int]:
        """What an upload is decided by: dates_for's rules and extension, the student's attempts at the assignment,
        and how many of their uploads wait (every assignment's); two statements."""
        saved_policy, saved_extension, waiting = db.execute(SAVED_RULES, {"student": student,
                                                                         "assignment": assignment}).one()
        attempts = list(db.execute(STUDENTS_ATTEMPTS, {"student": student, "assignments": [assignment]}).scalars())
        return (self.worker.policy_of(saved_policy, assignment),
                self._extension_of(saved_extension, student, assignment), attempts, waiting)

    def dates_for(self, db, student: str, assignment: str) -> tuple[Policy, Extension | None]:
        """The assignment's rules and the student's extension: what a status or a feedback page shows depends on
        (rules_for lists the attempts too, for the uploads that count them); one statement."""
        saved_policy, saved_extension = db.execute(SAVED_DATES, {"student": student, "assignment": assignment}).one()
        return self.worker.policy_of(saved_policy, assignment), self._extension_of(saved_extension, student, assignment)

    def extension_for(self, db, student: str, assignment: str) -> Extension | None:
        """The student's extension as the late policy applies it (late_policy.Deadlines.deadline: the roster's, as an
        instructor grants one for any door, else the portal's), so the portal's deadline, upload decisions and status
        say the lateness grades.csv says. A roster's is a transient row, never saved."""
        saved = db.execute(SAVED_EXTENSION, {"student": student, "assignment": assignment}).scalar_one_or_none()
        return self._extension_of(saved, student, assignment)

    def _extension_of(self, saved: Extension | None, student: str, assignment: str) -> Extension | None:
        """extension_for from the student's saved row (None: none saved), read by the caller."""
        mine = portal_dates.PortalDates({}, {(student, assignment): portal_dates.aware(saved.deadline)}
                                        if saved is not None else {})
        return self._extension_in(late_policy.Deadlines(self.course, mine), student, assignment, saved)

    @staticmethod
    def _extension_in(deadlines: late_policy.Deadlines, student: str, assignment: str,
                      saved: Extension | None = None) -> Extension | None:
        """extension_for by a late policy the caller holds (`saved`: the student's saved row, if read)."""
        deadline, extended = deadlines.deadline(student, assignment)
        if not extended:
            return None
        naive = deadline.astimezone(dt.timezone.utc).replace(tzinfo=None)                # stored naive UTC
        return saved if saved is not None and saved.deadline == naive else \
            Extension(student_id=student, assignment=assignment, deadline=naive)

    def overview(self, student: str) -> list[dict]:
        with self.sessions() as db:
            return self._assignment_views(db, student, self.assignments)

    def assignment_view(self, student: str, assignment: str) -> dict:
        with self.sessions() as db:
            return self._assignment_views(db, student, [assignment])[0]

    def counting(self, student: str, assignment: str, attempts: list[Attempt], deadlines) -> Attempt | None:
        """The portal attempt that counts by the course's one rule over every door's attempts (None: none of the
        portal's, e.g. the student's LMS attempt counts): what the pages tag "counts"."""
        return portal_attempt(counted_in_record(self.course, student, assignment, deadlines), attempts)

    def grades(self, db, student: str | None = None, deadlines=None) -> dict[tuple[str, str], late_policy.Grade]:
        """(student, assignment) -> the grade as grades.csv and the LMS files state it (gradebook, manual grades and
        the late policy: late_policy.grade_of), for one student or the class; `deadlines`: the late policy the
        caller holds (for the same student or class)."""
        deadlines = deadlines or late_policy.Deadlines(self.course, connection=db, student=student)
        return {key: late_policy.grade_of(deadlines, *key, final)
                for key, final in gradebook.session_final_scores(db, student).items()}

    def _assignment_views(self, db, student: str, assignments: list[str]) -> list[dict]:
        """The student's view of each assignment, read together: one statement each for their rules, extensions,
        attempts, waiting uploads and grades, however many assignments (the home page shows them all)."""
        these = {"student": student, "assignments": assignments}
        saved_policies = {p.assignment: p for p in db.execute(SAVED_POLICIES, these).scalars()}
        saved_extensions = {e.assignment: e for e in db.execute(SAVED_EXTENSIONS, these).scalars()}
        attempts: dict[str, list[Attempt]] = {a: [] for a in assignments}
        for attempt in db.execute(STUDENTS_ATTEMPTS, these).scalars():
            attempts[attempt.assignment].append(attempt)
        deadlines = late_policy.Deadlines(self.course, connection=db, student=student, settled=True)   # one look
        waiting, grades = queue.waiting_jobs(db, student), self.grades(db, student, deadlines)
        return [self._assignment_view(student, a, self.worker.policy_of(saved_policies.get(a), a),
                                      self._extension_of(saved_extensions.get(a), student, a), attempts[a],
                                      deadlines, waiting, grades) for a in assignments]

    def _assignment_view(self, student: str, assignment: str, policy: Policy, extension: Extension | None,
                         attempts: list[Attempt], deadlines: late_policy.Deadlines, waiting: int,
                         grades: dict[tuple[str, str], late_policy.Grade]) -> dict:
        now = self.now()
        level = rules.feedback_level(policy, extension, now)
        record = deadlines.recorded(student, assignment)             # every door's, read once for the page
        counted = counted_among(self.course, record, deadlines)
        counting = portal_attempt(counted, attempts)
        return {"name": assignment, "policy": policy, "sharing": self.worker.sharing,
                "counted_rule": record_of_attempts.RULES[policy.counts],
                "deadline": rules.deadline(policy, extension),
                "extended": extension is not None, "on_time_until": rules.on_time_until(policy, extension),
                "closes_at": rules.closes_at(policy, extension),
                "decision": rules.may_upload(policy, extension, attempts, now, waiting, self.zone),
                "left": rules.attempts_left(policy, attempts, now), "attempts": attempts, "level": level,
                "counting": counting, "scores_shown": rules.scores_visible(policy, extension, now),
                "elsewhere": handed_in_elsewhere(record, counted,
                                                 lambda when: rules.past_deadline(policy, extension, when)),
                "grade": grades.get((student, assignment)),
                "points": {t.id: stated_points(t, counts_now(t, counting), grades.get((student, assignment)),
                                               deadlines) for t in attempts if t.score is not None}}

    def signed_in_attempt(self, cookie: str | None, attempt_id: int | None,
                          status: bool = False) -> tuple[Session | None, Attempt | None, dict | None]:
        """(the session of this cookie, its student's own attempt, the attempt's live status if `status`), read on one
        database session in one turn of the thread pool (an attempt's page, its feedback, its file); None for each
        that is not: no session or not a student's, not their attempt (`attempt_id` None: none)."""
        with self.sessions() as db:
            session = auth.session_for(db, cookie)
            if session is None or session.student_id is None or attempt_id is None:
                return session, None, None
            found = self._own_attempt(db, session.student_id, attempt_id)
            return session, found, self._status(db, found) if status and found is not None else None

    def attempt(self, student: str, attempt_id: int) -> Attempt | None:
        """The attempt, only if it is this student's own (anyone else's is simply not found)."""
        with self.sessions() as db:
            return self._own_attempt(db, student, attempt_id)

    @staticmethod
    def _own_attempt(db, student: str, attempt_id: int) -> Attempt | None:
        return db.execute(OWN_ATTEMPT, {"attempt_id": attempt_id, "student": student}).scalar_one_or_none()

    def status(self, attempt: Attempt) -> dict:
        """The attempt's live status. While it waits, nothing of the student's rules is read: the queue's order comes
        from the portal's view (memory), and only a graded attempt's score depends on the policy (a class polling
        in a rush must cost the portal no more than its grading)."""
        with self.sessions() as db:
            return self._status(db, attempt)

    def own_status(self, student: str, attempt_id: int) -> tuple[Attempt, dict] | None:
        """The student's own attempt and its live status, read on one database session (a status request's work
        after its hold, in one turn of the thread pool); None: not theirs, or no such attempt."""
        with self.sessions() as db:
            found = self._own_attempt(db, student, attempt_id)
            return None if found is None else (found, self._status(db, found))

    def signed_in_status(self, cookie: str | None, attempt_id: int,
                         checked: str | None = None) -> tuple[Attempt, dict] | None:
        """own_status for the student of this session cookie, the session checked on the same database session (a
        status stream reads it at each event, so a revoked link or a sign-out ends it); None: the session ended, or
        the attempt is not its student's. `checked`: the student whose session the request has just checked (a
        stream's first event), not read again."""
        with self.sessions() as db:
            session = auth.session_for(db, cookie) if checked is None else None
            student = checked if checked is not None else session.student_id if session is not None else None
            if student is None:
                return None
            found = self._own_attempt(db, student, attempt_id)
            return None if found is None else (found, self._status(db, found))

    def _status(self, db, attempt: Attempt) -> dict:
        ahead, wait = queue.waiting(db, attempt, self.worker.jobs, self.worker.usage_window, self.queue_view)
        graded = self._points_shown(db, attempt) if attempt.status == Status.GRADED else {}
        return {"status": attempt.status, "ahead": ahead, "wait_seconds": round(wait, 1),
                "poll_seconds": queue.poll_seconds(attempt.status, wait),
                "score": graded.get("score"), "max_score": attempt.max_score if "score" in graded else None,
                "counted": graded.get("counted"), "not_counted": graded.get("not_counted"),
                "counted_rule": graded.get("counted_rule"),
                "late": attempt.late, "full_run": attempt.full_run and attempt.status == Status.QUEUED}

    def _points_shown(self, db, attempt: Attempt) -> dict:
        """What a graded attempt's status may say by the policy now: the course's rule of which attempt counts, and,
        while the points are shown, the points stated ("score") and whether this attempt is the one that counts (the
        rule as "counted" or "not_counted", as its feedback page says it; when points are hidden, which attempt counts
        would tell them). One late policy: the student's dates read once, their record of attempts once (one look:
        settled), and only this assignment's grade computed (a status is asked for again and again)."""
        student, assignment = attempt.student_id, attempt.assignment
        deadlines = late_policy.Deadlines(self.course, connection=db, student=student, settled=True)
        extension = self._extension_in(deadlines, student, assignment)
        policy = self.worker.policy_for(db, assignment)
        rule = record_of_attempts.RULES[policy.counts]
        if not rules.scores_visible(policy, extension, self.now()):
            return {"counted_rule": rule}
        counts = self._counts_now(attempt, deadlines)
        final = gradebook.session_final_scores(db, student).get((student, assignment)) if counts else None
        grade = late_policy.grade_of(deadlines, student, assignment, final) if final is not None else None
        return {"score": stated_points(attempt, counts, grade, deadlines), "counted_rule": rule,
                "counted" if counts else "not_counted": rule}

    def _counts_now(self, attempt: Attempt, deadlines: late_policy.Deadlines) -> bool:
        """Stored as the one that counts, and still the one the record counts (a door's newer attempt, collected
        since, counts before the next store moves the gradebook to it). An attempt not stored as such does not
        count, whatever the record says (its grade is then not read: a graded status is read before its store)."""
        return attempt.promoted and counts_now(attempt, self.counting(attempt.student_id, attempt.assignment,
                                                                      [attempt], deadlines))

    def feedback(self, attempt: Attempt) -> tuple[NotebookResult, str, bool, bool, dict]:
        """(result, level, inputs shown, points shown, the rest of its page: reports.feedback.render's keywords) for a
        graded attempt, as the policy allows now. The attempt that counts, stored as such, gets the page make grade
        writes for it (the gradebook's points, manual grades included, the instructor's comments, the late policy, the
        counting rule); any other attempt its own points, less what the late policy deducts from it."""
        student, assignment = attempt.student_id, attempt.assignment
        with self.sessions() as db:
            policy, extension = self.dates_for(db, student, assignment)
            deadlines = late_policy.Deadlines(self.course, connection=db, student=student)
            page: dict = {"late": deadlines.lateness_at(student, assignment,
                                                        attempt.uploaded_at.replace(tzinfo=dt.timezone.utc))}
            if self._counts_now(attempt, deadlines):
                key = (student, assignment, attempt.notebook)
                page.update(scores=gradebook.session_cell_scores(db, *key),
                            comments=gradebook.session_comments(db, *key),
                            counted=record_of_attempts.RULES[policy.counts])
            else:
                page.update(not_counted=record_of_attempts.RULES[policy.counts])
        now = self.now()
        return (NotebookResult.from_json(json.loads(attempt.graded_json())),
                rules.feedback_level(policy, extension, now), rules.inputs_visible(policy, extension, now),
                rules.scores_visible(policy, extension, now), page)

    # --- uploads ------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _one_upload_at_a_time(self, student: str):
        with self._locks_lock:
            lock = self._student_locks.setdefault(student, threading.Lock())
        with lock:
            yield

    def upload_refusal(self, student: str, assignment: str) -> str | None:
        """Why the policy refuses this student's next upload now, asked before its body is read (None: it may
        come; accept_upload asks again with the file)."""
        with self.sessions() as db:
            policy, extension, attempts, waiting = self.rules_for(db, student, assignment)
            decision = rules.may_upload(policy, extension, attempts, self.now(), waiting, self.zone)
        return None if decision.allowed else decision.reason

    def accept_upload(self, student: str, assignment: str, file_name: str, data: bytes,
                      door: str = "portal") -> tuple[str, str | int]:
        """('queued' | 'again', attempt id) or ('refused' | 'unreadable' | 'busy', why). The file is on disk and
        the attempt committed before this returns; an upload whose checks outlast UPLOAD_CHECK_SECONDS (a machine
        far too loaded) is cut off before it becomes an attempt."""
        started = time.monotonic()
        notebook = self.notebook_for(assignment, file_name)
        if notebook is None:
            return "unreadable", (f"name the file after the notebook it is: one of "
                                  f"{', '.join(n + '.ipynb' for n in self.course.notebooks(assignment))}")
        digest = hashlib.sha256(data).hexdigest()
        with self._one_upload_at_a_time(student), self.sessions() as db:
            policy, extension, attempts, waiting = self.rules_for(db, student, assignment)
            now = self.now()
            same = same_upload(attempts, door, notebook, digest, now)
            if same is not None:
                return "again", same.id
            decision = rules.may_upload(policy, extension, attempts, now, waiting, self.zone)
            if not decision.allowed:
                return "refused", decision.reason
            try:
                _, stored = uploads.store(self.course, student, assignment, data)
            except UnreadableNotebook as exc:
                return "unreadable", str(exc)
            if time.monotonic() - started > UPLOAD_CHECK_SECONDS:
                stored.unlink(missing_ok=True)             # no attempt has this file (the same file is one attempt)
                return "busy", "checking the file took too long"
            write_alone(db)
            attempt = queue.enqueue(db, student, assignment, notebook, digest, len(data), decision.late, now, door,
                                    earlier=attempts)
            db.commit()
            attempt_id = attempt.id
        self.queue_view.changed()
        self.worker.notify()
        return "queued", attempt_id

    # --- the instructor -----------------------------------------------------------------------------

    def set_policy(self, assignment: str, values: dict) -> None:
        with self.sessions() as db:
            current = db.get(Policy, assignment)
            if current is None:
                current = self.worker.default_policy(assignment)
                db.add(current)
            for key, value in values.items():
                setattr(current, key, value)
            db.commit()

    def store_counting_all(self, assignment: str) -> None:
        with self.sessions() as db:
            students = list(db.execute(select(Attempt.student_id).where(Attempt.assignment == assignment)
                                       .distinct()).scalars())
        for student in students:
            self.worker.store_counting(student, assignment)

    def set_extension(self, student: str, assignment: str, deadline: dt.datetime | None) -> bool:
        with self.sessions() as db:
            if db.get(Student, student) is None:
                return False
            current = db.get(Extension, (student, assignment))
            if deadline is None:
                if current is not None:
                    db.delete(current)
            elif current is None:
                db.add(Extension(student_id=student, assignment=assignment, deadline=deadline))
            else:
                current.deadline = deadline
            db.commit()
            return True

    def revoke(self, student: str) -> bool:
        with self.sessions() as db:
            found = auth.revoke(db, student)
            db.commit()
            return found

    def new_link(self, student: str, name: str = "") -> str:
        with self.sessions() as db:
            token = auth.issue_token(db, student, name)
            db.commit()
            return token

    def progress(self) -> dict:
        """The class live: queue counts, and per student and assignment their attempts and the counting score."""
        with self.sessions() as db:
            students = list(db.execute(select(Student).order_by(Student.id)).scalars())
            policies = {a: self.worker.policy_for(db, a) for a in self.assignments}
            extensions = {(e.student_id, e.assignment): e.deadline for e in db.execute(select(Extension)).scalars()}
            by_key: dict[tuple[str, str], list[Attempt]] = {}
            for attempt in db.execute(select(Attempt).order_by(Attempt.number)).scalars():
                by_key.setdefault((attempt.student_id, attempt.assignment), []).append(attempt)
            counts = queue.counts(db)
            deadlines = late_policy.Deadlines(self.course, portal_dates.read(self.course, db))     # the class's, now
            grades = self.grades(db, deadlines=deadlines)
        rows = []
        for student in students:
            for assignment in self.assignments:
                attempts = by_key.get((student.id, assignment), [])
                counting = self.counting(student.id, assignment, attempts, deadlines)
                grade = grades.get((student.id, assignment))           # every door's, as grades.csv states it
                rows.append({"student": student.id, "name": student.name, "assignment": assignment,
                             "attempts": len(attempts), "latest": attempts[-1].status if attempts else "",
                             "score": grade.score if grade else counting.score if counting else None,
                             "max_score": grade.max_score if grade else counting.max_score if counting else None,
                             "late": bool(grade.late) if grade else bool(counting and counting.late),
                             "signed_in": student.token_hash is not None,
                             "extension": rules.stamp(extensions.get((student.id, assignment)), self.zone)})
        return {"counts": {s: counts.get(s, 0) for s in Status}, "rows": rows,
                "policies": policies}


def same_upload(attempts: list[Attempt], door: str, notebook: str, digest: str, now: dt.datetime) -> Attempt | None:
    """The student's portal attempt (`attempts`, in the order uploaded) this upload is, by the record's rule for every
    door (attempts.handed_in_again), or None: a new attempt."""
    if not attempts:
        return None
    recorded = [as_recorded(attempt) for attempt in attempts]
    new = record_of_attempts.Attempt(attempts[0].student_id, attempts[0].assignment, door, "",
                                     settings.stamp(now.replace(tzinfo=dt.timezone.utc)), {f"{notebook}.ipynb": digest})
    same = record_of_attempts.handed_in_again(recorded, new)
    return None if same is None else attempts[recorded.index(same)]


def handed_in_elsewhere(record: list[record_of_attempts.Attempt], counted: record_of_attempts.Attempt | None,
                        late: typing.Callable[[dt.datetime], bool]) -> list[dict]:
    """The student's attempts by the doors the portal does not grade (an LMS download, nbgrader's exchange, a file
    placed by hand), oldest first: the student's attempts too, though the portal's limits count its uploads only;
    each marked late by the rule that marks an upload here (`late`: of a naive UTC time)."""
    found = []
    for a in record:
        if a.door not in PORTAL_DOORS:
            at = a.time.astimezone(dt.timezone.utc).replace(tzinfo=None)
            found.append({"door": a.door_name, "source": a.source, "at": at, "counts": a is counted, "late": late(at)})
    return found


def counts_now(attempt: Attempt, counting: Attempt | None) -> bool:
    """The attempt is stored as the one that counts and is the one the record counts now (`counting`)."""
    return attempt.promoted and counting is attempt


def stated_points(attempt: Attempt, counts: bool, grade: late_policy.Grade | None,
                  deadlines: late_policy.Deadlines) -> float | None:
    """The points every page states for a graded attempt (its status, its row on the assignment page, its feedback
    page's header): for the attempt that counts (`counts`), its grade (late_policy.grade_of: the gradebook's points,
    manual grades included, after the late policy); for any other, its own points less what the late policy deducts
    from it. None: not graded."""
    if counts and grade is not None:
        return grade.score
    if attempt.score is None:
        return None
    late = deadlines.lateness_at(attempt.student_id, attempt.assignment,
                                 attempt.uploaded_at.replace(tzinfo=dt.timezone.utc))
    return late_policy.penalised(attempt.score, late.percent) if late is not None else attempt.score
