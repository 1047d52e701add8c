"""What the grade files would leave out, said to the instructor with the fix (`make grade`, `make feedback`).

The LMS files are written from the roster (autograder/roster.csv, by `make collect`) joined with the graded
submissions: a student on one side only is missing from them. So is an assignment whose LMS needs a setting
autograder/lms.toml does not give (Canvas: the assignment's id). An unknown --student is caught before grading.
"""
from __future__ import annotations

import dataclasses
import difflib
import enum

from posenc_autograder.course import Course
from posenc_autograder.intake import lms, roster
from posenc_autograder.reports import lms_exports


class Gap(enum.Enum):
    NO_SUBMISSION = "no_submission"        # a roster row, no submission folder
    NO_ROSTER_ROW = "no_roster_row"        # a graded submission the roster does not list
    NO_LMS_SETTING = "no_lms_setting"      # lms.toml lacks what the LMS's grade files need for an assignment
    NO_LMS_ID = "no_lms_id"                # only a door without LMS ids (exchange, portal), in an LMS-graded class
    UNKNOWN_STUDENT = "unknown_student"    # --student names nobody under submitted/


@dataclasses.dataclass(frozen=True)
class Finding:
    gap: Gap
    student: str = ""
    assignment: str = ""
    closest: str = ""          # the likely intended id, when one is close
    lms: str = ""              # the LMS whose setting is missing

    def text(self, course: Course) -> str:
        roster_file = roster.ROSTER_FILE
        maybe = f" (did you mean '{self.closest}'?)" if self.closest else ""
        if self.gap is Gap.NO_SUBMISSION:
            return (f"{roster_file} lists '{self.student}' for {self.assignment}, but nothing of theirs is in "
                    f"autograder/submitted/{self.student}/{self.assignment}/, so no grade goes back for them{maybe}: "
                    f"correct the id in {roster_file} if it is mistyped, else collect their submission again "
                    f"(make collect ZIP=...) or remove the row (make uncollect STUDENT={self.student} "
                    f"ASSIGNMENT={self.assignment})")
        if self.gap is Gap.NO_ROSTER_ROW:
            return (f"'{self.student}' was graded for {self.assignment} but {roster_file} has no row for them, so "
                    f"the LMS files leave them out{maybe}: correct the student id in {roster_file} if it is "
                    f"mistyped there, or collect their submission with make collect so the row is written")
        if self.gap is Gap.NO_LMS_ID:
            return (f"'{self.student}' handed in {self.assignment} through the {self.lms} only, which gives no LMS "
                    f"id, so the {self.closest} grade files leave them out: in {roster_file}, give their row the lms "
                    f"and lms_user_id (and name) their LMS knows them by, as a collected student's row has them, or "
                    f"collect an LMS download that holds them; then make feedback")
        if self.gap is Gap.NO_LMS_SETTING:
            return lms.REGISTRY[self.lms].missing_setting(self.assignment, lms_exports.LMS_SETTINGS)
        return (f"no submission of '{self.student}' under autograder/submitted/{maybe}: check the id "
                f"(the folder names there are the student ids), or collect it first (make collect ZIP=...)")


def _closest(name: str, candidates) -> str:
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return found[0] if found else ""


def class_findings(course: Course, results) -> list[Finding]:
    """Roster rows without a submission and submissions without a roster row (only for assignments the roster
    covers: a class placed in submitted/ by hand has no LMS to return to), and assignments whose LMS lacks a setting."""
    people = roster.load(course)
    graded = {(r.student, r.assignment) for r in results}
    covered = {assignment for _, assignment in people}
    findings = []
    for student, assignment in sorted(set(people) - graded):
        if not (course.submitted / student / assignment).is_dir():
            others = {s for s, a in graded - set(people) if a == assignment}
            findings.append(Finding(Gap.NO_SUBMISSION, student, assignment, _closest(student, others)))
    for student, assignment in sorted(graded - set(people)):
        if assignment in covered:
            others = {s for s, a in set(people) - graded if a == assignment}
            findings.append(Finding(Gap.NO_ROSTER_ROW, student, assignment, _closest(student, others)))
    for (student, assignment), row in sorted(people.items()):
        if row.get("lms") not in lms.REGISTRY and (student, assignment) in graded:
            used = sorted(set(lms.REGISTRY) & {r.get("lms") for (_, a), r in people.items() if a == assignment})
            if used:
                findings.append(Finding(Gap.NO_LMS_ID, student, assignment, closest=", ".join(used),
                                        lms=row.get("lms") or "a door without an LMS"))
    for name in lms.REGISTRY:
        assignments = {a for (_, a), row in people.items() if row.get("lms") == name}
        findings += [Finding(Gap.NO_LMS_SETTING, assignment=a, lms=name)
                     for a in lms_exports.missing_settings(course, name, assignments)]
    return findings


def unknown_students(course: Course, students: list[str] | None) -> list[Finding]:
    """--student ids with no folder under submitted/, each with the closest one there."""
    present = {p.name for p in course.submitted.iterdir() if p.is_dir()} if course.submitted.is_dir() else set()
    return [Finding(Gap.UNKNOWN_STUDENT, student, closest=_closest(student, present))
            for student in students or () if student not in present]
