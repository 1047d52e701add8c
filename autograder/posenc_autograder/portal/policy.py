"""The instructor's rules, decided on the server: when uploads open and close, what is late, how many attempts
are left, which attempt counts, and how much feedback shows before the deadline. Pure functions of the policy,
the student's extension, their attempts and the time."""
from __future__ import annotations

import dataclasses
import datetime as dt

from posenc_autograder import settings
from posenc_autograder.portal.models import POLICY_DEFAULTS, Attempt, Extension, Policy, Status
from posenc_autograder.settings import PortalDefaults

DAY = dt.timedelta(days=1)


def defaults(assignment: str, portal: PortalDefaults = PortalDefaults()) -> Policy:
    """No rules saved yet: open now, no deadline, and the course's [portal] settings (rate and queue limits,
    which attempt counts, feedback before the deadline)."""
    return Policy(assignment=assignment, **{**POLICY_DEFAULTS, **dataclasses.asdict(portal)})


def set_in_course_toml(course_settings, assignment: str) -> frozenset[str]:
    """The rules of the assignment's policy that [late.<assignment>] in course.toml states, which override the
    portal's own (the instructor's form shows them, to be changed there): its grace, and its deadline when given."""
    if assignment not in course_settings.late:
        return frozenset()
    return frozenset({"grace_minutes"} | ({"deadline"} if course_settings.late_policy(assignment).deadline else set()))


def with_course_deadline(policy: Policy, course_settings, assignment: str) -> Policy:
    """The policy as course.toml states it too (a copy, never the saved row): which attempt counts ([course]
    counted_attempt, the rule of every door), and the deadline and grace where [late.<assignment>] states them (the
    late policy reads the same: one deadline everywhere)."""
    values = {column.key: getattr(policy, column.key) for column in Policy.__table__.columns}
    values["counts"] = course_settings.course.counted_attempt
    stated, late = set_in_course_toml(course_settings, assignment), course_settings.late_policy(assignment)
    if "grace_minutes" in stated:
        values["grace_minutes"] = int(late.grace_minutes)
    if "deadline" in stated and late.deadline is not None:
        values["deadline"] = late.deadline.astimezone(dt.timezone.utc).replace(tzinfo=None)   # stored naive UTC
    return Policy(**values)


def deadline(policy: Policy, extension: Extension | None) -> dt.datetime | None:
    """The student's own deadline: the extension replaces the class's."""
    return extension.deadline if extension is not None else policy.deadline


def on_time_until(policy: Policy, extension: Extension | None) -> dt.datetime | None:
    due = deadline(policy, extension)
    return None if due is None else due + dt.timedelta(minutes=policy.grace_minutes or 0)


def closes_at(policy: Policy, extension: Extension | None) -> dt.datetime | None:
    """When uploads stop being accepted at all (late ones included)."""
    until = on_time_until(policy, extension)
    return None if until is None else until + dt.timedelta(days=policy.late_days or 0)


def past_deadline(policy: Policy, extension: Extension | None, now: dt.datetime) -> bool:
    until = on_time_until(policy, extension)
    return until is not None and now > until


@dataclasses.dataclass
class Decision:
    allowed: bool
    late: bool = False
    reason: str = ""               # for the student, when refused


def counted(attempts: list[Attempt]) -> list[Attempt]:
    """Attempts that use up the allowance: every accepted upload except those the grader itself failed on."""
    return [a for a in attempts if a.status != Status.ERROR]


def attempts_left(policy: Policy, attempts: list[Attempt], now: dt.datetime) -> int | None:
    """How many more uploads are allowed now (None: no limit)."""
    used = counted(attempts)
    limits = []
    if policy.max_attempts:
        limits.append(policy.max_attempts - len(used))
    if policy.max_per_day:
        limits.append(policy.max_per_day - sum(now - a.uploaded_at < DAY for a in used))
    return max(min(limits), 0) if limits else None


def may_upload(policy: Policy, extension: Extension | None, attempts: list[Attempt], now: dt.datetime,
               waiting: int = 0, zone: dt.tzinfo = dt.timezone.utc) -> Decision:
    """May this student upload one more attempt now (with `waiting` of their uploads still queued or running, any
    assignment), and would it be late? A refusal's times are in `zone`, the course's."""
    if policy.opens_at is not None and now < policy.opens_at:
        return Decision(False, reason=f"uploads open at {stamp(policy.opens_at, zone)}")
    closing = closes_at(policy, extension)
    if closing is not None and now > closing:
        return Decision(False, reason=f"the deadline ({stamp(deadline(policy, extension), zone)}) has passed"
                                      + (" and late uploads are closed" if policy.late_days else ""))
    used = counted(attempts)
    if policy.max_attempts and len(used) >= policy.max_attempts:
        return Decision(False, reason=f"you have used all {policy.max_attempts} attempts")
    if policy.max_per_day and sum(now - a.uploaded_at < DAY for a in used) >= policy.max_per_day:
        first = min(a.uploaded_at for a in used if now - a.uploaded_at < DAY)
        return Decision(False, reason=f"you have used the {policy.max_per_day} attempts allowed in 24 hours; "
                                      f"the next one is allowed at {stamp(first + DAY, zone)}")
    if policy.min_seconds_between and used:
        wait_until = max(a.uploaded_at for a in used) + dt.timedelta(seconds=policy.min_seconds_between)
        if now < wait_until:
            return Decision(False, reason=f"attempts must be {policy.min_seconds_between} s apart; "
                                          f"the next one is allowed at {stamp(wait_until, zone)}")
    if policy.max_queued and waiting >= policy.max_queued:
        return Decision(False, reason=f"you already have {waiting} upload{'s' * (waiting != 1)} waiting to be "
                                      f"graded; upload again when {'one of them is' if waiting > 1 else 'it is'} "
                                      f"graded")
    return Decision(True, late=past_deadline(policy, extension, now))


def feedback_level(policy: Policy, extension: Extension | None, now: dt.datetime) -> str:
    """How much of a graded attempt's feedback the student sees now: everything once their deadline is past."""
    return "full" if past_deadline(policy, extension, now) else policy.feedback_before


def scores_visible(policy: Policy, extension: Extension | None, now: dt.datetime) -> bool:
    """May the student see points now (scores, per-test points, case counts, and which attempt counts, since
    that is an ordering by score)? After the deadline, with full feedback, or with pass or fail per test when
    the instructor shows points with it."""
    level = feedback_level(policy, extension, now)
    return level == "full" or (level == "tests" and bool(policy.points_before_deadline))


def inputs_visible(policy: Policy, extension: Extension | None, now: dt.datetime) -> bool:
    """A failed test's own inputs: after the deadline, or before it when the instructor allows."""
    return past_deadline(policy, extension, now) or bool(policy.inputs_before_deadline)


def stamp(when: dt.datetime | None, zone: dt.tzinfo = dt.timezone.utc) -> str:
    """`when` (naive UTC, as stored) as a student reads it: settings.for_student, in the course's `zone`."""
    return "" if when is None else settings.for_student(when, zone)
