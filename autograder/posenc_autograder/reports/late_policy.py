"""The late policy applied: how late each submission was and what it costs, for every grades file, the
feedback page and the dashboard (one computation, so they agree).

The policy is per assignment in autograder/course.toml ([late.<assignment>]). The deadline that applies to a
student is, first, an extension: the roster's `extension` column (ISO 8601; without offset, in [course] time_zone)
or one granted in the portal; else the assignment's deadline from course.toml, else the portal's. The submission
time is that of the attempt that counts, from the record of attempts (intake/attempts.py: the one in submitted/),
else the roster's `submitted_at`; every time is read by settings.parse_time, in the course's zone when it states
none. A time that cannot be read is never taken as "on time": it is listed in `problems` for the run report.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import typing

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.intake import attempts, roster
from posenc_autograder.records import portal_dates


@dataclasses.dataclass(frozen=True)
class Lateness:
    percent: float                 # of the score deducted
    submitted: dt.datetime
    deadline: dt.datetime          # the one that applied
    extended: bool                 # an extension's
    zone: dt.tzinfo = dt.timezone.utc    # the course's, in which the student reads both times

    def late_by(self) -> str:
        hours = (self.submitted - self.deadline).total_seconds() / 3600
        return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"

    def sentence(self, score: float, max_score: float) -> str:
        """What a student reads on the feedback page: both times in the course's zone, as every page states a time
        (settings.for_student), so they compare at a glance and read as the portal's pages read them."""
        whose = "your extended deadline" if self.extended else "the deadline"
        return (f"Submitted {settings.for_student(self.submitted, self.zone)}, {self.late_by()} after {whose} "
                f"({settings.for_student(self.deadline, self.zone)}): the course's late policy deducts "
                f"{self.percent:g}% of the score, so it counts as {penalised(score, self.percent):g} / {max_score:g}.")


def penalised(score: float, percent: float) -> float:
    return round(score * (1 - percent / 100), 2)


class Deadlines:
    """Everything the policy needs for a class, each read once and only when an assignment has a penalty:
    the roster and the portal's dates."""

    def __init__(self, course: Course, portal: portal_dates.PortalDates | None = None, *,
                 connection: typing.Any = None, student: str | None = None, settled: bool = False,
                 in_submitted: typing.Mapping[tuple[str, str], dict[str, str]] | None = None):
        """`portal`: the portal's dates when the caller holds them already; else read when first needed, through
        `connection` (records.portal_dates.read: the portal's own open session, no engine made) and only `student`'s
        extensions when the policy is applied to them alone (their page, their store). `settled`: submitted/ is not
        changed while this object is used (the class files, written from one look): each folder is read once.
        `in_submitted`: what folders of submitted/ hold (attempts.in_submitted's), as the caller hashed them since
        (make grade's round): those are not read again."""
        self.course = course
        self.settings = settings.load(course)
        self._submitted: dict[tuple[str, str], dt.datetime | None] | None = {} if settled else None
        self._recorded: dict[tuple[str, str], list[attempts.Attempt]] | None = {} if settled else None
        self._connection, self._student = connection, student
        self._in_submitted = in_submitted or {}
        if portal is not None:
            self.__dict__["portal"] = portal

    @functools.cached_property
    def people(self) -> roster.Rows:
        return roster.rows(self.course)                 # read-only, parsed once per change of the file

    @functools.cached_property
    def portal(self) -> portal_dates.PortalDates:
        if self._connection is None:
            return portal_dates.read(self.course)
        return portal_dates.read(self.course, self._connection, self._student)

    @functools.cached_property
    def problems(self) -> list[str]:
        """Times that could not be read (each named with where it is), for the run report: never "on time"."""
        return []

    def _time(self, value, where: str) -> dt.datetime | None:
        try:
            return settings.parse_time(value, where, self.settings.course.zone)
        except settings.TimeError as exc:
            if str(exc) not in self.problems:
                self.problems.append(str(exc).removeprefix("error: "))
            return None

    def deadline(self, student: str, assignment: str) -> tuple[dt.datetime | None, bool]:
        """(the deadline that applies to the student, whether it is an extension's)."""
        person = self.people.get((student, assignment), {})
        extension = (self._time(person.get("extension", ""), f"{roster.ROSTER_FILE} extension of {student}")
                     or self.portal.extensions.get((student, assignment)))
        policy = self.settings.late_policy(assignment)
        return extension or policy.deadline or self.portal.deadlines.get(assignment), extension is not None

    def submitted(self, student: str, assignment: str) -> dt.datetime | None:
        """When the attempt that counts (the one in submitted/) was handed in: the record's time, else the
        roster's."""
        if self._submitted is not None:
            if (student, assignment) not in self._submitted:
                self._submitted[student, assignment] = self._submitted_now(student, assignment)
            return self._submitted[student, assignment]
        return self._submitted_now(student, assignment)

    def _submitted_now(self, student: str, assignment: str) -> dt.datetime | None:
        here = self._in_submitted.get((student, assignment))
        if here is None:
            here = attempts.in_submitted(self.course, student, assignment)
        found = attempts.holding(self.recorded(student, assignment), here,
                                 self.settings.course.counted_attempt, self.attempt_percent) if here else None
        if found is not None:
            return found.time
        person = self.people.get((student, assignment), {})
        return self._time(person.get("submitted_at", ""), f"{roster.ROSTER_FILE} submitted_at of {student}")

    def recorded(self, student: str, assignment: str) -> list[attempts.Attempt]:
        """The student's record of attempts (intake/attempts.py), read once per folder when settled."""
        if self._recorded is None:
            return attempts.of(self.course, student, assignment)
        if (student, assignment) not in self._recorded:
            self._recorded[student, assignment] = attempts.of(self.course, student, assignment)
        return self._recorded[student, assignment]

    def submitted_stamp(self, student: str, assignment: str) -> str:
        """The submission time as every file a program reads states it (grades.csv, the LMS files): the record's,
        with its zone; "" when unknown."""
        when = self.submitted(student, assignment)
        return settings.stamp(when) if when else ""

    def submitted_read(self, student: str, assignment: str) -> str:
        """The submission time as a page states it to a person (the dashboard): in the course's zone, named, as the
        deadline is written and as the student's own pages give it (settings.for_student); "" when unknown."""
        when = self.submitted(student, assignment)
        return settings.for_student(when, self.settings.course.zone) if when else ""

    def late_stated(self, student: str, assignment: str) -> str:
        """yes/no by this policy when a deadline applies; else what the LMS said of the attempt (the roster's)."""
        late = self.is_late(student, assignment)
        return self.people.get((student, assignment), {}).get("late", "") if late is None else "yes" if late else "no"

    def percent_at(self, student: str, assignment: str, when: dt.datetime | None) -> float:
        """What the late policy deducts from an attempt handed in at `when` (the one computation)."""
        deadline, _ = self.deadline(student, assignment)
        return self.settings.late_policy(assignment).percent_off(when, deadline)

    def is_late(self, student: str, assignment: str) -> bool | None:
        """Past the deadline and its grace (None: no deadline or no time), whatever the penalty."""
        deadline, _ = self.deadline(student, assignment)
        submitted = self.submitted(student, assignment)
        if deadline is None or submitted is None:
            return None
        grace = dt.timedelta(minutes=self.settings.late_policy(assignment).grace_minutes)
        return submitted > deadline + grace

    def attempt_percent(self, attempt: attempts.Attempt) -> float:
        """The deduction for one recorded attempt (attempts.choose's late_percent)."""
        return self.percent_at(attempt.student, attempt.assignment, attempt.time)

    def lateness(self, student: str, assignment: str) -> Lateness | None:
        """The attempt that counts: None when on time, without a submission time, or without a deadline or penalty."""
        if not self.settings.late_policy(assignment).penalty:
            return None
        return self.lateness_at(student, assignment, self.submitted(student, assignment))

    def lateness_at(self, student: str, assignment: str, submitted: dt.datetime | None) -> Lateness | None:
        """lateness() of an attempt handed in at `submitted` (a portal attempt, whether or not it counts)."""
        policy = self.settings.late_policy(assignment)
        if not policy.penalty:
            return None
        deadline, extended = self.deadline(student, assignment)
        percent = policy.percent_off(submitted, deadline)
        if percent <= 0 or submitted is None or deadline is None:
            return None
        return Lateness(percent, submitted, deadline, extended, self.settings.course.zone)

    def class_lateness(self, keys) -> dict[tuple[str, str], Lateness]:
        return {key: found for key in keys if (found := self.lateness(*key))}


@dataclasses.dataclass(frozen=True)
class Grade:
    """One student's grade of one assignment as every page and file states it: the gradebook's final score (manual
    grades included) after the late policy."""
    score: float
    max_score: float
    before_late: float
    percent: float                 # deducted by the late policy
    late: bool | None              # past the deadline and its grace (None: no deadline or no time)


def grade_of(deadlines: Deadlines, student: str, assignment: str, final: tuple[float, float]) -> Grade:
    """The one computation of a grade from the gradebook's (score, max score): grades.csv, the LMS files, the
    feedback page and the portal all state this."""
    lateness = deadlines.lateness(student, assignment)
    percent = lateness.percent if lateness else 0.0
    return Grade(penalised(final[0], percent), final[1], final[0], percent, deadlines.is_late(student, assignment))


def door_findings(course: Course, deadlines: Deadlines) -> list[attempts.Finding]:
    """Students whose attempts from two doors disagree (a later one scored lower than the one that counts, or the
    one that counts replaced better work), by [course] counted_attempt and this late policy."""
    rule, found = deadlines.settings.course.counted_attempt, []
    for recorded in attempts.everyone(course).values():
        found += attempts.findings(recorded, attempts.choose(recorded, rule, deadlines.attempt_percent),
                                   deadlines.settings.course.zone)
    return found


def apply(finals: dict, lateness: dict) -> dict:
    """(student, assignment) -> (score after the late policy, max score)."""
    return {key: (penalised(score, lateness[key].percent) if key in lateness else score, maximum)
            for key, (score, maximum) in finals.items()}
