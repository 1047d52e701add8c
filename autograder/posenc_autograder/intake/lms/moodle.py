"""Moodle: "<Full Name>_<participant>_assignsubmission_<plugin>[_]/<file>"; feedback goes back through
"Upload multiple feedback files in a zip", a folder per participant named as in the download."""
from __future__ import annotations

import re

from posenc_autograder.intake.lms.base import Entry, GradeFile, no_context, no_missing_settings, slug

NAME = "moodle"
TITLE = "Moodle"
NOTES = None
TAKES_BACK = "Upload multiple feedback files in a zip"
context = no_context
missing_settings = no_missing_settings
FALLBACK = False

# --- Moodle: "<Full Name>_<participant>_assignsubmission_<plugin>[_]/<file>" --------------------------
# Moodle replaces "_" in names by spaces, so the name ends at the first "_". Only the outermost folder
# counts; a flat download ("download as flat files") puts the same prefix before each file.

MOODLE_PREFIX = r"(?P<name>[^_/]+)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
MOODLE_FOLDER = re.compile(MOODLE_PREFIX + "_?")
MOODLE_FLAT = re.compile(MOODLE_PREFIX + "_")


def parse(member: str, expected: set[str], **_) -> Entry | None:
    top, sep, rest = member.partition("/")
    m = MOODLE_FOLDER.fullmatch(top) if sep else None
    if m is None and not sep:
        m = MOODLE_FLAT.match(top)
        rest = top[m.end():] if m else ""
    if m is None or not rest:
        return None
    return Entry(member, "moodle", slug(m["name"]) or f"moodle_{m['participant']}", m["name"], m["participant"],
                 rest, (0,), None, prefix=m.group(0).rstrip("_"))

def attempt_label(entry: Entry) -> str:
    return ""                  # Moodle's download keeps one file per participant and says nothing of attempts


def return_name(row: dict, notebook: str) -> str:
    """A folder per participant named as the download's: Moodle reads the participant from the folder name."""
    return f"{row['lms_prefix']}/{notebook}-feedback.html"


GRADE_FIELDS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                "Grade can be changed", "Last modified (submission)", "Feedback comments"]


def grade_file_name(assignment: str) -> str:
    return f"grades-moodle-{assignment}.csv"


def grade_files(rows: dict, scores: dict, settings: dict) -> list[GradeFile]:
    """The assignment's offline grading worksheet, one per assignment; Moodle matches "Participant <id>"."""
    files = []
    for assignment in sorted({a for _, a in rows}):
        lines = [{"Identifier": f"Participant {row['lms_user_id']}", "Full name": row["name"],
                  "Status": "Submitted for grading",
                  "Grade": f"{scores[key][0]:.2f}" if scores[key][2] else "",
                  "Maximum Grade": f"{scores[key][1]:.2f}", "Grade can be changed": "Yes",
                  "Last modified (submission)": row["submitted_at"]}
                 for key, row in sorted(rows.items()) if key[1] == assignment]
        files.append(GradeFile(grade_file_name(assignment), GRADE_FIELDS, lines))
    return files
