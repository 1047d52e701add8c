"""autograder/reports/class.html: the class at a glance, one self-contained page (no scripts, no CDN).

Scores, per-test pass rates, the class's mistakes grouped by diagnosis (with who made them), time per
notebook, students who need attention, and a link to each student's feedback. Figures are matplotlib
SVGs inlined as data URIs, each with alt text that states what it shows. Everything a student
controls (ids, names, notes, diagnoses quoting their code) is HTML-escaped.
"""
from __future__ import annotations

import base64
import collections
import html
import io
import os
import pathlib
import statistics
import urllib.parse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the headless backend

from posenc_autograder.reports import feedback  # noqa: E402
from posenc_autograder.intake import roster
from posenc_autograder.course import Course  # noqa: E402
from posenc_autograder.results import NotebookResult  # noqa: E402

# Note fragments (written by pipeline/assemble) -> why an instructor should look at the student.
ATTENTION = [("not graded", "not graded"), ("ran longer than", "timeout"), ("time limit", "timeout"),
             ("process died", "crashed or was killed"), ("out of memory", "memory limit"),
             ("printed too much", "output flood"), ("read-only cells were edited", "edited read-only cells"),
             ("refused", "refused by the grader"), ("symlink", "refused by the grader"),
             ("grader hit an unexpected error", "grader error"), ("could not finish running", "grader error"),
             ("regraded with a changed grader", "score changed by a regrade")]
STYLE = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; margin-bottom: 1.5rem; }
td, th { border-bottom: 1px solid #ddd; padding: .4rem .5rem; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
.figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(20rem, 1fr)); gap: 1.5rem; }
figure { margin: 0; } figure img { width: 100%; height: 16rem; object-fit: contain; }
figcaption { font-size: .9em; color: #555; } .late { color: #b42318; font-weight: 600; }
"""


def path(course: Course) -> pathlib.Path:
    return course.reports / "class.html"


def _figure(fig, alt: str, caption: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode()
    return (f'<figure><img src="data:image/svg+xml;base64,{data}" alt="{html.escape(alt)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def score_histogram(results: list[NotebookResult]) -> str:
    shares = [100 * r.score / r.max_score for r in results if r.graded and r.max_score]
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.hist(shares, bins=range(0, 101, 10), color="#4c72b0", edgecolor="white")
    ax.set_xlabel("score (% of points)")
    ax.set_ylabel("notebooks")
    counts = [sum(lo <= s < lo + 10 or (lo == 90 and s == 100) for s in shares) for lo in range(0, 100, 10)]
    alt = ("Histogram of scores in 10 % bins, from 0-10 % to 90-100 %: "
           + ", ".join(str(c) for c in counts) + " notebooks.")
    return _figure(fig, alt, "Scores of graded notebooks")


def pass_rates(results: list[NotebookResult]) -> dict[tuple[str, str], tuple[int, int]]:
    """(assignment, test) -> (passed, graded), hidden tests only."""
    counts: dict[tuple[str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    for r in results:
        for t in r.tests:
            if r.graded and t.hidden:
                counts[(r.assignment, t.cell_id)][0] += t.passed
                counts[(r.assignment, t.cell_id)][1] += 1
    return {k: (v[0], v[1]) for k, v in counts.items()}


def pass_rate_chart(rates) -> str:
    several = len({a for a, _ in rates}) > 1
    labels = [f"{a}: {t}" if several else t for a, t in rates]
    values = [100 * p / n for p, n in rates.values()]
    fig, ax = plt.subplots(figsize=(5, max(3, 0.25 * len(labels) + 1)))
    ax.barh(labels[::-1], values[::-1], color="#55a868")
    ax.set_xlim(0, 100)
    ax.set_xlabel("students who passed (%)")
    alt = "Share of students passing each hidden test: " + "; ".join(
        f"{label} {value:.0f} %" for label, value in zip(labels, values)) + "."
    return _figure(fig, alt, "Pass rate per hidden test")


def time_chart(results: list[NotebookResult]) -> str:
    seconds = sorted(r.seconds for r in results if r.graded)
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.hist(seconds, bins=10, color="#dd8452", edgecolor="white")
    ax.set_xlabel("seconds to grade one notebook")
    ax.set_ylabel("notebooks")
    alt = (f"Histogram of grading time per notebook: median {statistics.median(seconds):.1f} s, "
           f"slowest {seconds[-1]:.1f} s, over {len(seconds)} notebooks." if seconds else "No notebook was run.")
    return _figure(fig, alt, "Time per notebook")


def grouped_diagnoses(results: list[NotebookResult]) -> list[tuple[str, str, str, list[str]]]:
    """(assignment, test, diagnosis, students), most common first: the class's shared mistakes."""
    groups: dict[tuple[str, str, str], list[str]] = collections.defaultdict(list)
    for r in results:
        for t in r.tests:
            for problem in t.problems if r.graded else []:
                groups[(r.assignment, t.cell_id, problem)].append(r.student)
    return sorted(((a, t, p, s) for (a, t, p), s in groups.items()), key=lambda g: (-len(g[3]), g[:3]))


def attention(result: NotebookResult) -> list[str]:
    reasons = [] if result.graded else ["not graded"]
    for note in result.notes:
        reasons += [why for fragment, why in ATTENTION if fragment in note and why not in reasons]
    return reasons


def feedback_link(course: Course, result: NotebookResult) -> str:
    target = os.path.relpath(feedback.path(course.feedback, result), course.reports)
    return html.escape(urllib.parse.quote(target), quote=True)


def render(course: Course, results: list[NotebookResult], refused: list[str] = ()) -> str:
    """The page; `refused`: folders in submitted/ the grader would not read (why, per folder)."""
    e = html.escape
    people = roster.load(course)
    graded = [r for r in results if r.graded]
    rates = pass_rates(results)
    figures = [score_histogram(results)] + ([pass_rate_chart(rates)] if rates else []) + [time_chart(results)]
    diagnoses = "".join(
        f"<tr><td>{len(who)}</td><td>{e(a)}: {e(t)}</td><td>{e(problem)}</td><td>{e(', '.join(who))}</td></tr>"
        for a, t, problem, who in grouped_diagnoses(results))
    needing = [(r, attention(r)) for r in results]
    attention_rows = "".join(
        f"<tr><td>{e(r.student)}</td><td>{e(r.assignment)}</td><td>{e(', '.join(why))}</td>"
        f"<td>{'<br>'.join(e(n) for n in r.notes)}</td></tr>" for r, why in needing if why) + "".join(
        f"<tr><td colspan='2'>submitted/</td><td>refused by the grader</td><td>{e(reason)}</td></tr>"
        for reason in refused)
    student_rows = []
    for r in results:
        person = people.get((r.student, r.assignment), {})
        late = "<span class='late'>late</span>" if person.get("late") == "yes" else ""
        student_rows.append(
            f"<tr><td>{e(r.student)}</td><td>{e(person.get('name', ''))}</td><td>{e(r.assignment)}</td>"
            f"<td>{r.score:g} / {r.max_score:g}{'' if r.graded else ' (not graded)'}</td>"
            f"<td>{e(person.get('submitted_at', ''))} {late}</td><td>{r.seconds:.1f} s</td>"
            f"<td><a href=\"{feedback_link(course, r)}\">feedback</a></td></tr>")
    mean = statistics.mean(r.score / r.max_score for r in graded if r.max_score) if graded else 0
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Class dashboard</title><style>{STYLE}</style></head><body>
<h1>Class dashboard</h1>
<p>{len(results)} notebooks, {len(graded)} graded, mean score {100 * mean:.0f} %.
{sum(bool(w) for _, w in needing) + len(refused)} need attention.</p>
<div class="figures">{''.join(figures)}</div>
<h2>Mistakes across the class</h2>
<table><tr><th>Students</th><th>Test</th><th>Diagnosis</th><th>Who</th></tr>{diagnoses}</table>
<h2>Students who need attention</h2>
<table><tr><th>Student</th><th>Assignment</th><th>Why</th><th>What happened</th></tr>{attention_rows}</table>
<h2>Every student</h2>
<table><tr><th>Student</th><th>Name</th><th>Assignment</th><th>Score</th><th>Submitted</th><th>Grading time</th>
<th>Feedback</th></tr>{''.join(student_rows)}</table>
</body></html>
"""


def write(course: Course, results: list[NotebookResult], refused: list[str] = ()) -> pathlib.Path:
    course.reports.mkdir(parents=True, exist_ok=True)
    path(course).write_text(render(course, results, refused))
    return path(course)
