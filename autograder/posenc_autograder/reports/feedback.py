"""Per-student feedback: each test's name, points and diagnosis. Never the hidden tests' code or inputs.

Points come from the gradebook when it has them, so a grade changed by hand in formgrader shows up;
`make feedback` (orchestration/rebuild.py) rebuilds every page after manual grading.
"""
from __future__ import annotations

import html
import pathlib

from posenc_autograder.results import NotebookResult

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; } \
td, th { border-bottom: 1px solid #ddd; padding: .5rem; vertical-align: top; }
th { text-align: left; background: #f4f4f4; } .pass { color: #1a7f37; } .fail { color: #b42318; }
.kind { font-size: .85em; color: #555; white-space: nowrap; } ul.notes li { margin: .3rem 0; }
"""


def render(result: NotebookResult, scores: dict[str, tuple[float, bool]] | None = None, late=None) -> str:
    """The page; `scores` (cell id -> (points, set by hand)) from the gradebook override the automatic points;
    `late` (late_policy.Lateness) says what the late policy deducts."""
    e = html.escape
    scores = scores or {}
    rows = []
    total = 0.0
    for test in result.tests:
        points, by_hand = scores.get(test.cell_id, (test.points, False))
        total += points
        status = '<span class="pass">passed</span>' if test.passed else '<span class="fail">failed</span>'
        if test.hidden and test.cases:
            status += f"<br><span class='kind'>{test.cases[0]}/{test.cases[1]} cases passed</span>"
        kind = "hidden test" if test.hidden else "visible self-check"
        diagnosis = "".join(f"<li>{e(p)}</li>" for p in test.problems)
        adjusted = "<br><span class='kind'>set by your instructor</span>" if by_hand else ""
        rows.append(f"<tr><td><b>{e(test.cell_id)}</b><br>{e(test.title)}</td><td class='kind'>{kind}</td>"
                    f"<td>{status}</td><td>{points:g} / {test.max_points:g}{adjusted}</td>"
                    f"<td><ul>{diagnosis}</ul></td></tr>")
    notes = "".join(f"<li>{e(n)}</li>" for n in result.notes)
    score = (f"<b>Score: {total:g} / {result.max_score:g}</b> (automatic grading; an instructor may still adjust it)."
             if result.graded else f"<b>Not graded: {e(not_graded_reason(result))}</b> No score was given; "
                                   f"your instructor has been told.")
    if late is not None and result.graded:
        score += f"</p><p class='late'>{e(late.sentence(total, result.max_score))}"
    notes_block = f"<h2>What happened while grading</h2><ul class='notes'>{notes}</ul>" if notes else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Feedback: {e(result.assignment)}</title>
<style>{STYLE}</style></head><body>
<h1>Feedback for {e(result.student)}: {e(result.assignment)} / {e(result.notebook)}.ipynb</h1>
<p>{score}</p>
<p>Hidden tests call your functions with inputs you have not seen; only their names and diagnoses are shown.
Visible self-checks are the test cells in your notebook and carry no points.</p>
{notes_block}
<h2>Tests</h2>
<table><tr><th>Test</th><th>Kind</th><th>Result</th><th>Points</th><th>Diagnosis</th></tr>
{''.join(rows)}
</table></body></html>
"""


def not_graded_reason(result: NotebookResult) -> str:
    """Why a notebook has no score, in one sentence: what happened first (missing, unreadable, grader error)."""
    return result.notes[0].rstrip(".") + "." if result.notes else "the grader could not run it."


def path(feedback_root: pathlib.Path, result: NotebookResult) -> pathlib.Path:
    """nbgrader's layout: feedback/<student>/<assignment>/<notebook>.html (what release_feedback sends)."""
    return feedback_root / result.student / result.assignment / f"{result.notebook}.html"


def write(result: NotebookResult, feedback_root: pathlib.Path, scores=None, late=None) -> pathlib.Path:
    page = path(feedback_root, result)
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render(result, scores, late))
    return page
