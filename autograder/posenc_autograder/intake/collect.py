"""`make collect ZIP=path [ASSIGNMENT=name] [LMS=canvas|moodle|blackboard|plain]`: an LMS download → submitted/.

Each notebook is stored as autograder/submitted/<student>/<assignment>/<file the student uploaded>
with nbgrader's timestamp.txt, and the LMS's ids, name, time and late flag go to the roster.
A second zip adds or replaces only the students it holds, and every member is accounted for:
new, replaced, unchanged, or skipped with the reason. The zip is untrusted (see safezip).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime as dt
import hashlib
import os
import pathlib
import re
import sys

from posenc_autograder.intake import lms, roster
from posenc_autograder.course import Course
from posenc_autograder.intake.safezip import Member, SafeZip, UnsafeArchive, refusal

MAX_NOTE_BYTES = 64_000                  # Blackboard's per-attempt .txt
BLACKBOARD_NOTE = re.compile(r"_attempt_\d{4}(?:-\d{2}){5}\.txt$")
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"   # what nbgrader writes to timestamp.txt


@dataclasses.dataclass
class Outcome:
    """What happened to each part of the zip, for the instructor."""
    lms: str = ""
    new: list[str] = dataclasses.field(default_factory=list)
    replaced: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)   # (what, why)

    def describe(self) -> str:
        lines = [f"Format: {self.lms}. New: {len(self.new)}, replaced: {len(self.replaced)}, "
                 f"unchanged: {len(self.unchanged)}, skipped: {len(self.skipped)}."]
        for label, ids in (("new", self.new), ("replaced", self.replaced), ("unchanged", self.unchanged)):
            if ids:
                lines.append(f"  {label}: {', '.join(ids)}")
        lines += [f"  skipped {what!r}: {why}" for what, why in self.skipped]
        return "\n".join(lines)


def safe_file_name(name: str) -> bool:
    return (name.lower().endswith(".ipynb") and not name.startswith((".", "-")) and len(name) <= 120
            and all(ch.isprintable() and ch not in '/\\<>:"|?*' for ch in name))


def attempt_label(entry: lms.Entry) -> str:
    """Which attempt was kept, in the LMS's terms (Canvas: resubmission number and submission id)."""
    if entry.lms == "canvas":
        return f"resubmission {entry.attempt[0]} (submission {entry.attempt[1]})"
    return entry.submitted_at.isoformat() if entry.submitted_at else ""


def _utc_stamp(entry: lms.Entry, member: Member) -> dt.datetime:
    """When the LMS says it was submitted; otherwise the time the LMS stored on the zip entry."""
    return entry.submitted_at or dt.datetime(*member.info.date_time)


def _attempt_notes(archive: SafeZip, outcome: Outcome) -> dict[str, str]:
    """Blackboard's '<prefix>_attempt_<time>.txt' files, by prefix (they name the student)."""
    notes = {}
    for member in archive.members:
        if BLACKBOARD_NOTE.search(member.name) and refusal(member.info) is None:
            try:
                notes[member.name.rsplit("/", 1)[-1][:-4]] = archive.read(member, MAX_NOTE_BYTES).decode(
                    "utf-8", "replace")
            except ValueError as exc:
                outcome.skipped.append((member.name, str(exc)))
    return notes


def parse_entries(archive: SafeZip, assignment: str, expected: set[str], forced_lms: str | None,
                  outcome: Outcome) -> list[tuple[lms.Entry, Member]]:
    """Every usable notebook of the zip with what its name says; the rest goes to outcome.skipped."""
    notebooks = []
    for member in archive.members:
        why = refusal(member.info)
        if why:
            outcome.skipped.append((member.name, why))
        elif member.name.lower().endswith(".ipynb"):
            notebooks.append(member)
        elif not BLACKBOARD_NOTE.search(member.name):            # those are read by _attempt_notes
            outcome.skipped.append((member.name, "not a notebook"))
    outcome.lms = forced_lms or lms.detect([m.name for m in notebooks], expected)
    context = {"attempt_notes": _attempt_notes(archive, outcome),
               "assignment_prefix": lms.blackboard_prefix([m.name for m in notebooks])}
    entries = []
    for member in notebooks:
        entry = lms.PARSERS[outcome.lms](member.name, expected, **context)
        if entry is None:
            outcome.skipped.append((member.name, f"its name is not in {outcome.lms}'s download format"))
        elif lms.usable_id(entry) is None:
            outcome.skipped.append((member.name, f"the student id {entry.student_id[:80]!r} is not a safe id "
                                                 f"(letters, digits, '.', '_', '-', not starting with '.' or '-')"))
        elif not safe_file_name(entry.file_name):
            outcome.skipped.append((member.name, "the notebook's file name is not usable"))
        else:
            entries.append((dataclasses.replace(entry, student_id=lms.usable_id(entry)), member))
    return entries


def assign_ids(entries, known: dict[tuple[str, str], dict], assignment: str):
    """Keep one id per LMS user: reuse the roster's, and give a clashing name its LMS id as a suffix."""
    by_user = {(r["lms"], r["lms_user_id"]): r["student_id"] for r in known.values() if r["lms_user_id"]}
    owner = {r["student_id"]: (r["lms"], r["lms_user_id"]) for r in known.values()}
    result = []
    for entry, member in entries:
        user = (entry.lms, entry.lms_user_id)
        student = by_user.get(user, entry.student_id) if entry.lms_user_id else entry.student_id
        if entry.lms_user_id and owner.get(student, user) != user:
            student = f"{entry.student_id}_{entry.lms_user_id}"
        owner.setdefault(student, user)
        if entry.lms_user_id:
            by_user.setdefault(user, student)
        result.append((dataclasses.replace(entry, student_id=student), member))
    return result


def latest_attempts(entries, outcome: Outcome):
    """student id -> {file name: (entry, member)} keeping only each student's latest attempt."""
    attempts = collections.defaultdict(list)
    for entry, member in entries:
        attempts[entry.student_id].append((entry, member))
    chosen = {}
    for student, found in attempts.items():
        latest = max(e.attempt for e, _ in found)
        chosen[student] = {}
        for entry, member in found:
            if entry.attempt != latest:
                outcome.skipped.append((member.name, f"an earlier attempt of {student}; the latest was kept"))
            elif entry.file_name in chosen[student]:
                outcome.skipped.append((member.name, f"a second '{entry.file_name}' in the same attempt"))
            else:
                chosen[student][entry.file_name] = (entry, member)
    return chosen


def _write_new(path: pathlib.Path, data: bytes) -> None:
    """Write without following a link someone may have put in the way."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def store(course: Course, assignment: str, student: str, files: dict[str, bytes], stamp: dt.datetime) -> None:
    folder = course.submitted / student / assignment
    if folder.resolve().parent.parent != course.submitted.resolve():
        raise ValueError(f"'{student}' would be stored outside {course.submitted}")
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.ipynb"):
        old.unlink()                     # the new attempt replaces the whole earlier one
    for name, data in files.items():
        _write_new(folder / name, data)
    _write_new(folder / "timestamp.txt", stamp.strftime(TIMESTAMP_FORMAT).encode())


def collect(course: Course, archive_path: pathlib.Path, assignment: str, forced_lms: str | None = None,
            out=sys.stdout) -> int:
    if assignment not in course.assignments():
        print(f"unknown assignment '{assignment}'; known: {', '.join(course.assignments())}", file=sys.stderr)
        return 2
    if forced_lms and forced_lms not in lms.FORMATS:
        print(f"unknown LMS '{forced_lms}'; known: {', '.join(lms.FORMATS)}", file=sys.stderr)
        return 2
    expected = set(course.notebooks(assignment))
    outcome = Outcome()
    rows = roster.load(course)
    try:
        with SafeZip(archive_path) as archive:
            entries = assign_ids(parse_entries(archive, assignment, expected, forced_lms, outcome), rows, assignment)
            for student, files in sorted(latest_attempts(entries, outcome).items()):
                _collect_student(course, archive, assignment, student, files, rows, outcome, archive_path.name)
    except UnsafeArchive as exc:
        print(f"Refused: {exc}. Nothing was collected.", file=sys.stderr)
        return 1
    roster.save(course, rows)
    print(outcome.describe(), file=out)
    total = len({p.parent.parent.name for p in course.submitted.glob(f"*/{assignment}/*.ipynb")})
    print(f"{total} submission(s) of '{assignment}' now in {course.submitted}; roster: {roster.path(course)}. "
          f"Next: make grade", file=out)
    return 0


def _collect_student(course, archive, assignment, student, files, rows, outcome, source) -> None:
    data = {}
    for name, (entry, member) in files.items():
        try:
            data[name] = archive.read(member)
        except ValueError as exc:
            outcome.skipped.append((member.name, str(exc)))
    if not data:
        return
    entry, member = next(iter(files.values()))
    stamp = _utc_stamp(entry, member)
    digest = hashlib.sha256(b"".join(hashlib.sha256(data[n]).digest() for n in sorted(data))).hexdigest()
    before = rows.get((student, assignment))
    if before and before["sha256"] == digest:
        outcome.unchanged.append(student)
        return
    if before and before["submitted_at"] > stamp.isoformat():
        outcome.skipped.append((member.name, f"older than the submission of {student} already collected "
                                             f"({before['submitted_at']})"))
        return
    existed = before is not None or any((course.submitted / student / assignment).glob("*.ipynb"))
    store(course, assignment, student, data, stamp)
    (outcome.replaced if existed else outcome.new).append(student)
    rows[(student, assignment)] = {
        "student_id": student, "assignment": assignment, "lms": entry.lms, "lms_user_id": entry.lms_user_id,
        "name": entry.name, "submitted_at": stamp.isoformat(), "late": "yes" if entry.late else "no",
        "attempt": attempt_label(entry), "file_name": " ".join(sorted(data)),
        "source_zip": source, "sha256": digest}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make collect", description=__doc__.split("\n\n")[0])
    parser.add_argument("zip", type=pathlib.Path)
    parser.add_argument("assignment")
    parser.add_argument("--lms", choices=lms.FORMATS, help="the download's format (default: recognised)")
    args = parser.parse_args(argv)
    return collect(Course(), args.zip.resolve(), args.assignment, args.lms)


if __name__ == "__main__":
    sys.exit(main())
