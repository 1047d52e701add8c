"""Blackboard: "<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>|.txt]", and beside each attempt its
note ("<prefix>.txt": the student's name and the date submitted); no zip to take feedback back (a folder per student
and a mail merge)."""
from __future__ import annotations

import datetime as dt
import re

from posenc_autograder.intake.lms.base import Entry, NoteFacts, Notes, basename, no_missing_settings

NAME = "blackboard"
TITLE = "Blackboard"
FALLBACK = False
TAKES_BACK = None                 # no bulk feedback upload: a folder per student and a mail merge
missing_settings = no_missing_settings

# --- Blackboard: "<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>|.txt]" ---------------
# The prefix ends at the first "_attempt_<time>"; the note Blackboard writes is exactly prefix + ".txt".

BLACKBOARD_TIME = r"\d{4}(?:-\d{2}){5}"
BLACKBOARD = re.compile(rf"(?P<head>(?:(?!_attempt_{BLACKBOARD_TIME}).)+)_attempt_(?P<time>{BLACKBOARD_TIME})")
# A note's lines are read with string methods, each once: patterns with a lazy part before optional blanks
# ("Name: <blanks>x") backtrack on a long line, which a note of 64 kB made last for hours.
BLACKBOARD_DATE = re.compile(r"\s*(?:[A-Za-z]+,\s*)?(?P<date>[A-Za-z]+ \d{1,2}, \d{4})")    # anchored: linear


def labelled(note: str, label: str):
    """The rest of every line of the note that starts with `label`, in order."""
    return (line[len(label):] for line in note.split("\n") if line.startswith(label))


def blackboard_time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(text, "%Y-%m-%d-%H-%M-%S")
    except ValueError:
        return None


def blackboard_note_prefix(member: str) -> str | None:
    """The attempt a member is Blackboard's note of: its name is exactly '<prefix>.txt' (None: not a note)."""
    base = basename(member)
    m = BLACKBOARD.match(base)
    return m.group(0) if m and base[m.end():] == ".txt" else None


def note_user(note: str) -> tuple[str, str] | None:
    """(display name, username) a Blackboard note states: its first line "Name: <name> (<user>)"."""
    for rest in labelled(note, "Name:"):
        line = rest.rstrip()
        opening = line.rfind("(")
        user = line[opening + 1:-1]
        if line.endswith(")") and opening >= 0 and user and ")" not in user:
            return line[:opening].strip(), user.strip()
    return None


def note_assignment(note: str) -> str | None:
    """The assignment a Blackboard note names: its first line "Assignment: <name>"."""
    return next((rest.strip() for rest in labelled(note, "Assignment:") if rest.strip()), None)


def note_date(note: str) -> dt.date | None:
    found = next(filter(None, map(BLACKBOARD_DATE.match, labelled(note, "Date Submitted:"))), None)
    try:
        return dt.datetime.strptime(found["date"], "%B %d, %Y").date() if found else None
    except ValueError:
        return None


def note_facts(note: str) -> NoteFacts:
    """Who and when a Blackboard note says: its "Name: <name> (<user>)" and "Date Submitted:" lines."""
    named = note_user(note)
    return NoteFacts(named[1] if named else None, named[0] if named else None, note_date(note))


NOTES = Notes("Blackboard's note", max_bytes=64_000, attempt_of=blackboard_note_prefix, facts=note_facts)


def parse(member: str, expected: set[str], attempt_notes: dict[str, str] | None = None,
                     assignment_prefix: str | None = None, **_) -> Entry | None:
    base = basename(member)
    m = BLACKBOARD.match(base)
    if not m or not base[m.end():].startswith("_") or m.end() + 1 == len(base):
        return None
    when = blackboard_time(m["time"])
    if when is None:
        return None
    head = m["head"]
    if assignment_prefix and head.startswith(assignment_prefix) and len(head) > len(assignment_prefix):
        user = head[len(assignment_prefix):]
    else:
        user = head.split("_", 1)[-1]
    named = note_user((attempt_notes or {}).get(m.group(0), ""))
    name = named[0] if named and named[1] == user else user
    return Entry(member, "blackboard", user, name, user, base[m.end() + 1:], (when,), when, prefix=m.group(0))


def blackboard_prefix(members: list[str], attempt_notes: dict[str, str] | None = None) -> str | None:
    """The '<Assignment>_' Blackboard puts before every username: from its notes (the head minus the
    username the note states, or the assignment the note names), else the heads' common start (2+ students)."""
    heads = {m["head"] for m in (BLACKBOARD.match(basename(n)) for n in members) if m}
    from_notes = set()
    for prefix, note in (attempt_notes or {}).items():
        head = BLACKBOARD.match(prefix)["head"]
        named, assignment = note_user(note), note_assignment(note)
        if named and head.endswith("_" + named[1]):
            from_notes.add(head[:-len(named[1])])
        elif assignment and head.startswith(assignment + "_"):
            from_notes.add(assignment + "_")
    if len(from_notes) == 1:
        return from_notes.pop()
    if len(heads) < 2:
        return None
    first, last = min(heads), max(heads)
    common = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), min(len(first), len(last)))
    cut = first.rfind("_", 0, common + 1)
    return first[:cut + 1] if cut > 0 else None


def context(notebooks: list[str], notes: dict[str, str]) -> dict:
    """What parse needs from the whole download: the notes, and the '<Assignment>_' before every username."""
    return {"attempt_notes": notes, "assignment_prefix": blackboard_prefix(notebooks, notes)}


def attempt_label(entry: Entry) -> str:
    """The attempt's time, as Blackboard's name gives it."""
    return entry.submitted_at.isoformat() if entry.submitted_at else ""


def return_name(row: dict, notebook: str) -> None:
    return None


def grade_files(rows: dict, scores: dict, settings: dict) -> list:
    return []                  # no import file: grades.csv and the mail merge serve it
