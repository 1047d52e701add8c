"""The late policy applied: how late each submission was and what it costs, for every grades file, the
feedback page and the dashboard (one computation, so they agree).

The policy is per assignment in autograder/course.toml ([late.<assignment>]). The deadline that applies to a
student is, first, an extension: the roster's `extension` column (an ISO 8601 time with its offset) or one
granted in the portal; else the assignment's deadline from course.toml, else the portal's. The submission time is
the roster's `submitted_at` (the LMS's, or the portal's upload time).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.intake import roster
from posenc_autograder.records import portal_dates


@dataclasses.dataclass(frozen=True)
class Lateness:
    percent: float                 # of the score deducted
    submitted: dt.datetime
    deadline: dt.datetime          # the one that applied
    extended: bool                 # an extension's

    def late_by(self) -> str:
        hours = (self.submitted - self.deadline).total_seconds() / 3600
        return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} hours"

    def sentence(self, score: float, max_score: float) -> str:
        """What a student reads on the feedback page."""
        whose = "your extended deadline" if self.extended else "the deadline"
        return (f"Submitted {self.submitted.isoformat(timespec='minutes')}, {self.late_by()} after {whose} "
                f"({self.deadline.isoformat(timespec='minutes')}): the course's late policy deducts "
                f"{self.percent:g}% of the score, so it counts as {penalised(score, self.percent):g} / {max_score:g}.")


def penalised(score: float, percent: float) -> float:
    return round(score * (1 - percent / 100), 2)


class Deadlines:
    """Everything the policy needs for a class, each read once and only when an assignment has a penalty:
    the roster and the portal's dates."""

    def __init__(self, course: Course):
        self.course = course
        self.settings = settings.load(course)

    @functools.cached_property
    def people(self) -> dict:
        return roster.load(self.course)

    @functools.cached_property
    def portal_deadlines(self) -> dict:
        return portal_dates.deadlines(self.course)

    @functools.cached_property
    def portal_extensions(self) -> dict:
        return portal_dates.extensions(self.course)

    def lateness(self, student: str, assignment: str) -> Lateness | None:
        """None when on time, without a submission time, or without a deadline or penalty."""
        policy = self.settings.late_policy(assignment)
        if not policy.penalty:
            return None
        person = self.people.get((student, assignment), {})
        try:
            submitted = settings.parse_time(person.get("submitted_at", ""), f"{roster.ROSTER_FILE} submitted_at")
            extension = settings.parse_time(person.get("extension", ""), f"{roster.ROSTER_FILE} extension of "
                                                                         f"{student}")
        except settings.SettingsError:
            return None                   # an unreadable time in the roster: no deduction rather than a wrong one
        extension = extension or self.portal_extensions.get((student, assignment))
        deadline = extension or policy.deadline or self.portal_deadlines.get(assignment)
        percent = policy.percent_off(submitted, deadline)
        return Lateness(percent, submitted, deadline, extension is not None) if percent > 0 else None

    def class_lateness(self, keys) -> dict[tuple[str, str], Lateness]:
        return {key: found for key in keys if (found := self.lateness(*key))}


def apply(finals: dict, lateness: dict) -> dict:
    """(student, assignment) -> (score after the late policy, max score)."""
    return {key: (penalised(score, lateness[key].percent) if key in lateness else score, maximum)
            for key, (score, maximum) in finals.items()}
