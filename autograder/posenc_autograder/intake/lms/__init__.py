"""What an LMS download's file names say: who submitted, when, which attempt, and the original file name; one
module per LMS, found in REGISTRY, which collect, the grade files and the feedback bundles loop over.

Identity comes only from the part of a name the LMS generates, parsed once and anchored at the start
of the member's name: Canvas's "<login>[_late]_<user id>_<attachment id>_", Moodle's outermost
"<Full Name>_<participant>_assignsubmission_<plugin>[_]/" folder (or the same prefix on a flat file),
Blackboard's "<Assignment>_<user>_attempt_<time>". What follows is the student's file name, opaque:
whatever it says about users, participants or times is never read as such (`claims_other`).

Each module (canvas, moodle, blackboard, plain) has NAME, FALLBACK (the one format used when no other naming
explains a download), parse(member, expected, **context) -> Entry | None, attempt_label(entry) and
return_name(roster row, notebook) (its feedback page's name in the zip the LMS takes back; None: it takes none)
and grade_files(rows, scores, column_of) (the grade files it imports, as data; reports/lms_exports.py writes them).
`detect` picks the format that explains most notebooks. Everything parsed is student-controlled text and is
validated by the caller before it names a folder.
"""
from __future__ import annotations

from posenc_autograder.intake.lms import blackboard, canvas, moodle, plain
from posenc_autograder.intake.lms.base import SAFE_ID, Entry, GradeFile, is_safe_id, slug, usable_id

REGISTRY = {module.NAME: module for module in (canvas, moodle, blackboard, plain)}
FORMATS = tuple(REGISTRY)                                   # the names, for --lms
FALLBACK = next(name for name, module in REGISTRY.items() if module.FALLBACK)

__all__ = ["SAFE_ID", "Entry", "FALLBACK", "GradeFile", "FORMATS", "REGISTRY", "blackboard", "canvas",
           "claims_other", "detect", "is_safe_id", "moodle", "plain", "slug", "usable_id"]


def claims_other(entry: Entry) -> str | None:
    """What the student's own file name claims that only the LMS may say (another user's prefix, folder or
    attempt time), or None. Such a name is never believed; the caller refuses the file and says why."""
    if REGISTRY[entry.lms].FALLBACK:
        return None
    if "/" in entry.file_name:
        return "it is inside a sub-folder of the submission (only files at the top of the LMS's folder are taken)"
    for name, module in REGISTRY.items():
        if module.FALLBACK:
            continue
        inner = module.parse(entry.file_name, set())
        if inner and (inner.lms_user_id != entry.lms_user_id or inner.submitted_at is not None):
            return (f"its own name imitates {name}'s naming of another submission ({inner.prefix[:60]!r}); "
                    f"who submitted it and when come only from the LMS's part of the name")
    return None


def detect(notebooks: list[str], expected: set[str]) -> str:
    """The LMS whose naming explains most of the notebooks in the zip (the fallback when none does). Ties, which
    no real download makes, go to the name first in alphabetical order, whatever the registry's order."""
    counts = {name: sum(module.parse(n, expected) is not None for n in notebooks)
              for name, module in REGISTRY.items() if not module.FALLBACK}
    best = min(counts, key=lambda name: (-counts[name], name))
    return best if counts[best] else FALLBACK
