"""autograder/reports/integrity.html: pairs of students ranked by evidence, the evidence side by side.

For the instructor only: it decides nothing and none of it reaches a student's feedback. The page
is self-contained (no scripts, no external files) and everything that came from a student is escaped.

    python -m posenc_autograder integrity [--course DIR]
"""
from __future__ import annotations

import dataclasses
import datetime
import html
import re
import sys
from collections.abc import Sequence
from typing import Any

from posenc_autograder import words
from posenc_autograder.course import RELEASE_DIRECTORY, Course, course_for_command
from posenc_autograder.integrity import behaviour, leaks, text
from posenc_autograder.progress import Progress
from posenc_autograder.records import evidence as store
from posenc_autograder.records import results_store

TEXT_WEIGHT = 10.0     # a whole copied solution weighs about as much as three answers shared by two in forty
SHOWN_PAIRS = 25       # pairs shown with their code side by side
REPORT_NAME = "integrity.html"


@dataclasses.dataclass
class Pair:
    students: tuple[str, str]
    shared_answers: list
    text: text.TextMatch | None
    leaks: list

    @property
    def score(self) -> float:
        return (sum(s.weight for s in self.shared_answers)
                + (TEXT_WEIGHT * self.text.similarity if self.text else 0.0))


@dataclasses.dataclass
class ClassAnalysis:
    assignment: str
    notebook: str
    records: list
    pairs: list[Pair]
    leaks: list
    cut: list = dataclasses.field(default_factory=list)     # (student, why): evidence summarised or not kept at all


def analyse(records: list, instructor_code: str, assignment="", notebook="") -> ClassAnalysis:
    """Every pair with any evidence, strongest first; records are stored Evidence (or full StudentRecords,
    compacted here as grading would have)."""
    records = [store.compact(r) if isinstance(r, store.StudentRecord) else r for r in records]
    records = [dataclasses.replace(r, code=text.comparable_code(r.code)) for r in records]
    first = text.first_prints(records, instructor_code)
    cluster = text.clusters(first.own())
    answers = behaviour.pair_evidence(records, cluster)
    texts = text.matches(records, first, cluster)
    found = leaks.leaks(records)
    by_pair: dict[tuple, list] = {}
    for leak in found:
        by_pair.setdefault(tuple(sorted((leak.student, leak.source))), []).append(leak)
    pairs = [Pair(key, answers.get(key, []), texts.get(key), by_pair.get(key, []))
             for key in set(answers) | set(texts) | set(by_pair)]
    pairs.sort(key=lambda p: (-len(p.leaks), -p.score, p.students))
    cut = [(r.student, "; ".join(f"{'every test' if test == '*' else test}: {why}"
                                 for test, why in sorted(r.cut.items()))) for r in records if r.cut]
    return ClassAnalysis(assignment, notebook, records, [p for p in pairs if p.score > 0 or p.leaks], found, cut)


def without_evidence(course: Course, assignment: str, notebook: str, records: list, skipped: list) -> list:
    """(student, why) for every student graded on this notebook whose evidence is not there to read: none of them
    is left out of the report unnamed (a flood, a failed write, a file removed)."""
    present = {r.student for r in records} | {s for a, n, s, _ in skipped if (a, n) == (assignment, notebook)}
    results = course.autograded.glob(f"*/{assignment}/{notebook}{results_store.SUFFIX}")
    graded = sorted(result.parents[1].name for result in results)
    return [(student, "no evidence kept: only the run's output says why") for student in graded
            if student not in present]


def analyse_course(course: Course, skipped: list, stream=None) -> list[ClassAnalysis]:
    """Every stored notebook's analysis; evidence that cannot be read is left out and added to `skipped`
    (assignment, notebook, student, why), and so is a notebook whose analysis fails."""
    analyses = []
    stored = list(store.notebooks_stored(course))
    progress = Progress(len(stored), stream=stream)
    for assignment, notebook in stored:
        progress.step(f"{assignment}/{notebook}")
        try:
            instructor = text.instructor_code(course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb",
                                              course.source_notebook(assignment, notebook))
            records = store.load_class(course, assignment, notebook, skipped)
            analysis = analyse(records, instructor, assignment, notebook)
            analysis.cut += without_evidence(course, assignment, notebook, records, skipped)
            analyses.append(analysis)
        except Exception as exc:  # noqa: BLE001 - one notebook's failure never hides the others'
            skipped.append((assignment, notebook, "(every student)", type(exc).__name__))
    return analyses


# --- the page ----------------------------------------------------------------------------------

E = html.escape
STYLE = """body{font:15px/1.45 system-ui,sans-serif;margin:2rem;color:#1d1d1d}table{border-collapse:collapse;width:100%}
td,th{border:1px solid #ccc;padding:.35rem .5rem;vertical-align:top;text-align:left}th{background:#f3f3f3}
.code{display:grid;grid-template-columns:1fr 1fr;gap:1rem}pre{background:#f7f7f7;padding:.5rem;overflow:auto;
max-height:30rem;font-size:12px}mark{background:#ffe08a}.note{color:#555}.skipped{color:#a00}"""


# A line holding nothing but a comment or blanks (copydetect does not compare them).
NOT_COMPARED_LINE = re.compile(r"^[ \t]*(#[^\n]*)?$\n?", re.M)


def _copied_ranges(code: str, ranges) -> list[tuple[int, int]]:
    """copydetect's copied character ranges, less the comment and blank lines inside them: a range runs from the
    first copied token to the last, across any comment a student added between (which was not copied)."""
    starts_and_ends = [list(map(int, r)) for r in ranges] if ranges is not None and len(ranges[0]) else []
    marks = sorted(zip(*starts_and_ends, strict=True))
    pieces = []
    for start, end in marks:
        at = start
        for line in NOT_COMPARED_LINE.finditer(code, start, end):
            if code[at:line.start()].strip():
                pieces.append((at, line.start()))
            at = max(at, line.end())
        if code[at:end].strip():
            pieces.append((at, end))
    return pieces


def _highlighted(code: str, ranges) -> str:
    """The code, escaped, with the copied ranges marked."""
    out, at = [], 0
    for start, end in _copied_ranges(code, ranges):
        start = max(start, at)
        if start >= end:
            continue
        out += [E(code[at:start]), "<mark>", E(code[start:end]), "</mark>"]
        at = end
    return "".join(out) + E(code[at:])


def _pair_rows(analysis: ClassAnalysis) -> str:
    rows = []
    size = len(analysis.records)
    for rank, pair in enumerate(analysis.pairs, 1):
        answers = "".join(f"<li>{E(s.trait.test)} {E(s.trait.where)}: {E(s.trait.description)} "
                          f"<span class=note>({s.holders} of {s.among or size} students)</span></li>"
                          for s in pair.shared_answers)
        leaked = "".join(f"<li>{E(leak.student)}'s answers to {E(leak.test)} fit {E(leak.source)}'s inputs, "
                         "not their own</li>"
                         for leak in pair.leaks)
        similarity = f"{100 * pair.text.similarity:.0f}%" if pair.text else "—"
        rows.append(f"<tr><td>{rank}</td><td><a href='#pair{rank}'>{E(pair.students[0])} · {E(pair.students[1])}</a>"
                    f"</td><td>{pair.score:.2f}{' + leaked answers' if pair.leaks else ''}</td>"
                    f"<td><ul>{answers}</ul></td><td>{similarity}</td>"
                    f"<td><ul>{leaked}</ul></td></tr>")
    return "".join(rows)


def _side_by_side(analysis: ClassAnalysis) -> str:
    code = {r.student: r.code for r in analysis.records}
    parts = []
    for rank, pair in enumerate(analysis.pairs[:SHOWN_PAIRS], 1):
        a, b = pair.students
        slices = pair.text.slices if pair.text else (None, None)
        parts.append(f"<h3 id='pair{rank}'>#{rank}: {E(a)} and {E(b)}</h3><div class=code>"
                     f"<pre>{_highlighted(code[a], slices[0])}</pre>"
                     f"<pre>{_highlighted(code[b], slices[1])}</pre></div>")
    return "".join(parts)


def _skipped_list(skipped: Sequence[Any]) -> str:
    if not skipped:
        return ""
    items = "".join(f"<li>{E(a)} / {E(n)}: {E(s)} ({E(why)})</li>" for a, n, s, why in skipped)
    return (f"<p class=skipped><strong>Not compared: {words.count(len(skipped), 'student evidence file')} "
            f"could not be read</strong> (corrupt, hostile or from an older grader: "
            f"run `make grade --force` for them)</p>"
            f"<ul>{items}</ul>")


def _cut_list(analysis: ClassAnalysis) -> str:
    """Everyone whose evidence was cut: their answers (some or all) were too large to compare one by one and are
    compared by a sample only, or not kept; their code is compared as everyone's. Named, so a flood hides no one."""
    if not analysis.cut:
        return ""
    items = "".join(f"<li>{E(student)}: {E(why)}</li>" for student, why in analysis.cut)
    return (f"<p class=skipped><strong>Evidence cut for {words.count(len(analysis.cut), 'student')}</strong>: "
            f"answers too large to compare are compared by their first answers only (or not at all); "
            f"their code is compared as "
            f"everyone's. Look at these notebooks yourself.</p><ul class=cut>{items}</ul>")


def _key_formats_note(analysis: ClassAnalysis) -> str:
    """Said when some answers were digested by an older grader: those are compared only among themselves."""
    formats = behaviour.by_key_format(analysis.records)
    if len(formats) < 2:
        return ""
    older = sum(len(group) for key_format, group in formats.items() if key_format != store.KEY_FORMAT)
    return (f"<p class=note>The answers of {older} of {len(analysis.records)} students were kept by an older grader, "
            f"digested another way: they are compared only with each other's, and the others' only with each other's "
            f"(regrade those students to compare everyone's). Code is compared for everyone.</p>")


def page(analyses: list[ClassAnalysis], skipped: Sequence[Any] = (), when: str = "") -> str:
    sections = []
    for analysis in analyses:
        sections.append(
            f"<h2>{E(analysis.assignment)} / {E(analysis.notebook)}: {len(analysis.records)} students, "
            f"{len(analysis.pairs)} pairs with evidence</h2>{_cut_list(analysis)}{_key_formats_note(analysis)}"
            "<table><tr><th>#</th><th>pair</th><th>evidence</th><th>rare wrong answers both gave (shared probe set)"
            "</th><th>own code in common</th><th>answers that fit the other's inputs</th></tr>"
            f"{_pair_rows(analysis)}</table>{_side_by_side(analysis)}")
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>Integrity report</title>"
            f"<style>{STYLE}</style></head><body><h1>Integrity report</h1>"
            f"<p class=header>Written {E(when)} for "
            f"{words.count(sum(len(a.records) for a in analyses), 'student notebook')} in "
            f"{words.count(len(analyses), 'notebook')}; {len(skipped)} skipped.</p>{_skipped_list(skipped)}"
            "<p class=note>Evidence for a person to "
            "weigh, strongest first: nothing here is decided automatically, and none of it is shown to students. "
            "Rare shared wrong answers weigh log((N-1)/(n-1)); answers shared by many students weigh nothing. "
            f"Own code in common excludes the starter code, the instructor's code and idioms common in the class; "
            f"it adds {TEXT_WEIGHT:g} × the share to the evidence.</p>{''.join(sections)}</body></html>")


def write(course: Course, stream=None) -> list:
    """Write the report for everyone whose evidence reads; return what was skipped. If the page itself
    cannot be written, the old one is removed: a stale report never stands in for this run's."""
    skipped: list = []
    target = course.reports / REPORT_NAME
    waiting = store.pending_markers(course)
    if waiting:                    # graded on the portal, evidence not kept yet: a report now would leave them out
        target.unlink(missing_ok=True)
        return [("", "", "(the report)", f"the portal has not kept the evidence of "
                 f"{words.count(len(waiting), 'graded attempt')} yet (it does when no upload waits to be graded, "
                 f"and when it stops; a portal that was killed does at its next start); run it again then")]
    try:
        analyses = analyse_course(course, skipped, stream)
        course.reports.mkdir(parents=True, exist_ok=True)
        when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        partial = target.with_suffix(".partial")
        partial.write_text(page(analyses, skipped, when), encoding="utf-8")
        partial.replace(target)
    except Exception as exc:  # noqa: BLE001
        target.unlink(missing_ok=True)
        skipped.append(("", "", "(the report)", type(exc).__name__))
    return skipped


def run_command(args) -> int:
    """Exit status 0 when every student's evidence was compared, 1 when anything was skipped or failed."""
    course = course_for_command(args.course)
    skipped = write(course, stream=sys.stderr)
    for assignment, notebook, student, why in skipped:
        print(f"integrity: not compared: {assignment}/{notebook} {student} ({why})", file=sys.stderr)
    if (course.reports / REPORT_NAME).exists():
        print(f"Integrity report: {course.reports / REPORT_NAME}")
    return 1 if skipped else 0

