"""Plain zips: "<student>_<notebook>.ipynb" (the student id may contain underscores): the fallback when no LMS's
naming explains a download."""
from __future__ import annotations

from posenc_autograder.intake.lms.base import Entry, basename, no_context, no_missing_settings

NAME = "plain"
TITLE = "a plain zip"
NOTES = None
TAKES_BACK = None
context = no_context
missing_settings = no_missing_settings
FALLBACK = True

# --- plain: "<student>_<notebook>.ipynb"; the student id may contain underscores -------------------

def parse(member: str, expected: set[str], **_) -> Entry | None:
    base = basename(member)
    for notebook in sorted(expected, key=len, reverse=True):
        cut = base.rfind("_" + notebook)
        if cut > 0:
            return Entry(member, "plain", base[:cut], base[:cut], "", base[cut + 1:], (0,), None, prefix=base[:cut])
    head, sep, rest = base.partition("_")
    return Entry(member, "plain", head, head, "", rest, (0,), None, prefix=head) if sep and rest else None

def attempt_label(entry: Entry) -> str:
    return ""


def return_name(row: dict, notebook: str) -> None:
    return None


def grade_files(rows: dict, scores: dict, settings: dict) -> list:
    return []                  # no import file: grades.csv and the mail merge serve it
