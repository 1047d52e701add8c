"""What an LMS download's file names say: who submitted, when, which attempt, and the original file name.

One parser per LMS. Each turns a path inside the zip into an `Entry` (or None: not its format);
`detect` picks the format that explains most notebooks. Everything parsed is student-controlled
text and is validated by the caller before it names a folder.
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
    """One notebook in a download, as the LMS described it."""
    member: str                          # path inside the zip
    lms: str
    student_id: str                      # the id proposed for nbgrader (validated by the caller)
    name: str                            # display name, as the LMS gives it
    lms_user_id: str                     # the LMS's own id of the student (or of the participant)
    file_name: str                       # the student's file name with the LMS's renaming undone
    attempt: tuple                       # larger is later
    submitted_at: dt.datetime | None     # None: the LMS does not say
    late: bool = False


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


# --- Canvas: "<login>[_late]_<user id>_<submission id>_<file>[-<n>].ipynb" -----------------------

CANVAS = re.compile(r"(?P<login>[^_/]+?)(?P<late>_late)?_(?P<user>\d+)_(?P<submission>\d+)_(?P<file>.+)", re.I)
RESUBMISSION = re.compile(r"(?P<stem>.+)-(?P<n>\d+)(?P<ext>\.ipynb)$", re.I)


def parse_canvas(member: str, expected: set[str], **_) -> Entry | None:
    m = CANVAS.fullmatch(_basename(member))
    if not m:
        return None
    file_name, resubmission = m["file"], 0
    again = RESUBMISSION.fullmatch(file_name)
    if again and again["stem"] in expected and file_name[:-len(".ipynb")] not in expected:
        file_name, resubmission = again["stem"] + ".ipynb", int(again["n"])   # Canvas's renaming, undone
    return Entry(member, "canvas", m["login"], m["login"], m["user"], file_name,
                 (resubmission, int(m["submission"])), None, bool(m["late"]))


# --- Moodle: "<Full Name>_<participant id>_assignsubmission_file_/<file>" -------------------------

MOODLE_FOLDER = re.compile(r"(?P<name>.+)_(?P<participant>\d+)_assignsubmission_[a-z]+_")
MOODLE_FLAT = re.compile(MOODLE_FOLDER.pattern + r"(?P<file>[^/]+)")     # "download as flat files"


def parse_moodle(member: str, expected: set[str], **_) -> Entry | None:
    parts = member.split("/")
    found = [(m, parts[-1]) for m in map(MOODLE_FOLDER.fullmatch, parts[:-1]) if m]
    flat = MOODLE_FLAT.fullmatch(parts[-1])
    if not found and flat:
        found = [(flat, flat["file"])]
    if not found:
        return None
    m, file_name = found[-1]
    return Entry(member, "moodle", slug(m["name"]) or f"moodle_{m['participant']}", m["name"], m["participant"],
                 file_name, (0,), None)


# --- Blackboard: "<Assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>[_<file>]" -----------------

BLACKBOARD = re.compile(r"(?P<head>.+)_attempt_(?P<time>\d{4}(?:-\d{2}){5})(?:_(?P<file>.+))?")
BLACKBOARD_NAME = re.compile(r"^Name:\s*(?P<name>.*?)\s*\((?P<user>[^()]+)\)\s*$", re.M)


def parse_blackboard(member: str, expected: set[str], attempt_notes: dict[str, str] | None = None,
                     assignment_prefix: str | None = None, **_) -> Entry | None:
    m = BLACKBOARD.fullmatch(_basename(member))
    if not m or not m["file"]:
        return None
    when = dt.datetime.strptime(m["time"], "%Y-%m-%d-%H-%M-%S")
    note = (attempt_notes or {}).get(f"{m['head']}_attempt_{m['time']}", "")
    named = BLACKBOARD_NAME.search(note)
    if named and m["head"].endswith("_" + named["user"]):
        user, name = named["user"], named["name"]
    elif assignment_prefix and m["head"].startswith(assignment_prefix):
        user = name = m["head"][len(assignment_prefix):]
    else:
        user = name = m["head"].split("_", 1)[-1]
    return Entry(member, "blackboard", user, name, user, m["file"], (when,), when)


def blackboard_prefix(members: list[str]) -> str | None:
    """The assignment name Blackboard puts before every username, when the zip shows it (2+ students)."""
    heads = {m["head"] for m in (BLACKBOARD.fullmatch(_basename(n)) for n in members) if m}
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
            return Entry(member, "plain", base[:cut], base[:cut], "", base[cut + 1:], (0,), None)
    head, sep, rest = base.partition("_")
    return Entry(member, "plain", head, head, "", rest, (0,), None) if sep and rest else None


PARSERS = {"canvas": parse_canvas, "moodle": parse_moodle, "blackboard": parse_blackboard, "plain": parse_plain}


def detect(notebooks: list[str], expected: set[str]) -> str:
    """The LMS whose naming explains most of the notebooks in the zip (plain when none does)."""
    counts = {lms: sum(PARSERS[lms](n, expected) is not None for n in notebooks) for lms in FORMATS[:-1]}
    best = max(counts, key=counts.get)
    return best if counts[best] else "plain"
