"""nbgrader's exchange as a door: `make collect-exchange ASSIGNMENT=<a>` records every submission students made with
`nbgrader submit` in the record of attempts (door "exchange"), each with its time and zone, and gives each student a
roster row.

nbgrader's layout: <exchange>/<course id>/inbound/<student>+<assignment>+<time>[+<random>]/ holding the notebooks,
timestamp.txt and submission_secret.txt. The time is the one nbgrader's submit wrote, in the zone it names
(nbgrader's Exchange.timezone, UTC unless the hub sets another; an abbreviation is read as the course's zone's when it
is one of its own, [course] time_zone, else as the time zone database names it). The student's own account ran
that submit, so what it wrote is untrusted: names and sizes are checked, only the assignment's notebooks are read
(never through a link or a FIFO), and a stated time earlier than the moment the file system saw the submission
written (its folder's change time, which no student can move back) by more than CLOCK_SKEW is replaced by that moment,
and said.

The secret nbgrader's submit wrote is placed beside the submission in submitted/ (submission_secret.txt), where
`nbgrader collect` would have put it: the grader's feedback carries it, so `nbgrader release_feedback` names the
page as the student's `fetch_feedback` looks for it.

The exchange students write to cannot be inside the course (they would need to enter it): `layout_problems` names
what would let a student's account read the course's private files, and `make hub-setup` applies the safe layout.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os
import pathlib
import re
import stat
import sys
import zoneinfo

from posenc_autograder import settings, words
from posenc_autograder.checks import variants
from posenc_autograder.course import (
    COURSE_ID,
    DATABASE_FILE,
    EXCHANGE_DIRECTORY,
    GRADEBOOK,
    SOURCE_DIRECTORY,
    Course,
    course_for_command,
    exchange_root,
)
from posenc_autograder.intake import attempts, roster
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.intake.submissions import UnreadableNotebook, read_bytes_safely

DOOR = "exchange"
SECRET = "submission_secret.txt"
MAX_SECRET_CHARS = 256
SECRET_PATTERN = re.compile(r"[0-9a-f]{32,%d}" % MAX_SECRET_CHARS)   # nbgrader's: token_hex(64), 128 characters
FOLDER = re.compile(r"(?P<student>[^+/]+)\+(?P<assignment>[^+/]+)\+(?P<time>[^/]+?)(?:\+[A-Za-z0-9_-]{12})?")
STAMP = re.compile(r"(?P<local>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?)(?: (?P<zone>\S+))?")
CLOCK_SKEW = dt.timedelta(minutes=5)      # a student's server and the exchange's file system may differ this much
MAX_SUBMISSIONS = 10_000                  # folders read from one inbound


def read_secret(folder: pathlib.Path) -> str | None:
    """The secret nbgrader's submit wrote in a submission folder (None: none, or not nbgrader's: a link, a FIFO,
    oversized or not lowercase hex)."""
    try:
        text = read_bytes_safely(folder / SECRET, MAX_SECRET_CHARS + 2).decode("ascii", "replace").strip()
    except (UnreadableNotebook, OSError):
        return None
    return text if SECRET_PATTERN.fullmatch(text) else None


def stated_time(text: str, zone: dt.tzinfo) -> dt.datetime | None:
    """nbgrader's timestamp ('2026-11-28 09:30:00.123456 UTC', '... CET', '... +0100', '... Europe/Berlin') as an
    aware time; an abbreviation is read in `zone` when it is that zone's at that moment, else as the time zone
    database names it (CET, EST, ...); None when its zone cannot be known."""
    found = STAMP.fullmatch(text.strip())
    if not found:
        return None
    local = dt.datetime.fromisoformat(found["local"])
    name = found["zone"] or "UTC"
    if re.fullmatch(r"[+-]\d\d:?\d\d", name):
        return dt.datetime.fromisoformat(f"{found['local']}{name[:3]}:{name[-2:]}")
    if name in ("UTC", "GMT", "Z"):
        return local.replace(tzinfo=dt.timezone.utc)
    if local.replace(tzinfo=zone).tzname() == name:
        return local.replace(tzinfo=zone)
    try:
        return local.replace(tzinfo=zoneinfo.ZoneInfo(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return None


@dataclasses.dataclass
class Submission:
    """One folder of the inbound, read."""
    student: str
    time: dt.datetime
    stated: str                      # the time as nbgrader wrote it
    corrected: bool                  # stated earlier than the file system saw it: the file system's time is used
    secret: str | None
    files: dict[str, bytes]


def read_inbound(course: Course, assignment: str, root: pathlib.Path, skipped: list[str]) -> list[Submission]:
    """Every submission of `assignment` in the exchange's inbound, oldest first; what cannot be read is skipped with
    the reason (in `skipped`)."""
    inbound = root / COURSE_ID / "inbound"
    zone = settings.load(course).course.zone
    caps = settings.load(course).caps
    expected = {f"{notebook}.ipynb" for notebook in course.notebooks(assignment)}
    found = []
    try:
        names = sorted(os.listdir(inbound))[:MAX_SUBMISSIONS]
    except OSError as exc:
        raise SystemExit(f"error: cannot read nbgrader's inbound {inbound} ({exc.strerror}): run this as the "
                         f"instructor, with the exchange `make hub-setup` made (or EXCHANGE=<its root>)") from None
    for name in names:
        parsed = FOLDER.fullmatch(name)
        if not parsed or parsed["assignment"] != assignment:
            continue
        folder = inbound / name
        if not is_safe_id(parsed["student"]):
            skipped.append(f"{name[:80]!r}: not a student id the grader accepts")
            continue
        info = folder.lstat()
        if not stat.S_ISDIR(info.st_mode):
            skipped.append(f"{name[:80]!r}: not a folder")
            continue
        when = stated_time(parsed["time"], zone)
        written = dt.datetime.fromtimestamp(info.st_ctime, dt.timezone.utc)
        if when is None:
            skipped.append(f"{name[:80]!r}: its time {parsed['time'][:40]!r} names no zone the grader knows; it was "
                           f"written {settings.stamp(written)}: submitted again, it is read")
            continue
        files = {}
        for notebook in sorted(expected):
            try:
                files[notebook] = read_bytes_safely(folder / notebook, caps.notebook_bytes)
            except UnreadableNotebook:
                continue
        if not files:
            skipped.append(f"{name[:80]!r}: none of {', '.join(sorted(expected))} in it")
            continue
        corrected = when < written - CLOCK_SKEW
        found.append(Submission(parsed["student"], written if corrected else when, parsed["time"], corrected,
                                read_secret(folder), files))
    return sorted(found, key=lambda s: (s.student, s.time))


def record_collected(course: Course, student: str, assignment: str) -> attempts.Attempt | None:
    """What `nbgrader collect` put in submitted/ (a folder holding the exchange's secret), recorded as the exchange's
    attempt at the time its timestamp.txt states (read in its zone; nbgrader's copy keeps no trace of when the exchange
    saw it written: make collect-exchange checks that too). None: not nbgrader's, or already recorded."""
    where = course.submitted / student / assignment
    if not is_safe_id(student) or read_secret(where) is None:
        return None
    files = attempts.in_submitted(course, student, assignment)
    if not files or any(a.files == files for a in attempts.of(course, student, assignment)):
        return None
    try:
        stated = read_bytes_safely(where / attempts.TIMESTAMP, 200).decode("utf-8", "replace").strip()
        data = {name: read_bytes_safely(where / name, settings.load(course).caps.notebook_bytes) for name in files}
    except (UnreadableNotebook, OSError):
        return None
    when = stated_time(stated, settings.load(course).course.zone)
    if when is None:
        return None                        # recorded as placed by hand, at the files' time
    record(course, assignment, [Submission(student, when, stated, False, None, data)])
    return next((a for a in attempts.of(course, student, assignment) if a.files == files), None)


def record(course: Course, assignment: str, submissions: list[Submission]) -> dict[str, list[attempts.Attempt]]:
    """Each submission in the record of attempts; each student's latest secret beside their submission in
    submitted/; a roster row for whoever has none. Returns student -> the attempts new in the record."""
    rows = roster.load(course)
    new: dict[str, list[attempts.Attempt]] = {}
    for sub in submissions:
        before = {(a.key, a.received_at) for a in attempts.of(course, sub.student, assignment)}
        attempt = attempts.add(course, sub.student, assignment, DOOR, f"nbgrader exchange submission of {sub.stated}",
                               sub.time, sub.files)
        if (attempt.key, attempt.received_at) not in before:
            new.setdefault(sub.student, []).append(attempt)
        if sub.secret:
            _place_secret(course, sub.student, assignment, sub.secret)
        row = rows.get((sub.student, assignment))
        if row is None or row.get("lms") == DOOR:
            rows[sub.student, assignment] = {
                **(row or {}), "student_id": sub.student, "assignment": assignment, "lms": DOOR,
                "submitted_at": settings.stamp(sub.time), "attempt": attempt.source,
                "file_name": ", ".join(sorted(sub.files)), "source_zip": "",
                "sha256": ", ".join(attempt.files[name] for name in sorted(sub.files))}
    roster.save(course, rows)
    return new


def _place_secret(course: Course, student: str, assignment: str, secret: str) -> None:
    folder = course.submitted / student / assignment
    if folder.resolve().parent.parent != course.submitted.resolve():
        raise ValueError(f"'{student}' would be stored outside {course.submitted}")
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{SECRET}.{os.getpid()}.tmp"
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(secret)
    os.replace(temporary, folder / SECRET)


# --- the layout a hub needs (make hub-setup applies it) -----------------------------------------------

COURSE_MODE = 0o750                  # the course's folder: its owner and the instructors' group only
PRIVATE = (SOURCE_DIRECTORY, GRADEBOOK, variants.SECRET_FILE, "autograder/portal_secret", DATABASE_FILE,
           roster.ROSTER_FILE, "autograder/submitted", "autograder/autograded", "autograder/feedback")


def layout_problems(course: Course, exchange: pathlib.Path | None = None) -> list[str]:
    """What lets another account read the course's private files while its exchange is shared (empty: safe)."""
    root = course.root.resolve()
    exchange = (exchange or exchange_root(course.root)).resolve()
    found = []
    if exchange == root or root in exchange.parents:
        found.append(f"nbgrader's exchange {exchange} is inside the course: every student would need to enter "
                     f"{root}; put it outside (make hub-setup EXCHANGE=/srv/nbgrader/exchange)")
    if root.stat().st_mode & 0o007:
        found.append(f"other accounts can enter {root} (mode {stat.S_IMODE(root.stat().st_mode):o}): "
                     f"make hub-setup closes it (0750)")
    for relative in PRIVATE:
        path = course.path(relative)
        if path.exists() and not path.is_symlink() and path.stat().st_mode & 0o007:
            found.append(f"{relative} is open to other accounts (mode {stat.S_IMODE(path.stat().st_mode):o})")
    return found


def arguments(parser) -> None:
    parser.add_argument("assignment", help="the assignment to collect from nbgrader's exchange")
    parser.add_argument("--exchange", help="nbgrader's exchange root (default: the course's, as nbgrader_config.py "
                        "sets it)")


def run_command(args) -> int:
    course = course_for_command(args.course)
    if args.assignment not in course.assignments():
        print(f"unknown assignment '{args.assignment}'; known: {', '.join(course.assignments())}", file=sys.stderr)
        return 2
    root = pathlib.Path(args.exchange) if args.exchange else exchange_root(course.root)
    skipped: list[str] = []
    submissions = read_inbound(course, args.assignment, root, skipped)
    new = record(course, args.assignment, submissions)
    for sub in submissions:
        if sub.corrected:
            print(f"{sub.student}: nbgrader's submit states {sub.stated!r}, but the exchange saw it written at "
                  f"{settings.stamp(sub.time)}: the later time is the one recorded", file=sys.stderr)
    for reason in skipped:
        print(f"Skipped {reason}", file=sys.stderr)
    if root.resolve() != course.path(EXCHANGE_DIRECTORY).resolve():       # shared with students' accounts
        for problem in layout_problems(course, root):
            print(f"Warning: {problem}", file=sys.stderr)
    students = sorted({s.student for s in submissions})
    print(f"{words.count(sum(map(len, new.values())), 'new attempt')} from {words.count(len(new), 'student')}; "
          f"{words.count(len(submissions), 'submission')} of '{args.assignment}' by "
          f"{words.count(len(students), 'student')} in {root / COURSE_ID / 'inbound'}, "
          f"all in the record of attempts (door exchange). Next: make grade")
    return 0
