"""After a run: the grades files, the run report, the class dashboard, and the summary for the instructor.

All of them cover the whole class (stored results merged in by the results store's class_results).
Student-controlled text is made inert on the way out: spreadsheet cells cannot start a formula (csvsafe),
Markdown and HTML in the report are escaped.
"""
from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Mapping, Sequence

from posenc_autograder import csvsafe, words
from posenc_autograder.course import SUMMARY_CELL, Course
from posenc_autograder.intake import roster
from posenc_autograder.reports import dashboard, late_policy, lms_exports
from posenc_autograder.results import NotebookResult, NoteKind

# Only what Markdown would read as markup inside a line of text (every entry starts with "- " or "## ", so
# line-start markers cannot occur): code, emphasis (an underscore inside a word is not), links, tables,
# strikethrough, a heading's closing #; "<", ">" and "&" become entities.
MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]|~#])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def markdown_text(text: str) -> str:
    """Literal text inside Markdown: no HTML, links, emphasis or headings, and one line; readable as prose
    (identifiers such as hidden_pe_values and sentences keep their own characters)."""
    flat = " ".join(str(text).split())
    escaped = MARKDOWN_SPECIAL.sub(lambda m: "\\" + m.group(0),
                                   flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    return escaped.replace("](", "]\\(")        # nor "[text](url)" spelt with escaped brackets


def problem_entries(results: list[NotebookResult]) -> list[dict]:
    """One entry per submission someone must act on (NotebookResult.action: a note that asks it, or no grade)."""
    entries = []
    for r in results:
        if r.action:
            entries.append({"student": r.student, "assignment": r.assignment, "notebook": r.notebook,
                            "graded": r.graded, "score": r.score, "max_score": r.max_score,
                            "what_happened": [n.text for n in r.notes], "what_to_do": r.action})
    return entries


def test_columns(results: list[NotebookResult]) -> list[str]:
    """One column per graded cell, '<assignment>:<cell id>', in notebook order."""
    columns = []
    for r in results:
        columns += [f"{r.assignment}:{t.cell_id}" for t in r.tests if f"{r.assignment}:{t.cell_id}" not in columns]
    return columns


def write_grades_csv(course: Course, results: list[NotebookResult], finals: dict, cell_scores: dict,
                     before_late: dict | None = None, lateness: dict | None = None,
                     deadlines: late_policy.Deadlines | None = None) -> pathlib.Path:
    """Final scores (manual grades and the late policy included) per student and assignment, with each test's
    points, the submission time (of the attempt that counts, with its zone), the late flag and the late penalty, all
    from the late policy's one computation (`finals`, `cell_scores`: gradebook.class_scores, `finals` after
    late_policy.apply; `before_late`: the gradebook's finals)."""
    people, before_late, lateness = roster.load(course), before_late or finals, lateness or {}
    deadlines = deadlines or late_policy.Deadlines(course)
    rows = []
    for r in results:
        score, max_score = finals[r.student, r.assignment]
        cells = cell_scores.get((r.student, r.assignment, r.notebook), {})
        person = people.get((r.student, r.assignment), {})
        late = lateness.get((r.student, r.assignment))
        rows.append({"student": r.student, "name": person.get("name", ""), "lms_user_id": person.get("lms_user_id", ""),
                     "assignment": r.assignment, "score": score if r.graded else "", "max_score": max_score,
                     "status": "graded" if r.graded else "not graded",
                     "submitted_at": deadlines.submitted_stamp(r.student, r.assignment),
                     "late": deadlines.late_stated(r.student, r.assignment),
                     "late_penalty_percent": late.percent if late else 0,
                     "score_before_late_penalty": before_late[r.student, r.assignment][0] if r.graded else "",
                     **{f"{r.assignment}:{t.cell_id}": cells.get(t.cell_id, (t.points, False))[0] for t in r.tests}})
    fields = ["student", "name", "lms_user_id", "assignment", "score", "max_score", "status", "submitted_at", "late",
              "late_penalty_percent", "score_before_late_penalty"]
    return csvsafe.write(course.grades_csv, fields + test_columns(results), rows)


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


def doors_section(findings, problems: Sequence[str] = ()) -> list[str]:
    """Students whose attempts from two doors disagree, and times that could not be read, by name."""
    lines = []
    if findings:
        lines += ["## Attempts from more than one door", ""] + [f"- {markdown_text(f.text())}" for f in findings] + [""]
    if problems:
        lines += ["## Times that could not be read (no late policy applied to them)", ""]
        lines += [f"- {markdown_text(p)}" for p in problems] + [""]
    return lines


def write_run_report(course: Course, results: list[NotebookResult], findings=(), problems=()) -> pathlib.Path:
    course.reports.mkdir(parents=True, exist_ok=True)
    entries = problem_entries(results)
    (course.reports / "grading-report.json").write_text(json.dumps(entries, indent=1))
    md = markdown_text
    lines = ["# Grading report", "", f"{words.count(len(results), 'notebook')}, {sum(r.graded for r in results)} "
             f"graded, {len(entries)} with something to report.", ""]
    for e in entries:
        # the notebook's own points: the grade (manual grades, the late policy) is grades.csv's
        score = (f"automatic score {e['score']:g}/{e['max_score']:g}" if e["graded"]
                 else f"no score, out of {e['max_score']:g}")
        lines.append(f"## {md(e['student'])} / {md(e['assignment'])} / {md(e['notebook'])}.ipynb "
                     f"({'graded' if e['graded'] else 'not graded'}, {score})")
        lines += [f"- {md(n)}" for n in e["what_happened"]] + [f"- What to do: {md(e['what_to_do'])}", ""]
    lines += doors_section(findings, problems)
    lines += visible_failures_section(results)
    path = course.reports / "grading-report.md"
    path.write_text("\n".join(lines))
    return path


def visible_failures_section(results: list[NotebookResult]) -> list[str]:
    """Per student, the visible self-checks that failed: what `nbgrader validate` would have told them."""
    rows = [f"- {markdown_text(r.student)} / {markdown_text(r.assignment)}: "
            f"{markdown_text(', '.join(failed))}" for r in results if r.graded and (failed := failed_self_checks(r))]
    return ["## Visible self-checks that failed", "", *rows, ""] if rows else []


def failed_self_checks(result: NotebookResult) -> list[str]:
    """The visible checks that failed, by their cells' ids; the summary cell, which fails whenever one of them does,
    is no check of its own: said in words, and only when no check above it failed."""
    failed = [t.cell_id for t in result.tests if not t.hidden and not t.passed]
    return [c for c in failed if c != SUMMARY_CELL] or \
        ["the last cell, which sums up the visible checks" for c in failed if c == SUMMARY_CELL]


def write_all(course: Course, gb, results: list[NotebookResult], refused: Sequence[str] = (), files: dict | None = None,
              in_submitted: Mapping[tuple[str, str], dict[str, str]] | None = None) -> None:
    """`refused`: folders under submitted/ that were not read, with why (they have no result); `files`: what each
    stored result says of the file it graded (results_store.GradedFile), for the dashboard's flags; `in_submitted`:
    late_policy.Deadlines'."""
    from posenc_autograder.records import gradebook  # nbgrader: only for the files written here

    before_late, cell_scores = gradebook.class_scores(gb, {r.assignment for r in results})
    deadlines = late_policy.Deadlines(course, settled=True, in_submitted=in_submitted)    # one look at submitted/
    lateness = deadlines.class_lateness(before_late)
    finals = late_policy.apply(before_late, lateness)
    write_grades_csv(course, results, finals, cell_scores, before_late, lateness, deadlines)
    lms_exports.write_all(course, results, finals, deadlines)
    findings = late_policy.door_findings(course, deadlines)
    write_run_report(course, results, findings, deadlines.problems)
    dashboard.write(course, results, refused, finals, lateness, files, findings, deadlines, before_late,
                    cell_scores)


def summary(course: Course, results: list[NotebookResult]) -> str:
    """What this run did (the files written cover the whole class)."""
    lines = ["", "Scores (automatic, per notebook):"]
    width = max([len(r.student) for r in results] + [7])
    for r in results:
        score = f"{r.score:g}/{r.max_score:g}" if r.graded else f"{'':>{len(f'{r.max_score:g}')}}/{r.max_score:g}"
        flag = "" if r.graded else "  not graded (no score; see below)"
        lines.append(f"  {r.student:<{width}}  {r.assignment}/{r.notebook}  {score}{flag}")
    shares = failure_shares(results)
    if shares:
        lines += ["", "Hidden tests, share of students who failed them:"]
        for (assignment, cell_id), (failed, total) in sorted(shares.items(), key=lambda kv: -kv[1][0] / kv[1][1]):
            lines.append(f"  {failed / total:6.0%}  ({failed}/{total})  {assignment}: {cell_id}")
    changed = [f"  {r.student}: {n}" for r in results for n in r.notes_of(NoteKind.REGRADE)]
    if changed:
        lines += ["", "Scores changed by a regrade (and why):"] + changed
    entries = problem_entries(results)
    lines += ["", f"Class dashboard: {dashboard.path(course)}",
              f"{words.count(len(entries), 'submission')} with something to report: "
              f"{course.reports / 'grading-report.md'}",
              f"Grades: {course.grades_csv} ({lms_files(course)})",
              f"Feedback: {course.feedback}/<student>/<assignment>/",
              "Evidence of copying, for you only: make integrity"]
    return "\n".join(lines)


def lms_files(course: Course) -> str:
    """The LMS import files written beside grades.csv, or that there is none (an empty list read as a blank)."""
    paths = lms_exports.paths(course)
    return f"LMS imports: {', '.join(map(str, paths))}" if paths else "no LMS import file written"
