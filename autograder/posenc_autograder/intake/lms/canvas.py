"""Canvas: "<login>[_late]_<user id>_<attachment id>_<file>[-<n>].ipynb"; feedback goes back through
"Re-upload submissions" under the download's own prefix."""
from __future__ import annotations

import re

from posenc_autograder.intake.lms.base import Entry, GradeFile, basename, no_context, score_or_blank

NAME = "canvas"
TITLE = "Canvas"
NOTES = None
TAKES_BACK = "Re-upload submissions"
FALLBACK = False
context = no_context

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
    return f"resubmission {entry.attempt[1]}, submission {entry.attempt[0]}"


def return_name(row: dict, notebook: str) -> str:
    """The feedback page's name in the re-upload zip, the prefix exactly as Canvas named the download: Canvas reads
    its first two all-digit parts (user, attachment) and attaches the page to that submission as a comment."""
    return f"{row['lms_prefix']}_{notebook}-feedback.html"


GRADE_FIELDS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADE_FILE = "grades-canvas.csv"


def column(settings: dict, assignment: str) -> str:
    """"<Assignment name> (<assignment id>)" when lms.toml's [canvas.<assignment>] gives the id; else the assignment's
    folder name (Canvas then adds a new column instead of filling the assignment's)."""
    given = settings.get(assignment, {})
    return f"{given.get('name') or assignment} ({given['id']})" if str(given.get("id", "")).strip() else assignment


def missing_settings(settings: dict, assignments) -> list[str]:
    """Assignments whose Canvas column has no id yet (the instructor is told how to add it)."""
    return [a for a in sorted(assignments) if column(settings, a) == a]


def missing_setting(assignment: str, settings_file: str) -> str:
    return (f"Canvas will add a new column for {assignment} instead of filling its own: give its "
            f"assignment id in {settings_file} (the number at the end of the assignment's "
            f"address in Canvas)")


def grade_files(rows: dict, scores: dict, settings: dict) -> list[GradeFile]:
    """The gradebook import: a row per Canvas user, a column per assignment (see column), and Canvas's "Points
    Possible" row. rows: (student, assignment) -> roster row; scores: the same keys -> (score, max score, graded);
    settings: lms.toml's [canvas] table. Canvas matches rows by its user ID; the SIS columns stay empty (the download
    does not carry them)."""
    assignments = sorted({a for _, a in rows})
    columns = {a: column(settings, a) for a in assignments}
    maxima = {a: max(scores[key][1] for key in rows if key[1] == a) for a in assignments}
    students: dict[str, dict] = {}
    for (student, assignment), row in sorted(rows.items()):
        line = students.setdefault(row["lms_user_id"], {"Student": row["name"], "ID": row["lms_user_id"]})
        line[columns[assignment]] = score_or_blank(scores[student, assignment])
    points_possible = ["    Points Possible", "", "", "", ""] + [maxima[a] for a in assignments]
    return [GradeFile(GRADE_FILE, GRADE_FIELDS + [columns[a] for a in assignments], list(students.values()),
                      [points_possible])]
