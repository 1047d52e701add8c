"""The record of every attempt, whichever door it came in by: one place every door writes to and every grade is read
from.

Doors (DOORS): an LMS download (`make collect`), the course's portal, nbgrader's exchange, a file placed by hand in
autograder/submitted/, an LTI launch and a JupyterHub sign-in (both upload through the portal). Each door calls `add`
with what it knows: the student, the assignment, its own name of the attempt (`source`: "Canvas resubmission 1,
submission 93", "portal attempt 3"), when it was handed in (an aware time: read it with settings.parse_time, in
the zone the door states its times in) and the files. Nothing is ever overwritten: each attempt's files are kept under
autograder/attempts/<student>/<assignment>/<door>-<digest>/, and the record itself is
autograder/attempts/<student>/<assignment>/attempts.json (a file per student and assignment, written whole under a
lock), so it moves with the course whatever database the gradebook is in.

Which attempt counts is one rule, [course] counted_attempt in course.toml (`choose`); autograder/submitted/ holds
the counted attempt's files (`place`), which is what `make grade` and nbgrader grade. A graded file's points come
back with `scored` (by the file's sha256, so any door's attempt of the same bytes has them). When a later attempt
from another door scores lower than the one that counts, or replaces work that scored more, `findings` names the
student for the run report and the dashboard.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import os
import pathlib
from typing import Callable

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.intake.submissions import UnreadableNotebook, read_bytes_safely

# Each door, and how a sentence the instructor reads names it ("a later attempt from <name>").
DOORS = {"lms": "an LMS download", "portal": "the portal", "exchange": "nbgrader's exchange",
         "hand": "a file placed by hand", "lti": "the LMS's LTI launch", "hub": "JupyterHub"}
RECORD = "attempts.json"
TIMESTAMP = "timestamp.txt"                        # nbgrader's, beside the files in submitted/
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


@dataclasses.dataclass(frozen=True)
class Attempt:
    """One attempt as it came in. `files`: file name -> sha256 of its bytes; `scores`: sha256 -> [points, max]
    of the files graded so far (a file's points are the same whichever door brought it)."""
    student: str
    assignment: str
    door: str                                      # one of DOORS
    source: str                                    # the door's own name of the attempt
    received_at: str                               # ISO 8601 in UTC with its offset (settings.stamp)
    files: dict[str, str]
    scores: dict[str, list[float]] = dataclasses.field(default_factory=dict)

    @property
    def key(self) -> str:
        """The attempt's folder name: its door and the digest of its files (the same files by one door: one)."""
        return f"{self.door}-{files_digest(self.files)[:20]}"

    @property
    def time(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.received_at)

    @property
    def graded(self) -> bool:
        return any(digest in self.scores for digest in self.files.values())

    @property
    def score(self) -> float | None:
        found = [self.scores[d][0] for d in self.files.values() if d in self.scores]
        return round(sum(found), 6) if found else None

    @property
    def max_score(self) -> float | None:
        found = [self.scores[d][1] for d in self.files.values() if d in self.scores]
        return round(sum(found), 6) if found else None

    @property
    def door_name(self) -> str:
        return DOORS.get(self.door, self.door)

    def describe(self, zone: dt.tzinfo | None = None) -> str:
        """What the instructor reads: 'Canvas resubmission 1, submission 93, 2026-11-22T23:30:00+00:00', or with the
        course's zone '..., 2026-11-23 00:30 Europe/Berlin' (as the dashboard and the student's pages state times)."""
        return f"{self.source or self.door}, {settings.for_student(self.time, zone) if zone else self.received_at}"


def files_digest(files: dict[str, str]) -> str:
    """One digest of an attempt's files (names and contents): the same attempt by one door is recorded once."""
    return hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest()


def file_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the files ---------------------------------------------------------------------------------------

def folder(course: Course, student: str, assignment: str) -> pathlib.Path:
    found = course.attempts / student / assignment
    if found.resolve().parent.parent != course.attempts.resolve():
        raise ValueError(f"'{student}' would be kept outside {course.attempts}")
    return found


def files_of(course: Course, attempt: Attempt) -> dict[str, pathlib.Path]:
    """file name -> where its bytes are kept."""
    kept = folder(course, attempt.student, attempt.assignment) / attempt.key
    return {name: kept / name for name in attempt.files}


def _write_new(path: pathlib.Path, data: bytes, sync: bool = True) -> None:
    """A fresh file renamed into place: whatever was at `path` (a link, a FIFO) is replaced, never written through.
    sync=False: on disk once the caller calls sync_written (a run storing many notebooks syncs them together)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        out.flush()
        if sync:
            os.fsync(out.fileno())
    os.replace(temporary, path)


def sync_written(paths: list[pathlib.Path]) -> None:
    """Each record written with sync=False, on disk. One after another, most cost little: the first sync's journal
    commit takes the others' writes with it (the reason a batch defers them: 300 syncs one per notebook were ~1 s
    of a class's regrade)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            continue                        # replaced since (by a later write, itself synced or pending)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def _locked(course: Course, student: str, assignment: str):
    """The record of one student's assignment, read and written by one door at a time (threads and processes)."""
    where = folder(course, student, assignment)
    where.mkdir(parents=True, exist_ok=True)
    with open(where / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield where
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read(where: pathlib.Path) -> list[Attempt]:
    try:
        rows = json.loads((where / RECORD).read_text())
    except (OSError, ValueError):
        return []
    return [Attempt(**{**row, "files": dict(row["files"]), "scores": dict(row.get("scores", {}))}) for row in rows]


def _save(where: pathlib.Path, attempts: list[Attempt], sync: bool = True) -> pathlib.Path:
    ordered = sorted(attempts, key=lambda a: a.received_at)    # stable: one second's attempts stay in arrival order
    _write_new(where / RECORD, json.dumps([dataclasses.asdict(a) for a in ordered], indent=1).encode(), sync)
    return where / RECORD


# --- what the doors call -------------------------------------------------------------------------------

def add(course: Course, student: str, assignment: str, door: str, source: str, received_at: dt.datetime,
        files: dict[str, bytes], judged_by_door: bool = False,
        scores: dict[str, tuple[float, float]] | None = None) -> Attempt:
    """Keep one attempt (its files and its row); the same files again by the same door are the same attempt (the
    first time it was received is kept), unless the door brought other files in between: a student who handed in X,
    then Y, then X again by one door last handed in X, which "latest" counts. judged_by_door: the door applied
    handed_in_again itself, to attempts the record does not hold (the portal's uploads the grader failed on, which
    are still the student's), so the files at another time are an attempt of their own. Returns the attempt as
    recorded, with any points its files have. `scores`: sha256 -> (points, max) of files graded already, recorded as
    scored() records them, in the same write (a portal store wrote the record twice: the attempt, then its points)."""
    if door not in DOORS:
        raise ValueError(f"unknown door {door!r} (known: {', '.join(DOORS)})")
    if received_at.tzinfo is None:
        raise ValueError("an attempt's time must carry its zone: read it with settings.parse_time")
    if not files:
        raise ValueError("an attempt holds at least one file")
    digests = {name: file_digest(data) for name, data in files.items()}
    with _locked(course, student, assignment) as where:
        read = _read(where)
        given = {digest: [float(points), float(most)] for digest, (points, most) in (scores or {}).items()}
        attempts = [_with_scores(a, given) for a in read]
        known_scores = {d: s for a in attempts for d, s in a.scores.items()} | given
        attempt = Attempt(student, assignment, door, source, settings.stamp(received_at), digests,
                          {d: known_scores[d] for d in digests.values() if d in known_scores})
        same = _same_attempt(attempts, attempt, judged_by_door)
        if same is not None:
            if attempts != read:
                _save(where, attempts)
            return same
        kept = where / attempt.key
        kept.mkdir(exist_ok=True)
        for name, data in files.items():
            if os.sep in name or name.startswith("."):
                raise ValueError(f"{name!r} is not a file name")
            _write_new(kept / name, data)
        _save(where, [*attempts, attempt])
        return attempt


def _same_attempt(attempts: list[Attempt], new: Attempt, judged_by_door: bool = False) -> Attempt | None:
    """The recorded attempt `new` is (None: a new one): one of its door's with the same files, received at the same
    time, or else (unless the door judged it: add's judged_by_door) handed_in_again among those received before it."""
    at_once = next((a for a in attempts if a.key == new.key and a.time == new.time), None)
    if at_once is not None or judged_by_door:
        return at_once
    return handed_in_again(sorted((a for a in attempts if a.time < new.time), key=lambda a: a.time), new)


def handed_in_again(earlier: list[Attempt], new: Attempt) -> Attempt | None:
    """The attempt `new` repeats (None: it is one of its own): the latest of its door's `earlier` attempts (oldest
    first), when it holds the same files. The one rule of every door (the portal asks it of each upload): the same
    file again with nothing else by that door in between is one attempt at its first time; after another file, it is
    handed in again, at its new time."""
    mine = [a for a in earlier if a.door == new.door]
    return mine[-1] if mine and mine[-1].key == new.key else None


def of(course: Course, student: str, assignment: str) -> list[Attempt]:
    """One student's attempts at one assignment, oldest first."""
    try:
        return _read(folder(course, student, assignment))
    except ValueError:
        return []


def everyone(course: Course) -> dict[tuple[str, str], list[Attempt]]:
    """(student, assignment) -> attempts, for the whole class."""
    found = {}
    for record in sorted(course.attempts.glob(f"*/*/{RECORD}")) if course.attempts.is_dir() else ():
        attempts = _read(record.parent)
        if attempts:
            found[attempts[0].student, attempts[0].assignment] = attempts
    return found


def scored(course: Course, student: str, assignment: str, digest: str, score: float, max_score: float,
           sync: bool = True) -> pathlib.Path | None:
    """The points a file with this sha256 earned when graded, on every attempt that holds it; the record written
    (None: it held these points already). sync=False: the caller syncs it (sync_written) before relying on it."""
    with _locked(course, student, assignment) as where:
        attempts = _read(where)
        rescored = [_with_scores(a, {digest: [float(score), float(max_score)]}) for a in attempts]
        return None if rescored == attempts else _save(where, rescored, sync)


def _with_scores(attempt: Attempt, scores: dict[str, list[float]]) -> Attempt:
    """The attempt with the points of each of its files among `scores` (sha256 -> [points, max])."""
    held = {digest: points for digest, points in scores.items() if digest in attempt.files.values()}
    if all(attempt.scores.get(digest) == points for digest, points in held.items()):
        return attempt
    return dataclasses.replace(attempt, scores={**attempt.scores, **held})


# --- which attempt counts -------------------------------------------------------------------------------

RULES = {"best_on_time": "the best attempt handed in on time (the best late one, after its deduction, when none was "
                         "on time)",
         "best": "the best attempt, after any late deduction",
         "latest": "the latest attempt"}                  # [course] counted_attempt, as every page states it
LatePercent = Callable[[Attempt], float]           # the late policy's deduction for an attempt (reports.late_policy)


def penalised(attempt: Attempt, late_percent: LatePercent) -> float:
    return (attempt.score or 0.0) * (1 - late_percent(attempt) / 100)


def choose(attempts: list[Attempt], rule: str, late_percent: LatePercent) -> Attempt | None:
    """The attempt that counts under `rule` ([course] counted_attempt), among those graded (for "latest": the
    latest, graded or not, since its points do not decide). best_on_time: the best of the attempts on time, else
    the best late one after its deduction; best: the best after deductions. Ties: on time first, then the later."""
    arrival = {id(a): index for index, a in enumerate(attempts)}     # times are stamped to the second
    if rule == "latest":
        return max(attempts, key=lambda a: (a.time, a.door == "hand", arrival[id(a)])) if attempts else None
    graded = [a for a in attempts if a.graded]
    if len(graded) <= 1:          # nothing to weigh: no deadline is read (a run with nothing new stays cheap)
        return graded[0] if graded else None
    if rule == "best_on_time":
        on_time = [a for a in graded if late_percent(a) == 0]
        graded = on_time or graded
    return max(graded, key=lambda a: (round(penalised(a, late_percent), 6), late_percent(a) == 0, a.time,
                                      arrival[id(a)]))


def holding(attempts: list[Attempt], files: dict[str, str], rule: str, late_percent: LatePercent) -> Attempt | None:
    """Of the attempts that hold exactly `files` (what submitted/ holds), the one the rule counts: the same notebook
    handed in on time by one door and again late by another earns the same points, so a rule that weighs points
    counts it as handed in with the least deduction (choose's ties: on time first, then the later)."""
    same = [a for a in attempts if a.files == files] if files else []
    if rule == "latest" or len(same) <= 1:
        return choose(same, "latest", late_percent)
    return max(same, key=lambda a: (-late_percent(a), a.time, a.door == "hand"))


def to_grade(attempts: list[Attempt], rule: str) -> Attempt | None:
    """An attempt whose points are needed before the rule can decide (oldest first), or None."""
    if rule == "latest":
        return None
    return next((a for a in attempts if not a.graded), None)


def next_in_submitted(attempts: list[Attempt], rule: str, late_percent: LatePercent) -> Attempt | None:
    """What autograder/submitted/ should hold now: an attempt still to be graded, else the one that counts."""
    return to_grade(attempts, rule) or choose(attempts, rule, late_percent)


def in_submitted(course: Course, student: str, assignment: str) -> dict[str, str]:
    """file name -> sha256 of the notebooks in submitted/<student>/<assignment>/ now."""
    where = course.submitted / student / assignment
    found = {}
    for path in sorted(where.glob("*.ipynb")) if where.is_dir() and not where.is_symlink() else ():
        try:
            found[path.name] = file_digest(read_bytes_safely(path))      # a link or a FIFO is never followed
        except (UnreadableNotebook, OSError):
            continue
    return found


def place(course: Course, attempt: Attempt, here: dict[str, str] | None = None) -> bool:
    """Put the attempt's files in submitted/<student>/<assignment>/ (what make grade and nbgrader grade), with
    nbgrader's timestamp.txt; the other notebooks there go (each is kept in the record). False: already there, at
    the attempt's time.
    here: in_submitted's answer for that folder, when the caller has just read it."""
    target = course.submitted / attempt.student / attempt.assignment
    if target.resolve().parent.parent != course.submitted.resolve():
        raise ValueError(f"'{attempt.student}' would be stored outside {course.submitted}")
    if (in_submitted(course, attempt.student, attempt.assignment) if here is None else here) == attempt.files:
        return _restate_time(target, attempt)
    target.mkdir(parents=True, exist_ok=True)
    for old in target.glob("*.ipynb"):
        old.unlink()
    for name, path in files_of(course, attempt).items():
        _write_new(target / name, path.read_bytes())
    _write_new(target / TIMESTAMP, _utc(attempt.time).strftime(TIMESTAMP_FORMAT).encode())
    return True


def _utc(when: dt.datetime) -> dt.datetime:
    """A time as nbgrader's timestamp.txt states it: UTC, no zone."""
    return when.astimezone(dt.timezone.utc).replace(tzinfo=None)


def stated_time(folder: pathlib.Path) -> dt.datetime | None:
    """The UTC time folder/timestamp.txt states in nbgrader's format (None: none, another format, or not a regular
    file: a link or a FIFO is never followed or waited on)."""
    try:
        text = read_bytes_safely(folder / TIMESTAMP, 200).decode("utf-8", "replace").strip()
        return dt.datetime.strptime(text, TIMESTAMP_FORMAT)
    except (UnreadableNotebook, OSError, ValueError):
        return None


def _restate_time(target: pathlib.Path, attempt: Attempt) -> bool:
    """The attempt's files are in submitted/ already, maybe handed in by another door at another time: its
    timestamp.txt states this attempt's time (to the second, as the record keeps it), the one the late policy reads
    (late_policy.Deadlines.submitted). True: rewritten. A timestamp.txt in another format or zone is left as it is."""
    stated = stated_time(target)
    when = _utc(attempt.time)
    if stated is None or stated.replace(microsecond=0) == when.replace(microsecond=0):
        return False
    _write_new(target / TIMESTAMP, when.strftime(TIMESTAMP_FORMAT).encode())
    return True


def time_restated(course: Course, student: str, assignment: str) -> bool:
    """submitted/'s timestamp.txt states another time than the one written beside the notebook's graded copy when it
    was stored (autograded/'s): the stored notebook is stored again (its gradebook time, its page's lateness). Either
    missing or in another format: False."""
    stored = stated_time(course.autograded / student / assignment)
    return stored is not None and stated_time(course.submitted / student / assignment) not in (None, stored)


def record_hand_placed(course: Course, student: str, assignment: str, here: dict[str, str] | None = None,
                       recorded: list[Attempt] | None = None) -> Attempt | None:
    """A file put in submitted/ by hand (no door recorded it): recorded as the door 'hand', at its timestamp.txt
    (nbgrader's, UTC) or else the file's modification time. here: in_submitted's answer, when just read; recorded:
    of's answer, when just read."""
    files = in_submitted(course, student, assignment) if here is None else here
    if not files or any(a.files == files for a in (of(course, student, assignment) if recorded is None else recorded)):
        return None
    where = course.submitted / student / assignment
    stated = stated_time(where)
    if stated is not None:
        when = stated.replace(tzinfo=dt.timezone.utc)
    else:
        newest = max((where / name).lstat().st_mtime for name in files)
        when = dt.datetime.fromtimestamp(newest, dt.timezone.utc)
    try:
        data = {name: read_bytes_safely(where / name) for name in files}
    except (UnreadableNotebook, OSError):
        return None
    return add(course, student, assignment, "hand", "placed in autograder/submitted/", when, data)


# --- what the instructor is told ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Finding:
    """A student whose attempts from two doors disagree: a later one scored lower than the one that counts
    (kind "later_scored_lower"), or the one that counts replaced work that scored more ("replaced_better")."""
    student: str
    assignment: str
    kind: str
    counted: Attempt
    other: Attempt
    zone: dt.tzinfo = dt.timezone.utc              # the course's, in which its times are said

    def text(self) -> str:
        """In the words of the run report and the dashboard: times in the course's zone, and each attempt's score
        called automatic (the grade, with manual grades and the late policy, is grades.csv's)."""
        points = lambda a: f"automatic score {a.score:g}/{a.max_score:g}" if a.graded else "not graded"  # noqa: E731
        if self.kind == "later_scored_lower":
            return (f"{self.student}, {self.assignment}: a later attempt from {self.other.door_name} "
                    f"({self.other.describe(self.zone)}; {points(self.other)}) scored lower than the one that "
                    f"counts, from {self.counted.door_name} ({self.counted.describe(self.zone)}; "
                    f"{points(self.counted)})")
        return (f"{self.student}, {self.assignment}: the attempt that counts, from {self.counted.door_name} "
                f"({self.counted.describe(self.zone)}; {points(self.counted)}), replaced one from "
                f"{self.other.door_name} ({self.other.describe(self.zone)}) that had a higher {points(self.other)}")


def findings(attempts: list[Attempt], counted: Attempt | None, zone: dt.tzinfo = dt.timezone.utc) -> list[Finding]:
    if counted is None:
        return []
    found = []
    for other in attempts:
        if other.door == counted.door or not other.graded or not counted.graded:
            continue
        if other.time > counted.time and other.score < counted.score:
            found.append(Finding(counted.student, counted.assignment, "later_scored_lower", counted, other, zone))
        elif other.time < counted.time and other.score > counted.score:
            found.append(Finding(counted.student, counted.assignment, "replaced_better", counted, other, zone))
    return found
