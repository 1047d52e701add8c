"""After a run: grades.csv from the gradebook, the run report, and the summary printed for the instructor."""
from __future__ import annotations

import csv
import json
import pathlib

from . import gradebook
from .course import Course
from .pipeline import NotebookResult

def problem_entries(results: list[NotebookResult]) -> list[dict]:
    """One entry per submission where something went wrong beyond failed tests."""
    entries = []
    for r in results:
        if r.notes or not r.graded:
            entries.append({"student": r.student, "assignment": r.assignment, "notebook": r.notebook,
                            "graded": r.graded, "score": r.score, "max_score": r.max_score,
                            "what_happened": r.notes, "what_to_do": r.action})
    return entries


def write_grades_csv(course: Course, gb, results: list[NotebookResult]) -> pathlib.Path:
    """Final scores per student and assignment, as the gradebook has them (manual grades included)."""
    pairs = sorted({(r.student, r.assignment) for r in results})
    graded = {(r.student, r.assignment): r.graded for r in results}
    rows = []
    for student, assignment in pairs:
        score, max_score = gradebook.final_scores(gb, student, assignment)
        rows.append({"student": student, "assignment": assignment, "score": f"{score:g}",
                     "max_score": f"{max_score:g}", "status": "graded" if graded[(student, assignment)] else
                     "not graded"})
    course.grades_csv.parent.mkdir(parents=True, exist_ok=True)
    with open(course.grades_csv, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=["student", "assignment", "score", "max_score", "status"])
        writer.writeheader()
        writer.writerows(rows)
    return course.grades_csv


def failure_shares(results: list[NotebookResult]) -> dict[tuple[str, str], tuple[int, int]]:
    """(assignment, hidden test) -> (students who failed it, students graded)."""
    shares: dict[tuple[str, str], list[int]] = {}
    for r in results:
        if not r.graded:
            continue
        for t in r.tests:
            if t.hidden:
                count = shares.setdefault((r.assignment, t.cell_id), [0, 0])
                count[0] += 0 if t.passed else 1
                count[1] += 1
    return {k: (v[0], v[1]) for k, v in shares.items()}


def write_run_report(course: Course, results: list[NotebookResult]) -> pathlib.Path:
    course.reports.mkdir(parents=True, exist_ok=True)
    entries = problem_entries(results)
    (course.reports / "grading-report.json").write_text(json.dumps(entries, indent=1))
    lines = ["# Grading report", "", f"{len(results)} notebooks, {sum(r.graded for r in results)} graded, "
             f"{len(entries)} with something to report.", ""]
    for e in entries:
        lines.append(f"## {e['student']} / {e['assignment']} / {e['notebook']}.ipynb "
                     f"({'graded' if e['graded'] else 'NOT GRADED'}, {e['score']:g}/{e['max_score']:g})")
        lines += [f"- {n}" for n in e["what_happened"]] + [f"- What to do: {e['what_to_do']}", ""]
    path = course.reports / "grading-report.md"
    path.write_text("\n".join(lines))
    return path


def write_all(course: Course, gb, results: list[NotebookResult]) -> None:
    write_grades_csv(course, gb, results)
    write_run_report(course, results)


def summary(course: Course, results: list[NotebookResult]) -> str:
    lines = ["", "Scores (automatic, per notebook):"]
    width = max([len(r.student) for r in results] + [7])
    for r in results:
        flag = "" if r.graded else "  NOT GRADED"
        lines.append(f"  {r.student:<{width}}  {r.assignment}/{r.notebook}  {r.score:g}/{r.max_score:g}{flag}")
    shares = failure_shares(results)
    if shares:
        lines += ["", "Hidden tests, share of students who failed them:"]
        for (assignment, cell_id), (failed, total) in sorted(shares.items(), key=lambda kv: -kv[1][0] / kv[1][1]):
            lines.append(f"  {failed / total:6.0%}  ({failed}/{total})  {assignment}: {cell_id}")
    entries = problem_entries(results)
    lines += ["", f"{len(entries)} submission(s) with something to report: {course.reports / 'grading-report.md'}",
              f"Grades: {course.grades_csv}", f"Feedback: {course.feedback}/<student>/<assignment>/"]
    return "\n".join(lines)
