"""Per-student feedback: each test's name, points and diagnosis. Never the hidden tests' code, nor inputs other
than the student's own (drawn for them alone, shown folded when the policy allows).

Points come from the gradebook when it has them, so a grade changed by hand in formgrader shows up;
`make feedback` (orchestration/rebuild.py) rebuilds every page after manual grading.
"""
from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.intake import attempts
from posenc_autograder.reports import late_policy, templating

if TYPE_CHECKING:             # records.graded imports the gradebook (nbgrader): a run with nothing to grade needs none
    from posenc_autograder.records import graded
from posenc_autograder.reports.late_policy import penalised
from posenc_autograder.results import (
    LEADING,
    SEE_FIX_FIRST,
    GradedTest,
    Note,
    NotebookResult,
    NoteKind,
    Problem,
    ProblemKind,
    in_cell_order,
)

TEMPLATE = "feedback.html"
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; } \
td, th { border-bottom: 1px solid #ddd; padding: .5rem; vertical-align: top; }
th { text-align: left; background: #f4f4f4; } .pass { color: #1a7f37; } .fail { color: #b42318; }
.kind { font-size: .85em; color: #555; white-space: nowrap; } ul.notes li { margin: .3rem 0; }
td ul { margin: 0; padding-left: 1.1rem; } td li { overflow-wrap: anywhere; } table.tests td:last-child { width: 55%; }
details pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: .4rem; user-select: all; }
pre.quoted { max-height: 24rem; overflow: auto; user-select: text; }
.inputs { font-size: .9em; color: #444; margin-top: .3rem; } code.snippet { overflow-wrap: anywhere; }
pre.snippet { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: .4rem; margin: .3rem 0; }
h1 { overflow-wrap: anywhere; font-size: 1.6rem; }
@media (max-width: 40rem) {
  table.tests thead { display: none; } table.tests tr { display: block; border-bottom: 2px solid #ccc; }
  table.tests td, table.tests td:last-child { display: block; width: auto; border: 0; padding: .25rem 0; }
  .kind { white-space: normal; }
}
"""


def render(result: NotebookResult, scores: dict[str, tuple[float, bool]] | None = None, late=None,
           back: str | None = None, comments: Sequence[tuple[str, str]] = (), counted: str | None = None,
           not_counted: str | None = None) -> str:
    """The page; `scores` (cell id -> (points, set by hand)) from the gradebook override the automatic points;
    `late` (late_policy.Lateness) says what the late policy deducts, and the header shows the final number after it;
    `comments`: (cell, text) an instructor wrote in formgrader; `counted`: the course's rule of which attempt counts
    (attempts.RULES), for the attempt that counts; `not_counted`: that rule, for an attempt that does not (the portal's
    page of another attempt); `back`: a link back to the portal."""
    rows = scored_rows(result, scores)
    total = sum(row["points"] for row in rows)
    notes = notes_as_scored(result, rows)
    pointed = {note.cause for note in notes if note.kind in LEADING and note.cause is not None}
    graded_late = late is not None and result.graded
    final = penalised(total, late.percent) if graded_late else total
    return templating.render(TEMPLATE, result=result, notes=notes, rows=rows, total=total, final=final,
                             late=late.sentence(total, result.max_score) if graded_late else None,
                             by_hand=any(row["by_hand"] for row in rows), comments=list(comments), counted=counted,
                             not_counted=not_counted,
                             reason=not_graded_reason(result), style=STYLE, back=back,
                             said=lambda problem: problem_text(problem, pointed))


def problem_text(problem: Problem, pointed: set[str]) -> str:
    """A problem's sentence as the page shows it: one not judged says to see its cause's "Fix this first" note only
    while the page shows that note (`pointed`: the causes of the leading notes shown)."""
    if problem.kind is ProblemKind.NOT_JUDGED and problem.cause not in pointed:
        return problem.text.removesuffix(SEE_FIX_FIRST)
    return problem.text


def scored_rows(result: NotebookResult, scores: dict[str, tuple[float, bool]] | None) -> list[dict]:
    """Each test with its points as they stand (`scores`: the gradebook's, cell id -> (points, set by hand), over the
    automatic ones) and whether an instructor set them."""
    scores = scores or {}
    return [{"test": test, "points": scores.get(test.cell_id, (test.points, False))[0],
             "by_hand": scores.get(test.cell_id, (test.points, False))[1]} for test in result.tests]


def notes_as_scored(result: NotebookResult, rows: list[dict]) -> list[Note]:
    """The notes in the order of the cells they are about (results.in_cell_order), with "Fix this first" as the
    points stand (`rows`: render's, each test's points with the instructor's) when some were set by hand: worked out
    again over the tests that still cost points (a test whose points the instructor restored is no longer a failure
    to fix, and a cause left behind one failure only is no longer named), and an answer cell that did not run no
    longer said once no test failed for it costs a point (a note stored before notes had causes stays)."""
    if not any(row["by_hand"] for row in rows):
        return in_cell_order(result.notes)
    costing = [row["test"] for row in rows if row["points"] < row["test"].max_points]
    notes = [note for note in result.notes if not _paid_back(note, result.tests, costing)]
    if not result.notes_of(NoteKind.FIX_FIRST):
        return in_cell_order(notes)
    # Imported here: it reads the checks' registry, which a page with no score set by hand does without.
    from posenc_autograder.grading.fix_first import fix_this_first
    at = next(i for i, note in enumerate(notes) if note.kind is NoteKind.FIX_FIRST)
    rest = [note for note in notes if note.kind is not NoteKind.FIX_FIRST]
    return in_cell_order(rest[:at] + fix_this_first(costing) + rest[at:])


def _paid_back(note: Note, tests: list[GradedTest], costing: list[GradedTest]) -> bool:
    """Whether an answer cell's note reports a cause some tests with points were not judged for, none of which
    costs a point now."""
    if note.kind is not NoteKind.BROKEN_CELL or note.cause is None:
        return False
    def carries(test: GradedTest) -> bool:
        return test.max_points > 0 and any(p.kind is ProblemKind.NOT_JUDGED and p.cause == note.cause
                                           for p in test.problems)
    return any(carries(test) for test in tests) and not any(carries(test) for test in costing)


def not_graded_reason(result: NotebookResult) -> str:
    """Why a notebook has no score, in one sentence: what happened first (missing, unreadable, grader error)."""
    return result.notes[0].text.rstrip(".") + "." if result.notes else "the grader could not run it."


def path(feedback_root: pathlib.Path, result: NotebookResult) -> pathlib.Path:
    """nbgrader's layout: feedback/<student>/<assignment>/<notebook>.html (what release_feedback sends)."""
    return feedback_root / result.student / result.assignment / f"{result.notebook}.html"


def write(result: NotebookResult, feedback_root: pathlib.Path, scores=None, late=None, comments=(),
          counted: str | None = None) -> pathlib.Path:
    return _written(path(feedback_root, result), render(result, scores, late, comments=comments, counted=counted))


def _written(page: pathlib.Path, text: str) -> pathlib.Path:
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text)
    return page


@dataclasses.dataclass(frozen=True)
class Made:
    """A page rendered without writing it (PageWriter.ahead), with all it was rendered from."""
    stored: graded.Stored
    late: late_policy.Lateness | None
    text: str


class PageWriter:
    """What writes a stored notebook's page (records.graded's `page`): the gradebook's points and comments, the late
    policy of `deadlines` (one for a run: the roster and the portal's dates are read once) and the counting rule.
    A page can be rendered ahead (by a process re-judging ahead of a run) and written later, where what it was
    rendered from is what the page is written from then."""

    def __init__(self, course: Course, deadlines: late_policy.Deadlines):
        self.feedback, self.deadlines = course.feedback, deadlines
        self.counted = attempts.RULES[settings.load(course).course.counted_attempt]

    def _late(self, result: NotebookResult) -> late_policy.Lateness | None:
        return self.deadlines.lateness(result.student, result.assignment)

    def __call__(self, stored: graded.Stored) -> pathlib.Path:
        result = stored.result
        return write(result, self.feedback, stored.scores, self._late(result), stored.comments, self.counted)

    def ahead(self, stored: graded.Stored) -> Made:
        late = self._late(stored.result)
        return Made(stored, late, render(stored.result, stored.scores, late, comments=stored.comments,
                                         counted=self.counted))

    def write_ahead(self, made: Made, stored: graded.Stored) -> pathlib.Path:
        """made's page, when made from this very stored notebook and lateness; else the page rendered now."""
        if made.stored != stored or made.late != self._late(stored.result):
            return self(stored)
        return _written(path(self.feedback, stored.result), made.text)


def page_writer(course: Course, deadlines: late_policy.Deadlines) -> PageWriter:
    return PageWriter(course, deadlines)
