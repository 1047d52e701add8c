"""Canvas: "<login>[_late]_<user id>_<attachment id>_<file>[-<n>].ipynb"; feedback goes back through
"Re-upload submissions" under the download's own prefix."""
from __future__ import annotations

import re

from posenc_autograder.intake.lms.base import Entry, GradeFile, basename, score_or_blank

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


GRADE_FIELDS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
GRADE_FILE = "grades-canvas.csv"


def grade_files(rows: dict, scores: dict, column_of) -> list[GradeFile]:
    """The gradebook import: a row per Canvas user, a column per assignment named column_of(assignment), and
    Canvas's "Points Possible" row. rows: (student, assignment) -> roster row; scores: the same keys ->
    (score, max score, graded). Canvas matches rows by its user ID; the SIS columns stay empty (the download
    does not carry them)."""
    assignments = sorted({a for _, a in rows})
    columns = {a: column_of(a) for a in assignments}
    maxima = {a: max(scores[key][1] for key in rows if key[1] == a) for a in assignments}
    students: dict[str, dict] = {}
    for (student, assignment), row in sorted(rows.items()):
        line = students.setdefault(row["lms_user_id"], {"Student": row["name"], "ID": row["lms_user_id"]})
        line[columns[assignment]] = score_or_blank(scores[student, assignment])
    points_possible = ["    Points Possible", "", "", "", ""] + [maxima[a] for a in assignments]
    return [GradeFile(GRADE_FILE, GRADE_FIELDS + [columns[a] for a in assignments], list(students.values()),
                      [points_possible])]
