"""autograder/course.toml: the course's own settings, read once into typed values.

Today it holds the late policy of each assignment. A missing file or section means no policy (nothing is
deducted); a value of the wrong kind stops the command with the file, the key and what is expected.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
import pathlib
import tomllib

SETTINGS_FILE = "autograder/course.toml"
UNITS = {"day": dt.timedelta(days=1), "hour": dt.timedelta(hours=1)}


class SettingsError(SystemExit):
    """course.toml says something the grader cannot use; the message names the key and the fix."""


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
class Settings:
    late: dict[str, LatePolicy] = dataclasses.field(default_factory=dict)

    def late_policy(self, assignment: str) -> LatePolicy:
        return self.late.get(assignment, LatePolicy())


def load(course) -> Settings:
    """The settings of the course (read again only when the file changes)."""
    path = course.path(SETTINGS_FILE)
    return _read(path, path.stat().st_mtime_ns if path.is_file() else None)


@functools.lru_cache(maxsize=8)
def _read(path: pathlib.Path, _mtime: int | None) -> Settings:
    if _mtime is None:
        return Settings()
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"error: {path} is not valid TOML ({exc})") from None
    late = data.get("late", {})
    if not isinstance(late, dict):
        raise SettingsError(f"error: {path}: [late] must be a table of assignments ([late.<assignment>])")
    return Settings(late={name: _late_policy(path, name, table) for name, table in late.items()})


def _late_policy(path: pathlib.Path, assignment: str, table) -> LatePolicy:
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
    return LatePolicy(deadline=parse_time(table.get("deadline", ""), where), per=per, **numbers)


def parse_time(value, where: str = "") -> dt.datetime | None:
    """An ISO 8601 time with its offset ('' or absent: None); a time without offset is refused (whose 17:00?)."""
    if value in ("", None):
        return None
    if isinstance(value, dt.datetime):           # TOML's own date-time
        parsed = value
    else:
        try:
            parsed = dt.datetime.fromisoformat(str(value))
        except ValueError:
            raise SettingsError(f"error: {where} deadline = {value!r}: write an ISO 8601 time such as "
                                f"2026-12-01T17:00:00+01:00") from None
    if parsed.tzinfo is None:
        raise SettingsError(f"error: {where} deadline = {value!r} has no UTC offset: add one, "
                            f"e.g. 2026-12-01T17:00:00+01:00")
    return parsed
