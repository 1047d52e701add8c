"""Text evidence: how much of two students' own code is the same, after removing what is not theirs.

copydetect tokenises the code (names of variables and functions become one symbol, comments and
strings go), fingerprints it by winnowing k-grams, and drops boilerplate fingerprints. Boilerplate
here is the released notebook and the instructor's solution, plus any fragment more than a
common share of the class wrote (a popular idiom is no evidence between two of its users).
Reordered functions and added comments change nothing: fingerprints are compared as sets.
"""
from __future__ import annotations

import collections
import dataclasses
import io

import copydetect
import nbformat

from posenc_autograder.integrity.behaviour import common_threshold
from posenc_autograder.records.evidence import StudentRecord

NOISE_CHARACTERS = 25      # k: matches shorter than this (in filtered code) are noise
WINDOW = 1                 # winnowing window: every k-gram kept (solutions are short)
SMALLEST_WHOLE = 300       # own code shorter than this (filtered characters) counts as this long: two
                           # five-line overrides of one method agree by necessity, not by copying


@dataclasses.dataclass
class TextMatch:
    similarity: float                  # shared share of the two students' own code, averaged (0..1)
    slices: tuple                      # copied character ranges in each student's code (for highlighting)


def fingerprint(code: str, boilerplate=()) -> copydetect.CodeFingerprint | None:
    try:
        return copydetect.CodeFingerprint("solution.py", NOISE_CHARACTERS, WINDOW, boilerplate=list(boilerplate),
                                          language="python", fp=io.StringIO(code))
    except Exception:  # noqa: BLE001 - code the tokeniser cannot read is compared as nothing
        return None


def _weighed(share: float, print_: copydetect.CodeFingerprint) -> float:
    """The shared share of a student's own code, discounted when that code is short."""
    return float(share) * print_.token_coverage / max(print_.token_coverage, SMALLEST_WHOLE)


def instructor_code(*notebooks) -> str:
    """Every code cell of the given notebooks (released starter code, the instructor's solution)."""
    return "\n\n".join(c.source for path in notebooks if path.exists()
                       for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def matches(records: list[StudentRecord], instructor: str) -> dict[tuple[str, str], TextMatch]:
    """(student, student) -> their text match, for pairs sharing any of their own code."""
    base = fingerprint(instructor)
    boilerplate = set(base.hashes) if base else set()
    first = {r.student: fingerprint(r.code, boilerplate) for r in records}
    counts = collections.Counter(h for fp in first.values() if fp for h in fp.hashes)
    common = {h for h, n in counts.items() if n >= common_threshold(len(records))}
    prints = {s: fingerprint(r.code, boilerplate | common) for s, r in
              ((r.student, r) for r in records)}
    found = {}
    students = sorted(s for s, fp in prints.items() if fp and fp.hashes)
    for i, a in enumerate(students):
        for b in students[i + 1:]:
            if not prints[a].hashes & prints[b].hashes:
                continue
            _, shares, slices = copydetect.compare_files(prints[a], prints[b])
            found[(a, b)] = TextMatch(sum(_weighed(share, prints[s]) for share, s in zip(shares, (a, b))) / 2, slices)
    return found
