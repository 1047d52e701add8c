"""What a regrade keeps and says: the grader's fingerprint (its code, limits and released notebooks), the higher
score kept for an unchanged file and grader, and the note on how a changed grader moved the scores."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import pathlib

from posenc_autograder.checks import variants
from posenc_autograder.course import RELEASE_DIRECTORY, Course
from posenc_autograder.results import Note, NotebookResult, NoteKind, Problem
from posenc_autograder.settings import Limits

# The code that decides a score, by package: a change anywhere in these is a new grader, not a flaky rerun.
# (Reports, records, integrity, authoring and devtools only present or store what these decided; the evidence is
# the exception, its digests compared across the whole class.)
GRADING_PACKAGES = ("checks", "probes", "sandbox", "grading", "intake")
GRADING_MODULES = ("course.py", "results.py",
                   "records/evidence.py")   # the integrity evidence's digests: a new format must rewrite them all
PACKAGE = pathlib.Path(__file__).resolve().parents[1]


def grader_fingerprint(course: Course, assignment: str, limits: Limits, package: pathlib.Path = PACKAGE) -> str:
    """Identifies the grader of one assignment: its code, the limits, and the released notebooks."""
    digest = hashlib.sha256(json.dumps(dataclasses.asdict(limits), sort_keys=True).encode())
    digest.update(variants.grader_setting(course).encode())      # other inputs: another grader
    released = sorted((course.path(RELEASE_DIRECTORY) / assignment).glob("*.ipynb"))
    for path in grading_files(package):
        digest.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    for path in released:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def grading_files(package: pathlib.Path) -> list[pathlib.Path]:
    files = [package / name for name in GRADING_MODULES]
    for name in GRADING_PACKAGES:
        files += sorted((package / name).rglob("*.py"))
    return files


def keep_higher_scores(result: NotebookResult, previous: dict | None, digest: str | None,
                       fingerprint: str | None = None) -> NotebookResult:
    """Re-grading the same file with the same grader never lowers a test's score (a loaded machine can time
    out a good answer). A changed grader (checks, limits, released notebook) scores afresh."""
    if (previous is None or digest is None or previous.get("sha256") != digest
            or previous.get("fingerprint") != fingerprint):
        return result
    before = {t["cell_id"]: t for t in previous["result"]["tests"]}
    kept = []
    for test in result.tests:
        old = before.get(test.cell_id)
        if old and old["points"] > test.points and old["max_points"] == test.max_points:
            kept.append(test.cell_id)
            test.points, test.problems = old["points"], [Problem.from_json(p) for p in old["problems"]]
    if kept:
        result.notes.append(Note(NoteKind.SCORES_KEPT, f"this run scored lower on {', '.join(kept)} for an "
                                 f"unchanged file; the earlier, higher scores were kept"))
    return result


def regrade_changes(result: NotebookResult, previous: dict | None, fingerprint: str,
                    digest: str | None = None) -> Note | None:
    """Per test, how the score moved since the last grading by another grader (None: nothing moved), and why:
    the grader changed (a test added, removed or re-pointed by a release is named as such), or the student also
    resubmitted (then the new file may be what moved it)."""
    if previous is None or previous.get("fingerprint") == fingerprint:
        return None
    before = {t["cell_id"]: t for t in previous["result"]["tests"]}
    now = {t.cell_id for t in result.tests}
    changed = [_test_change(t, before.get(t.cell_id)) for t in result.tests]
    moved = [m for m in changed if m] + [f"{cell} removed ({old['points']:g}/{old['max_points']:g} gone)"
                                         for cell, old in before.items() if cell not in now]
    if not moved:
        return None
    total = sum(t["points"] for t in before.values())
    why = ("resubmitted, and graded by a changed grader (checks, limits or released notebook)"
           if digest is not None and previous.get("sha256") not in (None, digest)
           else "regraded with a changed grader (checks, limits or released notebook), same file")
    # The automatic points: a grade an instructor set by hand stays theirs, and the page's header shows the final one.
    return Note(NoteKind.REGRADE, f"{why}: {', '.join(moved)}; automatic total {total:g} → {result.score:g}")


def _test_change(test, old: dict | None) -> str | None:
    """How one test moved: new, re-pointed, scored differently, or checking a different number of input cases (None:
    unchanged)."""
    if old is None:
        return f"{test.cell_id} new ({test.points:g}/{test.max_points:g})"
    cases = _cases_change(test, old)
    if old["max_points"] != test.max_points:
        return (f"{test.cell_id} now out of {test.max_points:g} (was {old['max_points']:g}){cases}: "
                f"{old['points']:g} → {test.points:g}")
    if old["points"] != test.points:
        return f"{test.cell_id}{cases} {old['points']:g} → {test.points:g}"
    return f"{test.cell_id}{cases}, score unchanged ({test.points:g})" if cases else None


def _cases_change(test, old: dict) -> str:
    """', now N input cases (was M)' when the hidden test checks a different number of cases, else ''."""
    before, now = old.get("cases"), test.cases
    if before and now and before[1] != now[1]:
        return f", now {now[1]} input cases (was {before[1]})"
    return ""
