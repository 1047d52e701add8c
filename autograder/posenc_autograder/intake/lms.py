"""What an LMS download's file names say: who submitted, when, which attempt, and the original file name.

Identity comes only from the part of a name the LMS generates, parsed once and anchored at the start
of the member's name: Canvas's "<login>[_late]_<user id>_<attachment id>_", Moodle's outermost
"<Full Name>_<participant>_assignsubmission_<plugin>[_]/" folder (or the same prefix on a flat file),
Blackboard's "<Assignment>_<user>_attempt_<time>". What follows is the student's file name, opaque:
whatever it says about users, participants or times is never read as such (`claims_other`).
One parser per LMS turns a path inside the zip into an `Entry` (or None: not its format); `detect`
picks the format that explains most notebooks. Everything parsed is student-controlled text and is
validated by the caller before it names a folder.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import unicodedata

FORMATS = ("canvas", "moodle", "blackboard", "plain")
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclasses.dataclass(frozen=True)
class Entry:
    """One file in a download, as the LMS described it."""
    member: str                          # path inside the zip
    lms: str
    student_id: str                      # the id proposed for nbgrader (validated by the caller)
    name: str                            # display name, as the LMS gives it
    lms_user_id: str                     # the LMS's own id of the student (or of the participant)
    file_name: str                       # the student's file name with the LMS's renaming undone (opaque)
    attempt: tuple                       # larger is later; only from the LMS's part of the name
    submitted_at: dt.datetime | None     # None: the LMS's part of the name does not say
    late: bool = False
    prefix: str = ""                     # the LMS's own part of the name: feedback goes back under it


def is_safe_id(student_id: str) -> bool:
    """A folder name nbgrader and a shell can use: no '.', '..', leading '-', separators or markup."""
    return bool(SAFE_ID.fullmatch(student_id))


def slug(name: str) -> str:
    """A display name made into an id: 'John Smith' -> 'john_smith', 'José Núñez' -> 'jose_nunez'."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")[:48]


def usable_id(entry: Entry) -> str | None:
    """The entry's id if safe; else, when the LMS names the student by its own id, one made from the name
    or that id ('moodle_12345'); else None (a plain zip's unsafe name cannot be repaired)."""
    if is_safe_id(entry.student_id):
        return entry.student_id
    if entry.lms_user_id.isdigit():
        fallback = slug(entry.student_id) or f"{entry.lms}_{entry.lms_user_id}"
        return fallback if is_safe_id(fallback) else f"{entry.lms}_{entry.lms_user_id}"
    return None


def _basename(member: str) -> str:
    return member.rsplit("/", 1)[-1]


# --- Canvas: "<login>[_late]_<user id>_<attachment id>_<file>[-<n>].ipynb" --------------------------
# Canvas's login part never holds "_"; the two ids are what Canvas reads back from a re-upload.

CANVAS_PREFIX = re.compile(r"(?P<login>[^_/]+)(?P<late>_late)?_(?P<user>\d+)_(?P<submission>\d+)_", re.I)
RESUBMISSION = re.compile(r"(?P<stem>.+)-(?P<n>\d+)(?P<ext>\.ipynb)$", re.I)


def parse_canvas(member: str, expected: set[str], **_) -> Entry | None:
    base = _basename(member)
    m = CANVAS_PREFIX.match(base)
    if not m or m.end() == len(base):
        return None
    file_name, resubmission = base[m.end():], 0
    again = RESUBMISSION.fullmatch(file_name)
    if again and again["stem"] in expected and file_name[:-len(".ipynb")] not in expected:
        file_name, resubmission = again["stem"] + ".ipynb", int(again["n"])   # Canvas's renaming, undone
    # Canvas's attachment ids grow with every upload: the later one is the later attempt.
    return Entry(member, "canvas", m["login"], m["login"], m["user"], file_name,
                 (int(m["submission"]), resubmission), None, bool(m["late"]), base[:m.end() - 1])


# --- Moodle: "<Full Name>_<participant>_assignsubmission_<plugin>[_]/<file>" --------------------------
# Moodle replaces "_" in names by spaces, so the name ends at the first "_". Only the outermost folder
# counts; a flat download ("download as flat files") puts the same prefix before each file.

MOODLE_PREFIX = r"(?P<name>[^_/]+)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
MOODLE_FOLDER = re.compile(MOODLE_PREFIX + "_?")
MOODLE_FLAT = re.compile(MOODLE_PREFIX + "_")


def parse_moodle(member: str, expected: set[str], **_) -> Entry | None:
    top, sep, rest = member.partition("/")
    m = MOODLE_FOLDER.fullmatch(top) if sep else None
    if m is None and not sep:
        m = MOODLE_FLAT.match(top)
        rest = top[m.end():] if m else ""
    if m is None or not rest:
        return None
    return Entry(member, "moodle", slug(m["name"]) or f"moodle_{m['participant']}", m["name"], m["participant"],
                 rest, (0,), None, prefix=m.group(0).rstrip("_"))


# --- Blackboard: "<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>|.txt]" ---------------
# The prefix ends at the first "_attempt_<time>"; the note Blackboard writes is exactly prefix + ".txt".

BLACKBOARD_TIME = r"\d{4}(?:-\d{2}){5}"
BLACKBOARD = re.compile(rf"(?P<head>(?:(?!_attempt_{BLACKBOARD_TIME}).)+)_attempt_(?P<time>{BLACKBOARD_TIME})")
BLACKBOARD_NAME = re.compile(r"^Name:\s*(?P<name>.*?)\s*\((?P<user>[^()]+)\)\s*$", re.M)
BLACKBOARD_ASSIGNMENT = re.compile(r"^Assignment:\s*(?P<assignment>.+?)\s*$", re.M)
BLACKBOARD_DATE = re.compile(r"^Date Submitted:\s*(?:[A-Za-z]+,\s*)?(?P<date>[A-Za-z]+ \d{1,2}, \d{4})", re.M)


def blackboard_time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(text, "%Y-%m-%d-%H-%M-%S")
    except ValueError:
        return None


def blackboard_note_prefix(member: str) -> str | None:
    """The attempt a member is Blackboard's note of: its name is exactly '<prefix>.txt' (None: not a note)."""
    base = _basename(member)
    m = BLACKBOARD.match(base)
    return m.group(0) if m and base[m.end():] == ".txt" else None


def note_user(note: str) -> tuple[str, str] | None:
    """(display name, username) a Blackboard note states."""
    named = BLACKBOARD_NAME.search(note)
    return (named["name"], named["user"].strip()) if named else None


def note_date(note: str) -> dt.date | None:
    found = BLACKBOARD_DATE.search(note)
    try:
        return dt.datetime.strptime(found["date"], "%B %d, %Y").date() if found else None
    except ValueError:
        return None


def parse_blackboard(member: str, expected: set[str], attempt_notes: dict[str, str] | None = None,
                     assignment_prefix: str | None = None, **_) -> Entry | None:
    base = _basename(member)
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
    heads = {m["head"] for m in (BLACKBOARD.match(_basename(n)) for n in members) if m}
    from_notes = set()
    for prefix, note in (attempt_notes or {}).items():
        head = BLACKBOARD.match(prefix)["head"]
        named, assignment = note_user(note), BLACKBOARD_ASSIGNMENT.search(note)
        if named and head.endswith("_" + named[1]):
            from_notes.add(head[:-len(named[1])])
        elif assignment and head.startswith(assignment["assignment"] + "_"):
            from_notes.add(assignment["assignment"] + "_")
    if len(from_notes) == 1:
        return from_notes.pop()
    if len(heads) < 2:
        return None
    first, last = min(heads), max(heads)
    common = next((i for i, (a, b) in enumerate(zip(first, last)) if a != b), min(len(first), len(last)))
    cut = first.rfind("_", 0, common + 1)
    return first[:cut + 1] if cut > 0 else None


# --- plain: "<student>_<notebook>.ipynb"; the student id may contain underscores -------------------

def parse_plain(member: str, expected: set[str], **_) -> Entry | None:
    base = _basename(member)
    for notebook in sorted(expected, key=len, reverse=True):
        cut = base.rfind("_" + notebook)
        if cut > 0:
            return Entry(member, "plain", base[:cut], base[:cut], "", base[cut + 1:], (0,), None, prefix=base[:cut])
    head, sep, rest = base.partition("_")
    return Entry(member, "plain", head, head, "", rest, (0,), None, prefix=head) if sep and rest else None


PARSERS = {"canvas": parse_canvas, "moodle": parse_moodle, "blackboard": parse_blackboard, "plain": parse_plain}


def claims_other(entry: Entry) -> str | None:
    """What the student's own file name claims that only the LMS may say (another user's prefix, folder or
    attempt time), or None. Such a name is never believed; the caller refuses the file and says why."""
    if entry.lms == "plain":
        return None
    if "/" in entry.file_name:
        return "it is inside a sub-folder of the submission (only files at the top of the LMS's folder are taken)"
    for lms, parser in PARSERS.items():
        if lms == "plain":
            continue
        inner = parser(entry.file_name, set())
        if inner and (inner.lms_user_id != entry.lms_user_id or inner.submitted_at is not None):
            return (f"its own name imitates {lms}'s naming of another submission ({inner.prefix[:60]!r}); "
                    f"who submitted it and when come only from the LMS's part of the name")
    return None


def detect(notebooks: list[str], expected: set[str]) -> str:
    """The LMS whose naming explains most of the notebooks in the zip (plain when none does)."""
    counts = {lms: sum(PARSERS[lms](n, expected) is not None for n in notebooks) for lms in FORMATS[:-1]}
    best = max(counts, key=counts.get)
    return best if counts[best] else "plain"
