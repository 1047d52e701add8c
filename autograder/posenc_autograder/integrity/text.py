"""Text evidence: how much of two students' own code is the same, after removing what is not theirs.

copydetect tokenises the code (names of variables and functions become one symbol, comments and
strings go), fingerprints it by winnowing k-grams, and drops boilerplate fingerprints. Boilerplate
here is the released notebook and the instructor's solution, plus any fragment more than a
common share of the class wrote (a popular idiom is no evidence between two of its users).
Reordered functions and added comments change nothing: fingerprints are compared as sets. String
constants that compile as Python are compared as code too (a copy run through exec("...") is a copy).
"Common" counts clusters of near-identical submissions once, so a group of copies cannot make its own
code an idiom. Pairs are found through an inverted index from each fingerprint to its students, and
copydetect compares only pairs that share one: the work grows with the pairs that share code.
"""
from __future__ import annotations

import ast
import collections
import copy
import dataclasses
import io
import itertools
import tokenize
from typing import TYPE_CHECKING

import nbformat

from posenc_autograder.integrity.behaviour import common_threshold

if TYPE_CHECKING:
    import copydetect

NOISE_CHARACTERS = 25      # k: matches shorter than this (in filtered code) are noise
WINDOW = 1                 # winnowing window: every k-gram kept (solutions are short)
SMALLEST_WHOLE = 300       # own code shorter than this (filtered characters) counts as this long: two
                           # five-line overrides of one method agree by necessity, not by copying
CLUSTER_PRINTS = 100       # students sharing this many fingerprints no one else has are one cluster (a
                           # one-line mistake written from the same template leaves under 80)
NEAR_IDENTICAL = 0.5       # ... and when that is at least this share of each one's own distinctive code
CODE_STRING = 40           # string constants this long that compile as Python are compared as code
STRING_DEPTH = 3           # exec("exec('...')"): strings inside strings, this deep


@dataclasses.dataclass
class TextMatch:
    similarity: float                  # shared share of the two students' own code, averaged (0..1)
    slices: tuple                      # copied character ranges in each student's code (for highlighting)


def fingerprint(code: str, boilerplate=()) -> copydetect.CodeFingerprint | None:
    # Imported here, not at the top: it imports matplotlib's pyplot (~1 CPU-s), which only a comparison needs, not
    # every command or test process that imports the report.
    import copydetect
    try:
        return copydetect.CodeFingerprint("solution.py", NOISE_CHARACTERS, WINDOW, boilerplate=list(boilerplate),
                                          language="python", fp=io.StringIO(code))
    except Exception:  # noqa: BLE001 - code the tokeniser cannot read is compared as nothing
        return None


def without(print_: copydetect.CodeFingerprint, boilerplate: set) -> copydetect.CodeFingerprint:
    """The fingerprint of the same code with these fingerprints left out too: its code as tokenised once (the
    tokenising is most of what a fingerprint costs), winnowed again."""
    from copydetect.utils import get_document_fingerprints, get_token_coverage
    again = copy.copy(print_)
    again.hashes, again.hash_idx = get_document_fingerprints(print_.filtered_code, print_.k, WINDOW, list(boilerplate))
    again.token_coverage = get_token_coverage(again.hash_idx, print_.k, len(print_.filtered_code))
    return again


def _weighed(share: float, print_: copydetect.CodeFingerprint) -> float:
    """The shared share of a student's own code, discounted when that code is short."""
    return float(share) * print_.token_coverage / max(print_.token_coverage, SMALLEST_WHOLE)


def instructor_code(*notebooks) -> str:
    """Every code cell of the given notebooks (released starter code, the instructor's solution)."""
    return "\n\n".join(c.source for path in notebooks if path.exists()
                       for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")


def code_strings(code: str, depth: int = STRING_DEPTH) -> list[str]:
    """String constants of the code that compile as Python statements (not a bare name or value)."""
    found = []
    try:
        tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError, ValueError):      # IPython magics and broken cells: what was read
        tokens = []
    for token in tokens:
        try:
            value = ast.literal_eval(token)
            tree = ast.parse(value) if isinstance(value, str) and len(value) >= CODE_STRING else None
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if tree and any(not (isinstance(n, ast.Expr) and isinstance(n.value, (ast.Constant, ast.Name)))
                        for n in tree.body):
            found.append(value)
            found += code_strings(value, depth - 1) if depth > 1 else []
    return found


def comparable_code(code: str) -> str:
    """The code as compared and shown: the student's code, then any string constants that are code."""
    strings = code_strings(code)
    return code + "".join(f"\n\n# string constant compiled as code:\n{s}" for s in strings)


def clusters(prints: dict[str, set]) -> dict[str, str]:
    """student -> a representative of their cluster: students (at most half the class) sharing CLUSTER_PRINTS
    fingerprints that no one else in the class has (near-identical submissions), joined; others their own."""
    holders = collections.defaultdict(list)
    for student, hashes in prints.items():
        for h in hashes:
            holders[h].append(student)
    # Code that most of the class has in common is theirs by the course, not by copying.
    groups = collections.Counter(tuple(sorted(s)) for s in holders.values() if 1 < len(s) <= len(prints) // 2)
    leader = {s: s for s in prints}

    def find(s):
        while leader[s] != s:
            leader[s] = leader[leader[s]]
            s = leader[s]
        return s

    distinct = {s: sum(1 for h in hashes if len(holders[h]) <= len(prints) // 2) for s, hashes in prints.items()}
    for group, count in groups.items():
        # Near-identical: what they alone share is most of what each wrote beyond the class's common code.
        if count >= CLUSTER_PRINTS and all(count >= NEAR_IDENTICAL * distinct[s] for s in group):
            for other in group[1:]:
                leader[find(other)] = find(group[0])
    return {s: find(s) for s in prints}


@dataclasses.dataclass
class FirstPrints:
    boilerplate: set                   # the instructor's fingerprints
    prints: dict                       # student -> the fingerprint of their code beyond them (None: unreadable)

    def own(self) -> dict[str, set]:
        """student -> the fingerprints of their own code."""
        return {s: set(fp.hashes) if fp else set() for s, fp in self.prints.items()}


def first_prints(records, instructor: str) -> FirstPrints:
    """The instructor's fingerprints (boilerplate), and each student's own beyond them."""
    base = fingerprint(instructor)
    boilerplate = set(base.hashes) if base else set()
    made: dict[str, copydetect.CodeFingerprint | None] = {}     # the same code (an untouched template, a verbatim
    for r in records:                                            # copy) fingerprinted once: compared, never changed
        if r.code not in made:
            made[r.code] = fingerprint(r.code, boilerplate)
    return FirstPrints(boilerplate, {r.student: made[r.code] for r in records})


def matches(records, first: FirstPrints, cluster: dict[str, str]) -> dict[tuple[str, str], TextMatch]:
    """(student, student) -> their text match, for pairs sharing any of their own code; records carry
    .student and .code (comparable_code applied), as first_prints was given them; cluster from clusters."""
    independent = collections.defaultdict(set)        # fingerprint -> clusters writing it
    for student, hashes in first.own().items():
        for h in hashes:
            independent[h].add(cluster.get(student, student))
    common = {h for h, n in independent.items() if len(n) >= common_threshold(len(records))}
    prints = {s: without(fp, first.boilerplate | common) if fp else None for s, fp in first.prints.items()}
    index = collections.defaultdict(list)
    for student in sorted(s for s, fp in prints.items() if fp and fp.hashes):
        for h in set(prints[student].hashes):
            index[h].append(student)
    candidates = {pair for students in index.values() for pair in itertools.combinations(students, 2)}
    import copydetect  # when first used (fingerprint says why)
    found = {}
    for a, b in sorted(candidates):
        _, shares, slices = copydetect.compare_files(prints[a], prints[b])
        weighed = sum(_weighed(share, prints[s]) for share, s in zip(shares, (a, b), strict=True))
        found[(a, b)] = TextMatch(weighed / 2, slices)
    return found
