"""The instructor's forms read and checked: each field's value, or a ValueError that says what is wrong.

The policy form is derived from the rules' one declaration (settings.PortalDefaults: type, bounds, words): the
page renders `policy_fields`, and `policy_values` checks what comes back against the same fields."""
from __future__ import annotations

import dataclasses
import datetime as dt

from posenc_autograder.portal.models import RULES
from posenc_autograder.settings import rule_of

TIMES = (("opens_at", "opens"), ("deadline", "deadline"))     # the assignment's own times, empty for none
YES_NO = (("yes", "yes"), ("no", "no"))


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of the policy form: what the page renders and what the check accepts."""
    name: str
    kind: str                  # "time", "int", "bool" or "choice"
    words: str
    low: int = 0
    high: int = 10**6
    choices: tuple[tuple[str, str], ...] = ()


def policy_fields(ceilings: dict[str, int] | None = None) -> list[Field]:
    """The policy form's fields in order; `ceilings` lowers a rule's upper bound (a notebook's seconds: never more
    than the portal's own sandbox allows)."""
    fields = [Field(name, "time", words) for name, words in TIMES]
    for field in RULES:
        declared = rule_of(field)
        kind = "bool" if field.type == "bool" else "int" if field.type == "int" else "choice"
        high = min(declared.high, (ceilings or {}).get(field.name, declared.high))
        fields.append(Field(field.name, kind, declared.words, declared.low, high,
                            YES_NO if kind == "bool" else declared.choices))
    return fields


def parse_time(value, what: str, zone: dt.tzinfo = dt.timezone.utc) -> dt.datetime | None:
    """A datetime-local field, read in `zone` (the course's, in which students read their deadline and which the form
    names), as the portal stores times: naive UTC; empty means none. A time the clocks skip or pass twice (a change
    of summer time) is read with the offset in force before the change."""
    text = str(value or "").strip()
    if not text:
        return None
    try:
        written = dt.datetime.fromisoformat(text).replace(second=0, microsecond=0)
    except ValueError:
        raise ValueError(f"{what} is not a date and time (YYYY-MM-DDTHH:MM)") from None
    local = written if written.tzinfo is not None else written.replace(tzinfo=zone)
    return local.astimezone(dt.timezone.utc).replace(tzinfo=None)


def shown_time(when: dt.datetime | None, zone: dt.tzinfo = dt.timezone.utc) -> str:
    """A stored time (naive UTC) as a datetime-local field's value, in `zone`: what parse_time reads back."""
    return "" if when is None else f"{when.replace(tzinfo=dt.timezone.utc).astimezone(zone):%Y-%m-%dT%H:%M}"


def field_value(field: Field, text: str, zone: dt.tzinfo = dt.timezone.utc):
    """One field's value from the form's text (a time read in `zone`); ValueError names the field by its words."""
    if field.kind == "time":
        return parse_time(text, f"{field.words}", zone)
    if field.kind == "int":
        text = text.strip()
        if not text.isdigit() or not field.low <= int(text) <= field.high:
            raise ValueError(f"{field.words}: write a whole number from {field.low} to {field.high}")
        return int(text)
    if text not in dict(field.choices):
        raise ValueError(f"{field.words}: choose one of {', '.join(value for value, _ in field.choices)}")
    return text == "yes" if field.kind == "bool" else text


def policy_values(form, ceilings: dict[str, int] | None = None, zone: dt.tzinfo = dt.timezone.utc,
                  fixed: frozenset[str] = frozenset()) -> dict:
    """The policy form, checked (ValueError says what is wrong), its times read in `zone`. A rule the form leaves out
    keeps what is saved; an empty time means none. A rule course.toml states (`fixed`: the page shows it, not to be
    edited) is not read: course.toml's value applies whatever the portal saves."""
    values = {}
    for field in policy_fields(ceilings):
        if field.name in fixed:
            continue
        text = form.get(field.name)
        if text is not None or field.kind == "time":
            values[field.name] = field_value(field, str(text or ""), zone)
    if values["opens_at"] and values.get("deadline") and values["opens_at"] > values["deadline"]:
        raise ValueError("the opening is after the deadline")
    return values
