"""The "Fix this first" note: a diagnosed cause behind several failed tests. Grading adds it; the feedback page works
it out again over the tests that still cost points once an instructor has set some by hand. Light to import (no
nbformat, no sandbox): the feedback page needs it.
"""
from __future__ import annotations

import re

from posenc_autograder.checks import REGISTRY
from posenc_autograder.results import GradedTest, Note, NoteKind, ProblemKind, missing_module_hint


def fix_this_first(tests: list[GradedTest]) -> list[Note]:
    """One note naming a diagnosed cause (Problem.cause) that explains failures in several tests, so feedback
    opens with it; causes that differ only in a measured number count as one. The contracts test is not counted:
    the cause it names for a function whose values are wrong is its value tests' own, not one more failure."""
    failing: dict[str, list[str]] = {}          # cause, its measured numbers left out -> [first wording, ids]
    raised: set[str] = set()                    # causes that are an exception's message, not a diagnosed mistake
    for test in tests:
        if test.cell_id in REGISTRY and REGISTRY[test.cell_id].reads_verdicts:
            continue
        for problem in test.problems:
            cause = getattr(problem, "cause", None)
            if cause and problem.kind != ProblemKind.NOT_JUDGED:     # a cell that did not run: its own note says so
                entry = failing.setdefault(re.sub(r"\d[\d.e+-]*", "#", cause), [cause])
                if test.cell_id not in entry:
                    entry.append(test.cell_id)
                if problem.error and cause.startswith(f"{problem.error}:"):
                    raised.add(cause)
    shared = [entry for entry in failing.values() if len(entry) > 2]
    if not shared:
        return []
    cause, *ids = max(shared, key=len)
    if cause in raised:
        hint = missing_module_hint(cause)
        return [Note(NoteKind.FIX_FIRST, f"Fix this first: your code raised {cause}; that one error fails "
                                         f"{', '.join(ids)} (" + (hint or "no known mistake matches it, so start "
                                                                        "from the error") + ").")]
    return [Note(NoteKind.FIX_FIRST,
                 f"Fix this first: {cause}. This one mistake explains the failures of {', '.join(ids)}.")]
