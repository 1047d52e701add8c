"""Canvas: "<login>[_late]_<user id>_<attachment id>_<file>[-<n>].ipynb"; feedback goes back through
"Re-upload submissions" under the download's own prefix."""
from __future__ import annotations

import re

from posenc_autograder.intake.lms.base import Entry, basename

NAME = "canvas"
FALLBACK = False

# --- Canvas: "<login>[_late]_<user id>_<attachment id>_<file>[-<n>].ipynb" --------------------------
# Canvas's login part never holds "_"; the two ids are what Canvas reads back from a re-upload.

CANVAS_PREFIX = re.compile(r"(?P<login>[^_/]+)(?P<late>_late)?_(?P<user>\d+)_(?P<submission>\d+)_", re.I)
RESUBMISSION = re.compile(r"(?P<stem>.+)-(?P<n>\d+)(?P<ext>\.ipynb)$", re.I)


def parse(member: str, expected: set[str], **_) -> Entry | None:
    base = basename(member)
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




def attempt_label(entry: Entry) -> str:
    """Which attempt was kept: the attachment id and Canvas's resubmission number."""
    return f"resubmission {entry.attempt[1]} (submission {entry.attempt[0]})"


def return_name(row: dict, notebook: str) -> str:
    """The feedback page's name in the re-upload zip: Canvas attaches it to the submission of that prefix."""
    return f"{row['lms_prefix']}_{notebook}-feedback.html"
