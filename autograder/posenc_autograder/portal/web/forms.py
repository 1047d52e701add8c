"""The instructor's forms read and checked: each field's value, or a ValueError that says what is wrong."""
from __future__ import annotations

import datetime as dt

from posenc_autograder.portal import policy as rules


def parse_time(value, what: str) -> dt.datetime | None:
    """A datetime-local field (UTC); empty means none."""
    text = str(value or "").strip()
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=None, second=0, microsecond=0)
    except ValueError:
        raise ValueError(f"{what} is not a date and time (YYYY-MM-DDTHH:MM)") from None


def _whole(form, key: str, what: str) -> int:
    text = str(form.get(key) or "0").strip()
    if not text.isdigit() or int(text) > 10**6:
        raise ValueError(f"{what} must be a whole number from 0")
    return int(text)


def policy_values(form) -> dict:
    """The policy form, checked (ValueError says what is wrong)."""
    level = form.get("feedback_before")
    if level not in rules.FEEDBACK_LEVELS:
        raise ValueError("choose how much feedback shows")
    values = {"opens_at": parse_time(form.get("opens_at"), "the opening"),
              "deadline": parse_time(form.get("deadline"), "the deadline"),
              "grace_minutes": _whole(form, "grace_minutes", "the grace period"),
              "late_days": _whole(form, "late_days", "the days late uploads are accepted"),
              "max_attempts": _whole(form, "max_attempts", "attempts in all"),
              "max_per_day": _whole(form, "max_per_day", "attempts per day"),
              "min_seconds_between": _whole(form, "min_seconds_between", "the time between attempts"),
              "feedback_before": level,
              "inputs_before_deadline": form.get("inputs_before_deadline") == "on"}
    if form.get("points_before_deadline") is not None:    # a select: a form without it keeps what is saved
        values["points_before_deadline"] = form.get("points_before_deadline") == "yes"
    for key, what in (("notebook_seconds", "the seconds a notebook may run"),
                      ("max_queued", "uploads waiting at once")):
        if form.get(key) is not None:                    # a form without the field keeps what is saved
            values[key] = _whole(form, key, what)
    if values["opens_at"] and values["deadline"] and values["opens_at"] > values["deadline"]:
        raise ValueError("the opening is after the deadline")
    if values.get("notebook_seconds") == 0:
        raise ValueError("a notebook needs some seconds to run")
    return values
