"""Scores back to the LMS (Assignment and Grade Services), through an outbox that loses nothing.

For every student who launched an assignment's link with a line item, the score that counts (the gradebook's final
score, manual grades included, after the course's late policy: the number grades.csv and the LMS files state) is
compared with the last one owed to the platform; a new number becomes a pending row of the outbox. A sender posts
pending rows to the line item's /scores (a service token from the platform's token URL: client_credentials with a
JWT assertion signed by the tool's key, RFC 7523; pylti1p3's ServiceConnector), marks them sent, or on a failure
keeps them with the error and tries again later (the wait doubles, up to an hour). The instructor's page lists what
is not sent yet and why. A newer score for the same line item supersedes one still pending.

The comparison runs after the portal's worker stores a counting attempt, and every SYNC_SECONDS, so that what
changes outside the portal (`make grade`'s regrade, a manual grade and `make feedback`, a late policy or extension)
reaches the LMS too.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import threading
import time

import requests
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from sqlalchemy import select, update

from posenc_autograder.course import Course
from posenc_autograder.portal.lti.models import LtiLineItem, LtiScore
from posenc_autograder.portal.lti.registration import ToolServiceConnector
from posenc_autograder.portal.models import utcnow
from posenc_autograder.records import gradebook
from posenc_autograder.reports import late_policy

SYNC_SECONDS = 30.0                  # how often scores changed outside the portal are looked for
FIRST_RETRY_SECONDS = 5.0            # after a failed send; doubled each time
LONGEST_RETRY_SECONDS = 3600.0
SEND_TIMEOUT = 20.0
log = logging.getLogger(__name__)


def counted_scores(course: Course, assignment: str) -> dict[str, tuple[float, float]]:
    """student -> (score, max score) that counts for the assignment: the gradebook's final score (manual grades
    override automatic ones), less the late policy's deduction (reports.late_policy, as every grades file)."""
    with gradebook.open_gradebook(course) as gb:
        finals = gradebook.class_final_scores(gb, assignment)
    deadlines = late_policy.Deadlines(course)
    counted = {}
    for student, (score, max_score) in finals.items():
        late = deadlines.lateness(student, assignment)
        counted[student] = (late_policy.penalised(score, late.percent) if late else score, max_score)
    return counted


def retry_after(tries: int) -> float:
    return min(FIRST_RETRY_SECONDS * 2 ** max(tries - 1, 0), LONGEST_RETRY_SECONDS)


def scores_url(line_item: str) -> str:
    """The line item's scores endpoint: /scores after its path, before any query (Moodle's `?type_id=1`)."""
    return AssignmentsGradesService._add_url_path_ending(line_item, "scores")


@dataclasses.dataclass
class Sent:
    sent: int = 0
    failed: int = 0


class Outbox:
    """The outbox of one portal: `sync` owes new scores, `send_due` sends, `start` runs both in a thread."""

    def __init__(self, course: Course, sessions, tool_config_of, clock=utcnow):
        self.course, self.sessions, self.tool_config_of, self.now = course, sessions, tool_config_of, clock
        self.wake, self.stopping = threading.Event(), threading.Event()
        self.thread: threading.Thread | None = None
        self.http = requests.Session()

    # --- owing ----------------------------------------------------------------------------------------

    def sync(self, only: tuple[str, str] | None = None) -> int:
        """Owe the platform every counting score that differs from the last one owed (one student and assignment,
        or all); how many new rows."""
        with self.sessions() as db:
            query = select(LtiLineItem)
            if only is not None:
                query = query.where(LtiLineItem.student_id == only[0], LtiLineItem.assignment == only[1])
            items = list(db.execute(query).scalars())
            if not items:
                return 0
            counted = {a: self._counted(a) for a in {item.assignment for item in items}}
            owed = 0
            for item in items:
                score = counted[item.assignment].get(item.student_id)
                if score is None:
                    continue
                last = db.execute(select(LtiScore).where(LtiScore.line_item_id == item.id,
                                                         LtiScore.state != "superseded")
                                  .order_by(LtiScore.id.desc()).limit(1)).scalar_one_or_none()
                if last is not None and (last.score_given, last.score_maximum) == score:
                    continue
                now = self.now()
                db.execute(update(LtiScore).where(LtiScore.line_item_id == item.id, LtiScore.state == "pending")
                           .values(state="superseded"))
                db.add(LtiScore(line_item_id=item.id, score_given=score[0], score_maximum=score[1], timestamp=now,
                                next_try=now, state="pending"))
                owed += 1
            db.commit()
        if owed:
            self.wake.set()
        return owed

    def _counted(self, assignment: str) -> dict[str, tuple[float, float]]:
        try:
            return counted_scores(self.course, assignment)
        except Exception:  # noqa: BLE001 - the gradebook busy or absent: nothing owed now, the next sync retries
            log.exception("reading the counted scores of %s failed", assignment)
            return {}

    # --- sending --------------------------------------------------------------------------------------

    def send_due(self) -> Sent:
        """Send every pending score whose time has come; failures stay pending, with their error and next try."""
        outcome, config = Sent(), self.tool_config_of()
        with self.sessions() as db:
            due = db.execute(select(LtiScore, LtiLineItem).join(LtiLineItem, LtiLineItem.id == LtiScore.line_item_id)
                             .where(LtiScore.state == "pending", LtiScore.next_try <= self.now())
                             .order_by(LtiScore.id)).all()
        connectors: dict[tuple[str, str], ToolServiceConnector] = {}
        for score, item in due:
            try:
                connector = connectors.get((item.issuer, item.client_id))
                if connector is None:
                    connector = connectors[item.issuer, item.client_id] = self._connector(config, item)
                self._post(connector, score, item)
            except Exception as exc:  # noqa: BLE001 - every failure is kept on its row and retried
                self._failed(score.id, exc)
                outcome.failed += 1
                continue
            with self.sessions() as db:
                db.execute(update(LtiScore).where(LtiScore.id == score.id, LtiScore.state == "pending")
                           .values(state="sent", sent_at=self.now(), tries=LtiScore.tries + 1, last_error=""))
                db.commit()
            outcome.sent += 1
        return outcome

    def _connector(self, config, item: LtiLineItem) -> ToolServiceConnector:
        if config is None:
            raise LtiException("the tool is not registered with any platform (autograder/lti.json is missing)")
        try:
            registration = config.find_registration_by_params(item.issuer, item.client_id)
        except Exception as exc:  # noqa: BLE001 - pylti1p3 raises plain Exception for an unknown platform
            raise LtiException(f"{item.issuer} (client {item.client_id}) is no longer registered") from exc
        session = requests.Session()
        session.request = _with_timeout(session.request)  # type: ignore[method-assign]  # requests: no default timeout
        return ToolServiceConnector(registration, session)

    def _post(self, connector: ToolServiceConnector, score: LtiScore, item: LtiLineItem) -> None:
        grade = (Grade().set_score_given(score.score_given).set_score_maximum(score.score_maximum)
                 .set_activity_progress("Completed").set_grading_progress("FullyGraded").set_user_id(item.sub)
                 .set_timestamp(score.timestamp.replace(tzinfo=dt.timezone.utc).isoformat(timespec="milliseconds")))
        line_item = item.line_item or self._found_line_item(connector, score, item)
        # the scopes the platform granted, kept as text: pylti1p3 types them as its four literals
        service = AssignmentsGradesService(connector, {"scope": item.scopes.split(),  # type: ignore[typeddict-item]
                                                       "lineitem": line_item})
        service.put_grade(grade)

    def _found_line_item(self, connector: ToolServiceConnector, score: LtiScore, item: LtiLineItem) -> str:
        """The assignment's line item in the context's container (tagged with the assignment's name), made there if
        there is none; kept for the next score."""
        service = AssignmentsGradesService(connector, {"scope": item.scopes.split(),  # type: ignore[typeddict-item]
                                                       "lineitems": item.line_items})
        found = service.find_or_create_lineitem(LineItem().set_tag(item.assignment).set_label(item.assignment)
                                                .set_score_maximum(score.score_maximum))
        url = found.get_id()
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise LtiException("the platform gave the new line item no address")
        with self.sessions() as db:
            db.execute(update(LtiLineItem).where(LtiLineItem.id == item.id).values(line_item=url[:2000]))
            db.commit()
        return url

    def _failed(self, score_id: int, exc: Exception) -> None:
        reason = describe(exc)
        with self.sessions() as db:
            row = db.get(LtiScore, score_id)
            tries = row.tries + 1
            db.execute(update(LtiScore).where(LtiScore.id == score_id).values(
                tries=tries, last_error=reason[:2000],
                next_try=self.now() + dt.timedelta(seconds=retry_after(tries))))
            db.commit()
        log.warning("score %s not sent (try %s): %s", score_id, tries, reason)

    # --- the instructor's view ------------------------------------------------------------------------

    def unsent(self) -> list[dict]:
        """Scores not yet taken by their platform, oldest first, with the last error and the next try."""
        with self.sessions() as db:
            rows = db.execute(select(LtiScore, LtiLineItem).join(LtiLineItem, LtiLineItem.id == LtiScore.line_item_id)
                              .where(LtiScore.state == "pending").order_by(LtiScore.id)).all()
        return [{"student": item.student_id, "assignment": item.assignment, "score": score.score_given,
                 "max_score": score.score_maximum, "tries": score.tries, "error": score.last_error,
                 "next_try": score.next_try} for score, item in rows]

    # --- the thread -----------------------------------------------------------------------------------

    def changed(self, student: str, assignment: str) -> None:
        """The worker stored a new counting attempt: owe its score now (called from a grading thread)."""
        try:
            self.sync((student, assignment))
        except Exception:  # noqa: BLE001 - the periodic sync owes it later
            log.exception("owing the score of %s for %s failed", student, assignment)

    def start(self) -> None:
        self.thread = threading.Thread(target=self._loop, name="portal-lti-outbox", daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(30)

    def _loop(self) -> None:
        last_sync = 0.0
        clock = threading.Event()
        while not self.stopping.is_set():
            try:
                if time.monotonic() - last_sync >= SYNC_SECONDS:
                    self.sync()
                    last_sync = time.monotonic()
                self.wake.clear()
                self.send_due()
            except Exception:  # noqa: BLE001 - the database away, say: go on after a pause
                log.exception("the LTI outbox failed; going on")
                clock.wait(1.0)
            self.wake.wait(min(SYNC_SECONDS, self._next_due_seconds()))

    def _next_due_seconds(self) -> float:
        with self.sessions() as db:
            due = db.execute(select(LtiScore.next_try).where(LtiScore.state == "pending")
                             .order_by(LtiScore.next_try).limit(1)).scalar_one_or_none()
        return SYNC_SECONDS if due is None else max((due - self.now()).total_seconds(), 0.05)


def describe(exc: Exception) -> str:
    """A failure as the instructor reads it: the platform's answer (status and the start of its body) or the error."""
    response = getattr(exc, "response", None)
    if response is not None and hasattr(response, "status_code"):
        return f"the platform answered {response.status_code}: {response.text[:300]}"
    if isinstance(exc, requests.RequestException):
        return f"the platform could not be reached ({type(exc).__name__})"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def _with_timeout(request):
    def timed(method, url, **kwargs):
        kwargs.setdefault("timeout", SEND_TIMEOUT)
        return request(method, url, **kwargs)
    return timed
