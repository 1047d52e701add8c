"""Per-student feedback: each test's name, points and diagnosis. Never the hidden tests' code or inputs."""
from __future__ import annotations

import html
import pathlib

from .pipeline import NotebookResult

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; } td, th { border-bottom: 1px solid #ddd; padding: .5rem; vertical-align: top; }
th { text-align: left; background: #f4f4f4; } .pass { color: #1a7f37; } .fail { color: #b42318; }
.kind { font-size: .85em; color: #555; white-space: nowrap; } ul.notes li { margin: .3rem 0; }
"""


def render(result: NotebookResult) -> str:
    e = html.escape
    rows = []
    for test in result.tests:
        status = '<span class="pass">passed</span>' if test.passed else '<span class="fail">failed</span>'
        kind = "hidden test" if test.hidden else "visible self-check"
        diagnosis = "".join(f"<li>{e(p)}</li>" for p in test.problems)
        rows.append(f"<tr><td><b>{e(test.cell_id)}</b><br>{e(test.title)}</td><td class='kind'>{kind}</td>"
                    f"<td>{status}</td><td>{test.points:g} / {test.max_points:g}</td>"
                    f"<td><ul>{diagnosis}</ul></td></tr>")
    notes = "".join(f"<li>{e(n)}</li>" for n in result.notes)
    notes_block = f"<h2>What happened while grading</h2><ul class='notes'>{notes}</ul>" if notes else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Feedback: {e(result.assignment)}</title>
<style>{STYLE}</style></head><body>
<h1>Feedback for {e(result.student)}: {e(result.assignment)} / {e(result.notebook)}.ipynb</h1>
<p><b>Score: {result.score:g} / {result.max_score:g}</b> (automatic grading; an instructor may still adjust it).</p>
<p>Hidden tests call your functions with inputs you have not seen; only their names and diagnoses are shown.
Visible self-checks are the test cells in your notebook and carry no points.</p>
{notes_block}
<h2>Tests</h2>
<table><tr><th>Test</th><th>Kind</th><th>Result</th><th>Points</th><th>Diagnosis</th></tr>
{''.join(rows)}
</table></body></html>
"""


def write(result: NotebookResult, feedback_root: pathlib.Path) -> pathlib.Path:
    path = feedback_root / result.student / result.assignment / f"{result.notebook}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(result))
    return path
