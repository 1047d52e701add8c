"""autograder/reports/class.html: the class at a glance, one self-contained page (no scripts, no CDN).

Scores (final, with the automatic ones beside them), per-test pass rates, the class's mistakes grouped by
diagnosed cause (with who made them, linked to their feedback), parts not attempted, time per notebook,
students who need attention (by the kind of what happened, and untouched or byte-identical files). Figures
are small SVGs drawn by reports/charts.py and set in the page, each with alt text that states what it shows.
Everything a student controls (ids, names, notes, diagnoses quoting their code) is HTML-escaped.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import os
import pathlib
import re
import statistics
import urllib.parse
from collections.abc import Sequence

from posenc_autograder import settings, words
from posenc_autograder.checks import REGISTRY
from posenc_autograder.course import Course
from posenc_autograder.intake import attempts
from posenc_autograder.reports import charts, feedback, late_policy, templating
from posenc_autograder.results import (
    STUB_ERROR,
    Asked,
    GradedTest,
    Note,
    NotebookResult,
    NoteKind,
    Problem,
    ProblemKind,
)

# Each kind of note (results.NoteKind) in the words of the "Why" column. Whether a note puts its student among those
# needing attention is the kind's `asks` (someone must act), not this table: it words every kind.
WHY = {NoteKind.UNREADABLE: "not graded", NoteKind.SUBMISSION: "submission problem",
       NoteKind.ASSEMBLY: "cells restored or added", NoteKind.EDITED_READ_ONLY: "edited read-only cells",
       NoteKind.CRASHED: "crashed or was killed", NoteKind.TIMEOUT: "timeout", NoteKind.OUTPUT_FLOOD: "output flood",
       NoteKind.OUTPUT_CUT: "output cut", NoteKind.UNREADABLE_DATA: "sent the grader data it could not read",
       NoteKind.MEMORY: "memory limit", NoteKind.GRADER_ERROR: "grader error",
       NoteKind.FIX_FIRST: "one cause explains several failures", NoteKind.BROKEN_CELL: "an answer cell did not run",
       NoteKind.RAISED_AFTER_DEFINING: "an answer cell raised after defining its functions",
       NoteKind.OWN_CELL_RAISED: "an error in the student's own cell", NoteKind.SKIPPED_MAGIC: "magics skipped",
       NoteKind.REDEFINED: "a later definition graded",
       NoteKind.SCORES_KEPT: "a rerun scored lower; earlier scores kept",
       NoteKind.REGRADE: "score changed by a regrade", NoteKind.OTHER: "see the notes"}
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5rem; }
td, th { border-bottom: 1px solid #ddd; padding: .4rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); gap: 1.5rem; }
figure { margin: 0; } svg.chart { width: 100%; height: auto; }   /* scaled to its column, aspect kept */
figcaption { font-size: .9em; color: #555; } .late { color: #b42318; font-weight: 600; }
.auto { color: #555; font-size: .9em; } td.example { font-size: .9em; overflow-wrap: anywhere; min-width: 12rem; }
td a { overflow-wrap: anywhere; } td[data-label="Who"] { min-width: 10rem; }
td.label { min-width: 10rem; } td.tests { min-width: 12rem; }
/* anywhere, not break-word: only it lets a long identifier in a label or a test's name wrap when the columns are
   sized, so the example and the students keep their width instead of running past the table's box. */
.wide { overflow-x: auto; } td { overflow-wrap: anywhere; }
/* A student's id or name, an assignment's: whole words, wrapping at their parts (templating.name_parts), so the
   other columns give way first ('checkrais e' at 1100 px); a word breaks only where it overflows on its own. */
td.who, td.who a { overflow-wrap: break-word; }
/* A phone's width: each row a card of labelled lines, not columns a few letters wide. */
@media (max-width: 40rem) {
  .wide table, .wide tbody, .wide tr, .wide td { display: block; width: auto; }
  .wide thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
  .wide tr { border-bottom: 2px solid #ccc; padding: .4rem 0; }
  .wide td { border: none; padding: .15rem .25rem; min-width: 0; }
  .wide td[data-label]::before { content: attr(data-label) ": "; font-weight: 600; }
}
"""


def path(course: Course) -> pathlib.Path:
    return course.reports / "class.html"


def notebooks(count: int) -> str:
    return words.count(count, "notebook")


def score_histogram(results: list[NotebookResult]) -> charts.Chart:
    """Graded notebooks per tenth of the points (100 % counts in the last tenth)."""
    shares = [100 * r.score / r.max_score for r in results if r.graded and r.max_score]
    counts = [sum(lo <= s < lo + 10 or (lo == 90 and s == 100) for s in shares) for lo in range(0, 100, 10)]
    alt = ("Histogram of scores in 10 % bins, from 0-10 % to 90-100 %: "
           + ", ".join(str(c) for c in counts) + " notebooks.")
    tooltips = [f"{lo}-{lo + 10} %: {notebooks(count)}" for lo, count in zip(range(0, 100, 10), counts, strict=True)]
    svg = charts.histogram(counts, [str(lo) for lo in range(0, 101, 10)], tooltips, "score (% of points)",
                           "#4c72b0", alt)
    return charts.Chart(svg, alt, "Scores of graded notebooks")


def pass_rates(results: list[NotebookResult]) -> dict[tuple[str, str], tuple[int, int]]:
    """(assignment, test) -> (passed, graded), hidden tests only."""
    counts: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    for r in results:
        for t in r.tests:
            if r.graded and t.hidden:
                counts[(r.assignment, t.cell_id)][0] += t.passed
                counts[(r.assignment, t.cell_id)][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def pass_rate_chart(rates) -> charts.Chart:
    """A bar per hidden test, under its assignment's name when the class has several."""
    several = len({a for a, _ in rates}) > 1
    alt = "Share of students passing each hidden test: " + "; ".join(
        f"{f'{a}: {t}' if several else t} {100 * p / n:.0f} %" for (a, t), (p, n) in rates.items()) + "."
    rows = [(a if several else None, t, p, n) for (a, t), (p, n) in rates.items()]
    return charts.Chart(charts.pass_rate_bars(rows, alt, "#55a868"), alt, "Pass rate per hidden test")


TIME_BINS = 10


def even_bins(values: list[float], bins: int = TIME_BINS) -> tuple[list[float], list[int]]:
    """(bounds, counts) of `bins` equal bins from the least value to the greatest (a bin holds its lower bound, the
    last one also its upper; one value alone gets a bin a second wide around it)."""
    lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    bounds = [lo + (hi - lo) * i / bins for i in range(bins)] + [hi]
    counts = [0] * bins
    for value in values:
        i = min(int((value - lo) * bins / (hi - lo)), bins - 1)
        i = i - 1 if value < bounds[i] else i + 1 if i < bins - 1 and value >= bounds[i + 1] else i
        counts[i] += 1
    return bounds, counts


def bound_labels(bounds: list[float]) -> list[str]:
    """The bins' bounds written with as few decimals as keep them apart and each within a quarter bin of its value
    (0.30, 0.32, 0.34 for narrow bins of fast notebooks, where one decimal wrote 0.3, 0.3, 0.3)."""
    step = (bounds[-1] - bounds[0]) / (len(bounds) - 1)
    for decimals in range(1, 4):
        labels = [f"{b:.{decimals}f}" for b in bounds]
        near = all(abs(float(t) - b) <= step / 4 for t, b in zip(labels, bounds, strict=True))
        if near and len(set(labels)) == len(labels):
            return labels
    return [f"{b:.4g}" for b in bounds]


def time_chart(results: list[NotebookResult]) -> charts.Chart:
    seconds = sorted(r.seconds for r in results if r.graded)
    caption = "Time per notebook"
    if not seconds:
        alt = "No notebook was run."
        return charts.Chart(charts.empty(alt, "no notebook was run"), alt, caption)
    alt = (f"Histogram of grading time per notebook: median {statistics.median(seconds):.1f} s, "
           f"slowest {seconds[-1]:.1f} s, over {len(seconds)} notebooks.")
    bounds, counts = even_bins(seconds)
    labels = bound_labels(bounds)
    tooltips = [f"{lo}-{hi} s: {notebooks(count)}"
                for (lo, hi), count in zip(itertools.pairwise(labels), counts, strict=True)]
    svg = charts.histogram(counts, labels, tooltips, "seconds to grade one notebook",
                           "#dd8452", alt)
    return charts.Chart(svg, alt, caption)


NOT_ATTEMPTED = ("template stub", STUB_ERROR)     # what a probe says of an untouched function


def likely_cause(problem) -> str | None:
    """The diagnosed cause of a problem: Problem.cause; for a test that produced no answer, why (its text); or, for a
    result stored before problems carried their cause, the text's "Likely cause: ..."."""
    cause = problem.cause
    if cause is None and problem.kind == ProblemKind.NOT_RUN:
        cause = problem.text            # why no answer came (the notebook stopped in a cell): one cause, every test
    elif cause is None and "Likely cause: " in problem.text:
        cause = problem.text.split("Likely cause: ", 1)[1]
    return cause.strip().rstrip(".") if cause else None


def _not_attempted(problem) -> bool:
    return problem.at_stub or any(marker in problem.text for marker in NOT_ATTEMPTED)


@dataclasses.dataclass
class MistakeRow:
    """One mistake of the class: who made it, the hidden tests it cost them, and what one feedback said."""
    assignment: str
    label: str
    example: str
    results: list[NotebookResult] = dataclasses.field(default_factory=list)
    tests: dict[str, float] = dataclasses.field(default_factory=dict)     # cell id -> points it cost the class
    counted: set = dataclasses.field(default_factory=set)                 # (student, cell id) already added
    # results by notebook: an equal result has the same notebook, so `in results` is asked of those few only (a scan
    # of every result with a deep comparison each was quadratic in the students a mistake names)
    _named: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def add(self, result: NotebookResult, test: GradedTest, share: float = 1.0, points: float | None = None) -> None:
        """`share`: the part of the test's lost points this row's mistake cost; `points`: the test's points in the
        grade (an instructor's manual grade), if not its automatic ones. A test the grade gives in full cost nothing:
        the student is still named, the test is not."""
        same = self._named.setdefault((result.student, result.assignment, result.notebook), [])
        if result not in same:
            same.append(result)
            self.results.append(result)
        lost = test.max_points - (test.points if points is None else points)
        if (result.student, test.cell_id) not in self.counted and lost > 0:
            self.counted.add((result.student, test.cell_id))
            self.tests[test.cell_id] = self.tests.get(test.cell_id, 0.0) + share * lost


def _subjects(cell_id: str) -> set[str]:
    """The functions a hidden test judges (a contracts test judges them all)."""
    test = REGISTRY.get(cell_id)
    return set(test.subjects) if test is not None else set()


def _part(cell_id: str) -> str:
    return REGISTRY[cell_id].answer_cell if cell_id in REGISTRY else cell_id


def _stub_shares(test: GradedTest, stubbed: list[GradedTest]) -> dict[str, float]:
    """part -> its share of a stubbed test's lost points: a test of several functions (the contracts test) is
    shared among the parts whose own stubbed tests judge its functions, by how many of them each holds (a case
    each); any other test, or one no other stubbed test explains, is its answer cell's. A test that reads the others'
    verdicts (the contracts test) holds no function: its answer cell is where it sits, not a part it judges."""
    subjects = _subjects(test.cell_id)
    holders: dict[str, str] = {}
    parts = (o for o in stubbed if o is not test and not (o.cell_id in REGISTRY and REGISTRY[o.cell_id].reads_verdicts))
    for other in sorted(parts, key=lambda o: len(_subjects(o.cell_id))):
        for function in sorted(_subjects(other.cell_id) & subjects):
            holders.setdefault(function, _part(other.cell_id))
    counts = collections.Counter(holders.values())
    if len(subjects) <= 1 or not counts:
        return {_part(test.cell_id): 1.0}
    return {part: count / sum(counts.values()) for part, count in counts.items()}


def _rank(problem) -> int:
    """How definite a problem's cause is: 0 a diagnosed mistake, 1 an exception the code raised, 2 a pattern of the
    difference (or several mistakes that fit alike)."""
    return 2 if problem.pattern else 1 if problem.error else 0


def _best_causes(own: dict, related: list[dict]) -> dict:
    """The causes a failed test is counted under: its own diagnosed mistakes, else those of the same student's failed
    tests of the same functions (one bug, one row), else the exceptions it or they raised; {} when only patterns
    or nothing is named (the first of these failures then gives the row)."""
    for rank in (0, 1):
        found = {c: p for c, p in own.items() if c and _rank(p) == rank} or \
            {c: p for causes in related for c, p in causes.items() if c and _rank(p) == rank}
        if found:
            return found
    return {}


def grouped_mistakes(results: list[NotebookResult], cell_scores: dict | None = None
                     ) -> tuple[list[MistakeRow], list[MistakeRow]]:
    """(mistakes by cause, parts not attempted), most students first; what each cost is counted in the points of the
    grade (`cell_scores`: gradebook.class_scores' cell scores, manual grades included), else the automatic ones. A
    failed hidden test counts under each mistake its problems diagnose; one that diagnoses none counts under the
    mistakes the same student's failed tests of one of its functions diagnose (the contracts test of a function whose
    values are wrong; a case whose difference only has a pattern), and under a pattern only when no mistake is
    diagnosed; a test every problem of which is a template stub counts as its part not attempted."""
    mistakes: dict[tuple, MistakeRow] = {}
    stubs: dict[tuple, MistakeRow] = {}
    for r in results:
        failed = [t for t in r.tests if r.graded and t.hidden and not t.passed]
        graded = {cell: scored[0] for cell, scored in (cell_scores or {}).get((r.student, r.assignment, r.notebook),
                                                                                {}).items()}
        named: dict[str, dict[str | None, Problem]] = {}          # cell id -> {cause: example problem}
        stubbed: list[tuple[GradedTest, Problem]] = []
        for t in failed:
            examples = [p for p in t.problems if p.kind != ProblemKind.MORE] or t.problems
            if all(_not_attempted(p) for p in examples):
                stubbed.append((t, examples[0]))
                continue
            named[t.cell_id] = {likely_cause(p): p for p in examples if likely_cause(p)} or {None: examples[0]}
        for t, example in stubbed:
            for part, share in _stub_shares(t, [s for s, _ in stubbed]).items():
                stubs.setdefault((r.assignment, part), MistakeRow(r.assignment, part, example.text)).add(
                    r, t, share, graded.get(t.cell_id))
        for cell_id, found in named.items():
            test = next(t for t in failed if t.cell_id == cell_id)
            related = [other for other in named if other != cell_id and _subjects(other) & _subjects(cell_id)]
            # Failures of the same functions that no one diagnosed: one row, the first one's (its pattern, or itself).
            first = next(other for other in named if other == cell_id or other in related)
            causes = _best_causes(found, [named[other] for other in related]) or named[first]
            for cause, problem in causes.items():
                key = (r.assignment, re.sub(r"\d[\d.e+-]*", "#", cause) if cause else f"test {first}")
                label = cause or f"{first} failed without a named cause"
                mistakes.setdefault(key, MistakeRow(r.assignment, label, problem.text)).add(
                    r, test, points=graded.get(test.cell_id))
    order = lambda row: (-len(row.results), row.assignment, row.label)  # noqa: E731
    return sorted(mistakes.values(), key=order), sorted(stubs.values(), key=order)


def submission_flags(results: list[NotebookResult], files: dict | None = None) -> dict[tuple, list[str]]:
    """(student, assignment, notebook) -> what is odd about the file itself, as grading found it: untouched (its
    answer cells are the released template's: the result says) or byte-identical to a classmate's (by the digests
    `files`, results_store.GradedFile by key, keep). No submission is read again."""
    flags: dict[tuple, list[str]] = collections.defaultdict(list)
    digests: dict[str, list[tuple]] = collections.defaultdict(list)
    for r in results:
        key = (r.student, r.assignment, r.notebook)
        if r.untouched:
            flags[key].append(UNTOUCHED)
        if (files or {}).get(key) is not None and files[key].sha256:
            digests[files[key].sha256].append(key)
    for same in digests.values():
        for key in same if len(same) > 1 else []:
            others = ", ".join(k[0] for k in sorted(same) if k != key)
            flags[key].append(f"byte-identical to {others}")
    return flags


UNTOUCHED = "untouched: the answers are the released template"


def attention(result: NotebookResult, notes: list[Note] | None = None) -> list[str]:
    """Why an instructor should look at this notebook: it was not graded, or a note asks someone to act
    (NoteKind.asks, as the run report decides); a note that only informs is no reason. `notes`: the result's as its
    points stand (feedback.notes_as_scored), when not its own."""
    reasons = [] if result.graded else ["not graded"]
    for note in result.notes if notes is None else notes:
        why = WHY[note.kind] if note.kind.asks is not Asked.NOBODY else None
        if why and why not in reasons:
            reasons.append(why)
    return reasons


def feedback_link(course: Course, result: NotebookResult) -> str:
    """The student's feedback page, relative to the dashboard (the template escapes it)."""
    return urllib.parse.quote(os.path.relpath(feedback.path(course.feedback, result), course.reports))


def beside_the_score(automatic: float, final: float, before_late: float | None, late: bool) -> list[str]:
    """What stands beside a final score where it is not the automatic one: the automatic score where a manual grade
    replaced it, the score before the late deduction where there was one."""
    if before_late is None:                  # no score before the late policy given: the final against the automatic
        return [f"automatic {automatic:g}"] if final != automatic else []
    return ([f"automatic {automatic:g}"] if before_late != automatic else []) \
        + ([f"{before_late:g} before the late deduction"] if late and final != before_late else [])


def render(course: Course, results: list[NotebookResult], refused: Sequence[str] = (), finals: dict | None = None,
           lateness: dict | None = None, files: dict | None = None, doors=(), deadlines=None,
           before_late: dict | None = None, cell_scores: dict | None = None) -> str:
    """The page; `refused`: folders in submitted/ the grader would not read (why, per folder); `finals`:
    (student, assignment) -> (score, max) from the gradebook, manual grades included, after the late policy
    (`before_late`: the same before it; `cell_scores`: each test's points there, gradebook.class_scores');
    `files`: what grading found of each file (submission_flags); `deadlines` (late_policy.Deadlines, by default the
    course's): each submission's time and late flag, as grades.csv states them."""
    finals = finals or {}
    deadlines = deadlines or late_policy.Deadlines(course)
    people = deadlines.people
    graded = [r for r in results if r.graded]
    rates = pass_rates(results)
    figures = [score_histogram(results)] + ([pass_rate_chart(rates)] if rates else []) + [time_chart(results)]
    mistakes, stubs = grouped_mistakes(results, cell_scores)
    flags = submission_flags(results, files)
    for finding in doors:                                 # attempts.Finding: two doors disagree
        for r in results:
            if (r.student, r.assignment) == (finding.student, finding.assignment):
                flags.setdefault((r.student, r.assignment, r.notebook), []).append(finding.text())
    # The notes as the student's page states them: a cost an instructor restored by hand is not said here either.
    noted = [(r, feedback.notes_as_scored(r, feedback.scored_rows(
        r, (cell_scores or {}).get((r.student, r.assignment, r.notebook))))) for r in results]
    needing = [(r, attention(r, notes) + flags.get((r.student, r.assignment, r.notebook), []), notes)
               for r, notes in noted]
    needing = [(r, why, notes) for r, why, notes in needing if why]
    students = []
    for r in results:
        person = people.get((r.student, r.assignment), {})
        final, maximum = finals.get((r.student, r.assignment), (r.score, r.max_score))
        late = (lateness or {}).get((r.student, r.assignment))
        before = (before_late or {}).get((r.student, r.assignment), (None,))[0]
        students.append({"r": r, "name": person.get("name", ""),
                         "beside": beside_the_score(r.score, final, before, late is not None),
                         "submitted": deadlines.submitted_read(r.student, r.assignment),
                         "late": f"late: −{late.percent:g}% (late policy)" if late
                         else "late" if deadlines.late_stated(r.student, r.assignment) == "yes" else "",
                         "final": final, "maximum": maximum})
    mean = statistics.mean(finals.get((r.student, r.assignment), (r.score, r.max_score))[0] / r.max_score
                           for r in graded if r.max_score) if graded else 0
    return templating.render(
        "dashboard.html", style=STYLE, results=results, graded=len(graded), mean=f"{100 * mean:.0f}",
        needing_count=len(needing) + len(refused), figures=figures, mistakes=mistakes, stubs=stubs,
        several=len({row.assignment for row in mistakes + stubs}) > 1, needing=needing, refused=list(refused),
        students=students, link=lambda result: feedback_link(course, result),
        counted=attempts.RULES[settings.load(course).course.counted_attempt])


def write(course: Course, results: list[NotebookResult], refused: Sequence[str] = (),
          finals: dict | None = None, lateness: dict | None = None, files: dict | None = None, doors=(),
          deadlines=None, before_late: dict | None = None, cell_scores: dict | None = None) -> pathlib.Path:
    """`lateness`: (student, assignment) -> late_policy.Lateness, shown beside the submission time; `doors`:
    attempts.Finding, students whose attempts from two doors disagree (named among those needing attention)."""
    course.reports.mkdir(parents=True, exist_ok=True)
    path(course).write_text(render(course, results, refused, finals, lateness, files, doors, deadlines, before_late,
                                   cell_scores))
    return path(course)
