"""`make collect ZIP=path [ASSIGNMENT=name] [LMS=name]`: an LMS download → submitted/ (LMS: a module of intake/lms/).

Each attempt goes to the record of every attempt (intake/attempts.py, the door "lms"), its files kept under
autograder/attempts/; it is placed in autograder/submitted/<student>/<assignment>/<file the student uploaded> with
nbgrader's timestamp.txt unless another door's attempt is there (then `make grade` applies [course] counted_attempt),
and the LMS's ids, name, time and late flag go to the roster. Times carry their zone: a zip entry's UTC time where the
zip stores one (its extended-timestamp field), else its DOS time, and a time in the LMS's part of a name, read in
the course's time zone ([course] time_zone: the LMS's server's).
A second zip adds or replaces only the students it holds, and every member is accounted for:
new, replaced, unchanged, or skipped with the reason. The zip is untrusted (see safezip).
"""
from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import hashlib
import pathlib
import struct
import sys

from posenc_autograder import settings, words
from posenc_autograder.course import Course, course_for_command
from posenc_autograder.intake import attempts, lms, roster
from posenc_autograder.intake.safezip import Member, SafeZip, UnsafeArchive, refusal

CLOCK_SLACK = dt.timedelta(days=2)       # time zones between the LMS's clock and the zip's, with room to spare


@dataclasses.dataclass
class Outcome:
    """What happened to each part of the zip, for the instructor."""
    lms: str = ""
    new: list[str] = dataclasses.field(default_factory=list)
    replaced: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)   # (what, why)
    conflicts: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (student, what claims them)
    warnings: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        lines = [f"Format: {self.lms}. New: {len(self.new)}, replaced: {len(self.replaced)}, "
                 f"unchanged: {len(self.unchanged)}, skipped: {len(self.skipped)}."]
        for label, ids in (("new", self.new), ("replaced", self.replaced), ("unchanged", self.unchanged)):
            if ids:
                lines.append(f"  {label}: {', '.join(ids)}")
        lines += [f"  skipped {what!r}: {why}" for what, why in self.skipped]
        lines += [f"  CONFLICT, nothing collected for {student}: {what}" for student, what in self.conflicts]
        lines += [f"  warning: {text}" for text in self.warnings]
        return "\n".join(lines)


def safe_file_name(name: str) -> bool:
    return (name.lower().endswith(".ipynb") and not name.startswith((".", "-")) and len(name) <= 120
            and all(ch.isprintable() and ch not in '/\\<>:"|?*' for ch in name))


def attempt_label(entry: lms.Entry) -> str:
    """Which attempt was kept, in the LMS's terms."""
    return lms.REGISTRY[entry.lms].attempt_label(entry)


def attempt_source(entry: lms.Entry) -> str:
    """The attempt's name in the record of attempts: the LMS's name and its label ("Canvas resubmission 1, ...")."""
    return f"{lms.REGISTRY[entry.lms].TITLE} {attempt_label(entry)}".strip()


EXTENDED_TIMESTAMP = 0x5455                 # the zip extra field holding Unix (UTC) times


def _utc_from_extra(extra: bytes) -> dt.datetime | None:
    """The modification time of a zip entry's extended-timestamp field (UTC seconds), if it has one."""
    at = 0
    while at + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, at)
        body = extra[at + 4:at + 4 + size]
        if kind == EXTENDED_TIMESTAMP and len(body) >= 5 and body[0] & 1:
            return dt.datetime.fromtimestamp(struct.unpack_from("<i", body, 1)[0], dt.timezone.utc)
        at += 4 + size
    return None


def zip_time(member: Member, zone: dt.tzinfo) -> dt.datetime | None:
    """When the LMS stored the entry, with its zone: the UTC time of its extended-timestamp field, else its DOS time
    (which carries no zone) read in `zone`, the course's."""
    try:
        return _utc_from_extra(member.info.extra) or settings.parse_time(dt.datetime(*member.info.date_time),
                                                                         repr(member.name), zone)
    except (ValueError, OverflowError, OSError, struct.error):
        return None


def checked_time(entry: lms.Entry, member: Member, notes: dict[str, dict[str, str]], outcome: Outcome,
                 zone: dt.tzinfo) -> dt.datetime:
    """When the LMS's part of the name says it was submitted (read in `zone`, the course's time zone), cross-checked
    with the zip entry's time and the day the LMS's note of the attempt states; without one, the time the LMS stored
    on the zip entry."""
    stored = zip_time(member, zone) or dt.datetime(1980, 1, 1, tzinfo=dt.timezone.utc)
    if entry.submitted_at is None:
        return stored
    entry = dataclasses.replace(entry, submitted_at=settings.parse_time(entry.submitted_at, repr(member.name), zone))
    if entry.submitted_at > stored + CLOCK_SLACK:
        outcome.warnings.append(f"{member.name!r}: the LMS's name says {entry.submitted_at.isoformat()}, later "
                                f"than the zip was made ({stored.isoformat()}); the zip's time was used")
        return stored
    kind, facts = note_of(entry, notes)
    noted = facts.submitted_on if facts else None
    if noted and abs(noted - entry.submitted_at.date()) > dt.timedelta(days=1):
        outcome.warnings.append(f"{member.name!r}: {kind.title} says it was submitted on {noted}, "
                                f"its name {entry.submitted_at.date()}; the name's time was used")
    return entry.submitted_at or stored


def note_of(entry: lms.Entry, notes: dict[str, dict[str, str]]):
    """(the entry's LMS's Notes, what its note of the entry's attempt states), or (Notes or None, None)."""
    kind = lms.REGISTRY[entry.lms].NOTES
    text = notes.get(entry.lms, {}).get(entry.prefix)
    return kind, (kind.facts(text) if kind and text is not None else None)


def attempt_notes(archive: SafeZip, outcome: Outcome) -> tuple[dict[str, dict[str, str]], set[str]]:
    """Every LMS's notes by attempt prefix (NAME -> {prefix: text}, a member the LMS's Notes calls the note of that
    prefix, one per prefix), and the members read as notes. Two members with one note's name: neither is believed."""
    candidates: dict[tuple[str, str], list[Member]] = collections.defaultdict(list)
    for member in archive.members:
        for name, module in lms.REGISTRY.items():
            prefix = module.NOTES.attempt_of(member.name) if module.NOTES else None
            if prefix and refusal(member.info) is None:
                candidates[name, prefix].append(member)
    notes, used = collections.defaultdict(dict), set()
    for (name, prefix), members in candidates.items():
        kind = lms.REGISTRY[name].NOTES
        used.update(m.name for m in members)
        if len(members) > 1:
            outcome.skipped += [(m.name, f"{len(members)} files are named as {kind.title} of this attempt; "
                                         f"none was believed") for m in members]
            continue
        try:
            notes[name][prefix] = archive.read(members[0], kind.max_bytes).decode("utf-8", "replace")
        except ValueError as exc:
            outcome.skipped.append((members[0].name, str(exc)))
    return dict(notes), used


def parse_entries(archive: SafeZip, assignment: str, expected: set[str], forced_lms: str | None,
                  outcome: Outcome) -> tuple[list[tuple[lms.Entry, Member]], dict[str, dict[str, str]]]:
    """Every usable notebook of the zip with what the LMS's part of its name says, and the LMSes' notes;
    the rest goes to outcome.skipped."""
    notes, note_members = attempt_notes(archive, outcome)
    notebooks = []
    for member in archive.members:
        why = refusal(member.info)
        if why:
            outcome.skipped.append((member.name, why))
        elif member.name.lower().endswith(".ipynb"):
            notebooks.append(member)
        elif member.name not in note_members:
            outcome.skipped.append((member.name, "not a notebook"))
    outcome.lms = forced_lms or lms.detect([m.name for m in notebooks], expected)
    module = lms.REGISTRY[outcome.lms]
    context = module.context([m.name for m in notebooks], notes.get(outcome.lms, {}))
    entries = []
    for member in notebooks:
        entry = module.parse(member.name, expected, **context)
        claim = entry and lms.claims_other(entry)
        if entry is None:
            outcome.skipped.append((member.name, f"its name is not in {outcome.lms}'s download format"))
        elif claim:
            outcome.skipped.append((member.name, claim))
        elif lms.usable_id(entry) is None:
            outcome.skipped.append((member.name, f"the student id {entry.student_id[:80]!r} is not a safe id "
                                                 f"(letters, digits, '.', '_', '-', not starting with '.' or '-')"))
        elif not safe_file_name(entry.file_name):
            outcome.skipped.append((member.name, "the notebook's file name is not usable"))
        else:
            entries.append((dataclasses.replace(entry, student_id=lms.usable_id(entry)), member))
    _check_notes(entries, notes, outcome)
    return entries, notes


def _check_notes(entries, notes: dict[str, dict[str, str]], outcome: Outcome) -> None:
    """A note naming another user than its attempt's prefix: the prefix decides, the instructor is told."""
    for entry, member in entries:
        kind, facts = note_of(entry, notes)
        if facts and facts.user and facts.user != entry.lms_user_id:
            outcome.warnings.append(f"{member.name!r}: {kind.title} names {facts.user!r}, the file name "
                                    f"{entry.lms_user_id!r}; it was filed under the file name's user")


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
    """student id -> {file name: (entry, member)} of each student's latest attempt. Two files that claim one
    student's file of one attempt (or one attempt under two LMS prefixes) are not ranked: both are reported
    in outcome.conflicts and nothing of that student is collected from this zip."""
    attempts = collections.defaultdict(list)
    for entry, member in entries:
        attempts[entry.student_id].append((entry, member))
    chosen = {}
    for student, found in attempts.items():
        latest = max(e.attempt for e, _ in found)
        kept = [(e, m) for e, m in found if e.attempt == latest]
        outcome.skipped += [(m.name, f"an earlier attempt of {student}; the latest was kept")
                            for e, m in found if e.attempt != latest]
        names = collections.Counter(e.file_name for e, _ in kept)
        prefixes = {e.prefix for e, _ in kept}
        if len(prefixes) > 1 or max(names.values()) > 1:
            outcome.conflicts.append((student, "these files all claim the same attempt: "
                                      + ", ".join(repr(m.name) for _, m in kept)))
            continue
        chosen[student] = {e.file_name: (e, m) for e, m in kept}
    return chosen


def store(course: Course, assignment: str, student: str, files: dict[str, bytes], stamp: dt.datetime,
          source: str = "an LMS download") -> attempts.Attempt | None:
    """Record the attempt (its files kept, nothing overwritten) and place it in submitted/, unless another door's
    attempt is there or a later one of the LMS's: returns the other door's attempt left in place (None: placed)."""
    attempt = attempts.add(course, student, assignment, "lms", source, stamp, files)
    here = attempts.in_submitted(course, student, assignment)
    recorded = attempts.of(course, student, assignment)
    there = next((a for a in reversed(recorded) if a.files == here), None) if here else None
    if there is None and here:
        there = attempts.record_hand_placed(course, student, assignment)
    if there is not None and there.door != "lms":
        return there
    if there is None or there.time <= attempt.time:
        attempts.place(course, attempt)
    return None


def looks_like(course: Course, members: list[str]) -> dict[str, int]:
    """assignment -> how many notebooks of the zip carry one of its notebook names."""
    counts = {}
    for assignment in course.assignments():
        names = course.notebooks(assignment)
        counts[assignment] = sum(any(n in m.rsplit("/", 1)[-1] for n in names) for m in members)
    return counts


def wrong_assignment(course: Course, assignment: str, entries, notebooks: list[str]) -> str | None:
    """Why the zip is not a download of `assignment` (no notebook named as its notebooks), or None."""
    expected = {f"{n}.ipynb" for n in course.notebooks(assignment)}
    if not notebooks or any(entry.file_name in expected for entry, _ in entries):
        return None
    counts = {a: n for a, n in looks_like(course, notebooks).items() if n and a != assignment}
    hint = (" They look like " + ", ".join(f"'{a}' ({n} of {len(notebooks)} notebooks)" for a, n in
                                             sorted(counts.items(), key=lambda kv: -kv[1]))
            + f": run make collect ZIP=... ASSIGNMENT={max(counts, key=lambda a: counts[a])}" if counts else "")
    return (f"none of the {len(notebooks)} notebooks in the zip is {' or '.join(sorted(expected))}, the notebook of "
            f"'{assignment}'.{hint}")


def collect(course: Course, archive_path: pathlib.Path, assignment: str, forced_lms: str | None = None,
            out=sys.stdout) -> int:
    if assignment not in course.assignments():
        print(f"unknown assignment '{assignment}'; known: {', '.join(course.assignments())}", file=sys.stderr)
        return 2
    if forced_lms and forced_lms not in lms.REGISTRY:
        print(f"unknown LMS '{forced_lms}'; known: {', '.join(lms.REGISTRY)}", file=sys.stderr)
        return 2
    expected = set(course.notebooks(assignment))
    outcome = Outcome()
    rows = roster.load(course)
    try:
        with SafeZip(archive_path, settings.load(course).caps.notebook_bytes) as archive:
            parsed, notes = parse_entries(archive, assignment, expected, forced_lms, outcome)
            wrong = wrong_assignment(course, assignment, parsed,
                                     [m.name for m in archive.members if m.name.lower().endswith(".ipynb")])
            if wrong:
                print(f"Refused: {wrong}\nNothing was collected.", file=sys.stderr)
                return 1
            entries = assign_ids(parsed, rows, assignment)
            for student, files in sorted(latest_attempts(entries, outcome).items()):
                _collect_student(course, archive, assignment, student, files, rows, outcome, archive_path.name,
                                 notes)
    except UnsafeArchive as exc:
        print(f"Refused: {exc}. Nothing was collected.", file=sys.stderr)
        return 1
    roster.save(course, rows)
    print(outcome.describe(), file=out)
    total = len({p.parent.parent.name for p in course.submitted.glob(f"*/{assignment}/*.ipynb")})
    print(f"{words.count(total, 'submission')} of '{assignment}' now in {course.submitted}; "
          f"roster: {roster.path(course)}. Next: make grade", file=out)
    return 0


def _collect_student(course, archive, assignment, student, files, rows, outcome, source, notes) -> None:
    data = {}
    for name, (_entry, member) in files.items():
        try:
            data[name] = archive.read(member)
        except ValueError as exc:
            outcome.skipped.append((member.name, str(exc)))
    if not data:
        return
    entry, member = next(iter(files.values()))
    stamp = checked_time(entry, member, notes, outcome, settings.load(course).course.zone)
    digest = hashlib.sha256(b"".join(hashlib.sha256(data[n]).digest() for n in sorted(data))).hexdigest()
    before = rows.get((student, assignment))
    if before and before["sha256"] == digest:
        outcome.unchanged.append(student)
        return
    earlier = before and _time_of(course, before)
    if earlier and earlier > stamp:
        attempts.add(course, student, assignment, "lms", attempt_source(entry), stamp, data)
        outcome.skipped.append((member.name, f"older than the submission of {student} already collected "
                                             f"({before['submitted_at']}); kept in the record of attempts"))
        return
    existed = before is not None or any((course.submitted / student / assignment).glob("*.ipynb"))
    other = store(course, assignment, student, data, stamp, attempt_source(entry))
    (outcome.replaced if existed else outcome.new).append(student)
    if other is not None:
        outcome.warnings.append(f"{student}: kept beside the attempt from {other.door_name} ({other.describe()}) "
                                f"in submitted/; make grade counts one by [course] counted_attempt")
    rows[(student, assignment)] = {
        "student_id": student, "assignment": assignment, "lms": entry.lms, "lms_user_id": entry.lms_user_id,
        "name": entry.name, "submitted_at": settings.stamp(stamp), "late": "yes" if entry.late else "no",
        "attempt": attempt_label(entry), "file_name": " ".join(sorted(data)),
        "source_zip": source, "sha256": digest, "lms_prefix": entry.prefix,
        "extension": before.get("extension", "") if before else ""}        # the instructor's, kept


def _time_of(course: Course, row: dict) -> dt.datetime | None:
    """The roster's time of a row (older rosters wrote it without zone: the course's)."""
    try:
        return settings.parse_time(row.get("submitted_at", ""), f"{roster.ROSTER_FILE} submitted_at",
                                   settings.load(course).course.zone)
    except settings.TimeError:
        return None


def arguments(parser) -> None:
    parser.add_argument("zip", type=pathlib.Path)
    parser.add_argument("assignment")
    parser.add_argument("--lms", choices=lms.FORMATS, help="the download's format (default: recognised)")


def run_command(args) -> int:
    return collect(course_for_command(args.course), args.zip.resolve(), args.assignment, args.lms)

