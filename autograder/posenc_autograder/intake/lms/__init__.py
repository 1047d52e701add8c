"""What an LMS download's file names say: who submitted, when, which attempt, and the original file name; one
module per LMS, found in REGISTRY, which collect, the grade files and the feedback bundles loop over.

Identity comes only from the part of a name the LMS generates, parsed once and anchored at the start
of the member's name: Canvas's "<login>[_late]_<user id>_<attachment id>_", Moodle's outermost
"<Full Name>_<participant>_assignsubmission_<plugin>[_]/" folder (or the same prefix on a flat file),
Blackboard's "<Assignment>_<user>_attempt_<time>". What follows is the student's file name, opaque:
whatever it says about users, participants or times is never read as such (`claims_other`).

Each module here is one LMS, found by `discover` (a new LMS is one more module in this folder); it has
- NAME (what --lms and the roster call it), TITLE (what the instructor reads), FALLBACK (the one format used when no
  other naming explains a download);
- NOTES: None, or the base.Notes it writes beside the notebooks (Blackboard's '<attempt>.txt'), which collect reads
  and checks against the names;
- context(notebooks, notes) -> the keywords parse needs from the whole download;
  parse(member, expected, **context) -> Entry | None; attempt_label(entry) -> which attempt was kept, in its terms;
- return_name(roster row, notebook): its feedback page's name in the zip the LMS takes back (None: it takes none),
  and TAKES_BACK, the LMS's name for where that zip goes (None);
- grade_files(rows, scores, settings): the grade files it imports, as data (reports/lms_exports.py writes them),
  settings being its table of autograder/lms.toml; missing_settings(settings, assignments): the assignments its
  files cannot name yet, each explained by missing_setting(assignment, settings file).
`detect` picks the format that explains most notebooks. Everything parsed is student-controlled text and is
validated by the caller before it names a folder.
"""
from __future__ import annotations

import importlib
import pkgutil

from posenc_autograder.intake.lms.base import SAFE_ID, Entry, GradeFile, is_safe_id, slug, usable_id

SHARED = {"base"}                  # the modules here that are no LMS


def discover() -> dict:
    """NAME -> module for every LMS module in this folder, in the order of their names."""
    modules = (importlib.import_module(f"{__name__}.{info.name}")
               for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name)
               if info.name not in SHARED)
    return {module.NAME: module for module in modules}


REGISTRY = discover()
FORMATS = tuple(REGISTRY)                                   # the names, for --lms
FALLBACK = next(name for name, module in REGISTRY.items() if module.FALLBACK)

__all__ = ["SAFE_ID", "Entry", "FALLBACK", "GradeFile", "FORMATS", "REGISTRY", "claims_other", "detect", "discover",
           "is_safe_id", "slug", "usable_id"]     # each LMS module is an attribute too (lms.canvas), once discovered


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
