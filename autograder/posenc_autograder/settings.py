"""autograder/course.toml: the course's own settings, read once into typed values.

Sections: [course] (the course's time zone and which attempt counts), [late.<assignment>] (the late policy),
[sandbox] (the limits of one grading job), [caps] (the sizes accepted from a student), [portal] (the rules of an
assignment the instructor has not set in the portal) and [sharing] (how the portal shares its sandboxes and upload
checks between students).
The dataclasses below state every default once; a course's file overrides any key it names. A missing file,
section or key means the default (no late policy: nothing is deducted); an unknown section or key, or a value
of the wrong kind, stops the command with the file, the key and what is expected.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
import os
import pathlib
import re
import stat
import tomllib
import typing
import zoneinfo

if typing.TYPE_CHECKING:
    from posenc_autograder.course import Course


class Section(typing.Protocol):
    """A section of course.toml: a dataclass whose fields are its keys."""
    __dataclass_fields__: typing.ClassVar[dict[str, typing.Any]]


T = typing.TypeVar("T", bound=Section)
SETTINGS_FILE = "autograder/course.toml"
UNITS = {"day": dt.timedelta(days=1), "hour": dt.timedelta(hours=1)}


class SettingsError(SystemExit):
    """course.toml says something the grader cannot use; the message names the key and the fix."""


COUNTED_ATTEMPTS = ("best_on_time", "best", "latest")


@dataclasses.dataclass(frozen=True)
class CourseRules:
    """[course]: facts of the whole course. `time_zone` (an IANA name) is how a time stated without its zone is read
    (an LMS's server time, a deadline written without offset); `counted_attempt` is which of a student's attempts,
    from any door (LMS, portal, exchange, by hand, LTI), is the grade: the best of those on time (the best late one
    when none was), the best, or the latest."""
    time_zone: str = "UTC"
    counted_attempt: typing.Literal["best_on_time", "best", "latest"] = "best_on_time"

    @property
    def zone(self) -> dt.tzinfo:
        return zoneinfo.ZoneInfo(self.time_zone)


@dataclasses.dataclass(frozen=True)
class LatePolicy:
    """A submission later than deadline + grace loses `penalty` percent of its score per started `per`,
    at most `cap` percent."""
    deadline: dt.datetime | None = None       # aware; None: no deadline, nothing deducted
    per: str = "day"
    penalty: float = 0.0
    cap: float = 100.0
    grace_minutes: float = 0.0

    def percent_off(self, submitted: dt.datetime | None, deadline: dt.datetime | None = None) -> float:
        """The percent deducted from a submission at `submitted` (deadline: an extension's, else the policy's)."""
        deadline = deadline or self.deadline
        if deadline is None or submitted is None:
            return 0.0
        late = submitted - deadline - dt.timedelta(minutes=self.grace_minutes)
        if late <= dt.timedelta(0):
            return 0.0
        return min(self.cap, self.penalty * math.ceil(late / UNITS[self.per]))


@dataclasses.dataclass(frozen=True)
class Limits:
    """One grading job's sandbox ([sandbox]); sizes in bytes, or a string such as "3 GiB" in course.toml."""
    cell_seconds: int = 30
    notebook_seconds: int = 240
    memory_bytes: int = 3 * 2**30          # address space per process
    max_processes: int = 64                # enforced through a pids cgroup where one is writable
    max_cell_output_bytes: int = 200_000
    max_file_bytes: int = 64 * 2**20
    tmp_bytes: int = 128 * 2**20           # the sandbox's writable /tmp (work folder and home), in memory
    shm_bytes: int = 16 * 2**20
    channel_bytes: int = 256 * 2**20       # everything read from one job's channel, all attempts
    max_frame_bytes: int = 32 * 2**20      # one frame (a result record or a cell's output)
    channel_cpu_seconds: int = 10          # the grader's own CPU decoding one job's channel, all attempts
    max_output_bytes: int = 16 * 2**20     # cell outputs kept for the autograded notebook

    def for_runner(self) -> dict[str, int]:
        return {"max_cell_output_bytes": self.max_cell_output_bytes, "cell_seconds": self.cell_seconds}


@dataclasses.dataclass(frozen=True)
class Caps:
    """What is accepted from a student ([caps]): collected files, zip members and portal uploads alike."""
    notebook_bytes: int = 20_000_000       # larger than any notebook worth grading, outputs included
    cells: int = 2_000


@dataclasses.dataclass(frozen=True)
class Rule:
    """How one portal rule is bounded and worded, declared once beside its type and default: the instructor's form
    (its widget, bounds and label), its checks, the course.toml loader's and the README's table derive from it."""
    words: str                             # what it is, as the form labels it and the README's table states it
    low: int = 0                           # whole numbers: the bounds accepted (form and course.toml)
    high: int = 10**6
    choices: tuple[tuple[str, str], ...] = ()   # a choice: (value, what it shows) in the order offered

    def stated(self) -> str:
        """The words with the choices spelled out, as the README's table of settings states the rule."""
        if not self.choices:
            return self.words
        listed = [f'"{value}" ({shown})' for value, shown in self.choices]
        return f"{self.words}: {', '.join(listed[:-1])} or {listed[-1]}"


def rule(default: typing.Any, words: str, **bounds: typing.Any) -> typing.Any:
    return dataclasses.field(default=default, metadata={"rule": Rule(words, **bounds)})


def rule_of(field: dataclasses.Field[typing.Any]) -> Rule | None:
    found: Rule | None = field.metadata.get("rule")
    return found


FEEDBACK_CHOICES = (("full", "full diagnoses"), ("tests", "pass or fail per test"),
                    ("none", "nothing until the deadline"))


@dataclasses.dataclass(frozen=True)
class PortalDefaults:
    """The portal's rules for an assignment, each declared once (its type, default, bounds and words): the course's
    defaults for an assignment without a saved policy ([portal]), and the instructor's form for one."""
    grace_minutes: int = rule(0, "minutes after the deadline still on time")
    late_days: int = rule(0, "days after that when uploads are accepted and marked late (0: refused)")
    max_attempts: int = rule(0, "attempts in all (0: no limit)")
    max_per_day: int = rule(20, "attempts in a rolling 24 hours (0: no limit)")   # one student cannot fill the queue
    min_seconds_between: int = rule(0, "seconds between two attempts")
    feedback_before: typing.Literal["full", "tests", "none"] = rule("full", "feedback before the deadline",
                                                                    choices=FEEDBACK_CHOICES)
    inputs_before_deadline: bool = rule(False, "a failed test's inputs shown before the deadline")
    points_before_deadline: bool = rule(True, "with pass or fail per test, also points and case counts")
    notebook_seconds: int = rule(120, "seconds one notebook may run for the portal (never more than [sandbox]'s)",
                                 low=1)            # the whole run in the sandbox (a cell: [sandbox]'s)
    max_queued: int = rule(2, "a student's uploads waiting to be graded, all assignments together (0: no limit)")


@dataclasses.dataclass(frozen=True)
class Sharing:
    """How the portal shares what all students need at once ([sharing]): its grading sandboxes and the checks
    of uploaded files, so that no student can take them from the class (in a deadline rush above all)."""
    usage_window_minutes: int = 60         # grading time used in this window orders the queue: least used first
    rush_notebook_seconds: int = 20        # while others wait, a run stops here and goes back, to run in full later
    refused_wait_seconds: int = 30         # after a file refused by its checks, the next upload waits this long
    refused_wait_max_seconds: int = 480    # the wait doubles with each refusal in a row, up to this


@dataclasses.dataclass(frozen=True)
class Hub:
    """The portal as a JupyterHub service ([hub]): the hub user is the student."""
    instructor_group: str = "instructors"  # hub group whose members reach the portal's instructor pages


SECTIONS: dict[str, type[Section]] = {"course": CourseRules, "sandbox": Limits, "caps": Caps,
                                      "portal": PortalDefaults, "sharing": Sharing, "hub": Hub}


@dataclasses.dataclass(frozen=True)
class Settings:
    late: dict[str, LatePolicy] = dataclasses.field(default_factory=dict)
    course: CourseRules = CourseRules()
    sandbox: Limits = Limits()
    caps: Caps = Caps()
    portal: PortalDefaults = PortalDefaults()
    sharing: Sharing = Sharing()
    hub: Hub = Hub()

    def late_policy(self, assignment: str) -> LatePolicy:
        return self.late.get(assignment, LatePolicy())


def load(course: Course) -> Settings:
    """The settings of the course (read again only when the file changes). One stat of the file a call: every page
    and status asks for them several times."""
    path = course.path(SETTINGS_FILE)
    try:
        found = os.stat(path)
    except OSError:
        return _read(path, None)
    return _read(path, found.st_mtime_ns if stat.S_ISREG(found.st_mode) else None)


@functools.lru_cache(maxsize=8)
def _read(path: pathlib.Path, _mtime: int | None) -> Settings:
    if _mtime is None:
        return Settings()
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"error: {path} is not valid TOML ({exc})") from None
    unknown = set(data) - {"late", *SECTIONS}
    if unknown:
        raise SettingsError(f"error: {path} has unknown sections {sorted(unknown)} "
                            f"(known: late, {', '.join(SECTIONS)})")
    late = data.get("late", {})
    if not isinstance(late, dict):
        raise SettingsError(f"error: {path}: [late] must be a table of assignments ([late.<assignment>])")
    sections: dict[str, typing.Any] = {name: _section(path, name, kind, data.get(name, {}))
                                       for name, kind in SECTIONS.items()}
    try:
        zone = sections["course"].zone
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise SettingsError(f"error: {path}: [course] time_zone = {sections['course'].time_zone!r}: write a time "
                            f"zone's IANA name, such as \"Europe/Berlin\" or \"UTC\"") from None
    return Settings(late={name: _late_policy(path, name, table, zone) for name, table in late.items()}, **sections)


BYTE_UNITS = {"B": 1, "kB": 10**3, "MB": 10**6, "GB": 10**9, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def _section(path: pathlib.Path, name: str, kind: type[T], table: object) -> T:
    """One [name] table as `kind`, each key checked against the type of its field."""
    if not isinstance(table, dict):
        raise SettingsError(f"error: {path}: [{name}] must be a table of keys")
    fields = {f.name: f for f in dataclasses.fields(kind)}
    unknown = set(table) - set(fields)
    if unknown:
        raise SettingsError(f"error: {path}: [{name}] has unknown keys {sorted(unknown)} (known: {', '.join(fields)})")
    hints = typing.get_type_hints(kind)
    return kind(**{key: _value(f"{path}: [{name}] {key}", key, hints[key], value, rule_of(fields[key]))
                   for key, value in table.items()})


def _value(where: str, key: str, hint: typing.Any, value: object, bounds: Rule | None = None) -> typing.Any:
    if typing.get_origin(hint) is typing.Literal:
        if value not in typing.get_args(hint):
            choices = ", ".join(map(repr, typing.get_args(hint)))
            raise SettingsError(f"error: {where} = {value!r}: write one of {choices}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise SettingsError(f"error: {where} = {value!r}: write true or false")
        return value
    if key.endswith("_bytes") and isinstance(value, str):
        value = parse_bytes(value, where)
    if hint is str:
        if not isinstance(value, str):
            raise SettingsError(f"error: {where} = {value!r}: write a quoted text")
        return value
    low, high = (bounds.low, bounds.high) if bounds else (0, None)
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        unit = ' or a size such as "3 GiB"' if key.endswith("_bytes") else ""
        upto = f" to {high}" if high is not None else ""
        raise SettingsError(f"error: {where} = {value!r}: write a whole number from {low}{upto}{unit}")
    return value


def parse_bytes(text: str, where: str) -> int:
    """ "3 GiB", "20 MB", "200000 B" -> bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kMG]i?B|B)\s*", text)
    if not match or match[2] not in BYTE_UNITS:
        raise SettingsError(f"error: {where} = {text!r}: write a size such as \"3 GiB\", \"20 MB\" or \"64 KiB\"")
    return int(float(match[1]) * BYTE_UNITS[match[2]])


def size(count: int) -> str:
    """A size as the README and the messages state it: 3 GiB, 128 MiB, 20 MB."""
    for unit in ("GiB", "MiB", "KiB", "GB", "MB", "kB"):
        if count >= BYTE_UNITS[unit] and count % BYTE_UNITS[unit] == 0:
            return f"{count // BYTE_UNITS[unit]} {unit}"
    return f"{count:,} B"


def _late_policy(path: pathlib.Path, assignment: str, table: object, zone: dt.tzinfo) -> LatePolicy:
    where = f"{path}: [late.{assignment}]"
    if not isinstance(table, dict):
        raise SettingsError(f"error: {where} must be a table (deadline, per, penalty, cap, grace_minutes)")
    unknown = set(table) - {f.name for f in dataclasses.fields(LatePolicy)}
    if unknown:
        raise SettingsError(f"error: {where} has unknown keys {sorted(unknown)} "
                            f"(known: deadline, per, penalty, cap, grace_minutes)")
    per = table.get("per", "day")
    if per not in UNITS:
        raise SettingsError(f"error: {where} per = {per!r}: write \"day\" or \"hour\"")
    numbers = {}
    for key, low, high in (("penalty", 0, 100), ("cap", 0, 100), ("grace_minutes", 0, math.inf)):
        value = table.get(key, getattr(LatePolicy, key))
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise SettingsError(f"error: {where} {key} = {value!r}: a number from {low} to {high:g}")
        numbers[key] = float(value)
    return LatePolicy(deadline=parse_time(table.get("deadline", ""), f"{where} deadline", zone), per=per, **numbers)


class TimeError(SettingsError, ValueError):
    """A time that cannot be read: the message names where it came from and what was found."""


def parse_time(value: object, where: str = "", zone: dt.tzinfo | None = None, formats: tuple[str, ...] = ()
               ) -> dt.datetime | None:
    """The one reading of a time, whatever door it came in by: an aware datetime ('' or None: None).

    Accepts a datetime, an ISO 8601 text ('Z' or an offset, or none) or one of `formats` (strptime, an LMS's own way
    of writing times: Blackboard's '%Y-%m-%d-%H-%M-%S', Moodle's '%A, %d %B %Y, %I:%M %p'). A time without its zone is
    read in `zone`, the zone its source states its times in (an LMS's server, or [course] time_zone); without one it is
    refused: a time is never guessed, and never read as "on time"."""
    if value in ("", None):
        return None
    parsed = value if isinstance(value, dt.datetime) else None
    text = str(value).strip()
    if parsed is None:
        try:
            parsed = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            for form in formats:
                try:
                    parsed = dt.datetime.strptime(text, form)
                    break
                except ValueError:
                    continue
    if parsed is None:
        raise TimeError(f"error: {where} = {text!r}: write an ISO 8601 time such as 2026-12-01T17:00:00+01:00")
    if parsed.tzinfo is None:
        if zone is None:
            raise TimeError(f"error: {where} = {text!r} has no UTC offset: add one, e.g. 2026-12-01T17:00:00+01:00")
        parsed = parsed.replace(tzinfo=zone)
    return parsed


def stamp(when: dt.datetime) -> str:
    """A time as every record and file states it: ISO 8601 in UTC, with its offset."""
    return when.astimezone(dt.timezone.utc).isoformat(timespec="seconds")


def zone_name(zone: dt.tzinfo) -> str:
    """The zone as a student reads it: its IANA name ("Europe/Berlin", "UTC"), else its offset ("UTC+01:00")."""
    return getattr(zone, "key", None) or dt.datetime.now(zone).tzname() or "UTC"


def for_student(when: dt.datetime, zone: dt.tzinfo) -> str:
    """A time as a student reads it, on every page (the portal's, the feedback page) and in every refusal: in the
    course's zone ([course] time_zone, the zone their deadline is given in), named, so one time reads the same
    everywhere. A time without a zone is UTC (the portal stores its times so)."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)
    return f"{aware.astimezone(zone):%Y-%m-%d %H:%M} {zone_name(zone)}"
