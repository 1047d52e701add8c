"""Changing the hidden tests while the term runs: after a class was graded (with portal rows and manual grades in
the gradebook), a test is added to an existing part, another removed and a third re-pointed; `make release` takes
it in place and `make grade` rescores everyone, saying what moved. A release that fails half-way changes no byte."""
import dataclasses
import hashlib
import shutil
import sqlite3
import subprocess

import nbformat
import pytest
from fixture_submissions import NOTEBOOK, make_course, solved_notebook
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.authoring import cell_definitions
from posenc_autograder.checks import REGISTRY
from posenc_autograder.checks.positional_encoding.catalogue import MISTAKES
from posenc_autograder.course import GRADEBOOK, Course
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.portal import models
from posenc_autograder.records import gradebook
from posenc_autograder.results import NoteKind
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=30)
SWAPPED = next(m for m in MISTAKES if m.name == "sin and cos swapped")
ADDED, REMOVED, REPOINTED, KEPT_MANUAL = "hidden_pe_bounded_again", "hidden_pe_stability", "hidden_dot_product", \
    "hidden_pe_values"


def _git(course, *args):
    return subprocess.run(["git", *args], cwd=course.root, capture_output=True, text=True, check=True).stdout


def _submit(course, student, nb):
    folder = course.submitted / student / NOTEBOOK
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


def _swapped():
    nb = solved_notebook()
    cell = next(c for c in nb.cells if "def sinusoidal_positional_encoding" in c.source
                and c.metadata.get("nbgrader", {}).get("solution"))
    cell.source += "\n\n" + SWAPPED.code
    return nb


def _set_manual(course, student, cell, score):
    """What formgrader's "manual score" box does: the grade's manual_score."""
    with gradebook.open_gradebook(course) as gb:
        gb.find_grade(cell, NOTEBOOK, NOTEBOOK, student).manual_score = score
        gb.db.commit()


def _portal_rows(course):
    with sqlite3.connect(course.path(GRADEBOOK)) as db:
        return [db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                for table in ("portal_student", "portal_attempt", "portal_policy")]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A committed course, graded once; a portal attempt and policy, and two manual grades in its gradebook."""
    course = Course(make_course(tmp_path_factory.mktemp("midterm") / "course"))
    for name in ("README.md", ".gitignore"):
        shutil.copy(ROOT / name, course.root / name)
    shutil.copytree(ROOT / "autograder" / "release_history", course.path("autograder/release_history"))
    shutil.copy(ROOT / "autograder" / "test_plan.csv", course.path("autograder/test_plan.csv"))
    _submit(course, "ada", solved_notebook())
    _submit(course, "bo", _swapped())
    first = {r.student: r for r in grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)}
    assert first["ada"].score == first["ada"].max_score > first["bo"].score
    _set_manual(course, "ada", KEPT_MANUAL, 1.5)
    _set_manual(course, "bo", REMOVED, 2.0)
    _set_manual(course, "bo", REPOINTED, 1.0)             # judged out of 2; the test becomes worth 4
    session = models.open_database(course.gradebook_url)()
    session.add_all([models.Student(id="ada", name="Ada"), models.Policy(assignment=NOTEBOOK, max_attempts=3),
                     models.Attempt(student_id="ada", assignment=NOTEBOOK, notebook=NOTEBOOK, number=1, sha256="a" * 64,
                                    size=10, uploaded_at=models.utcnow(), status="graded", score=40.0)])
    session.commit()
    session.close()
    served = course.path(f"_build/html/_sources/exercises/{NOTEBOOK}")       # a built book's download (make book)
    served.mkdir(parents=True)
    shutil.copy(course.path(f"exercises/{NOTEBOOK}/{NOTEBOOK}.ipynb"), served)
    _git(course, "init", "-q")
    _git(course, "add", "-A")
    _git(course, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "term start")
    return course, first


@pytest.fixture
def changed_tests(monkeypatch):
    """The instructor's edit: a new test on the sinusoidal part, one removed, one worth two points more."""
    monkeypatch.setitem(REGISTRY, ADDED, dataclasses.replace(REGISTRY["hidden_pe_unique_bounded"], id=ADDED,
                                                             points=1, title="the table is bounded, once more"))
    monkeypatch.delitem(REGISTRY, REMOVED)
    monkeypatch.setitem(REGISTRY, REPOINTED, dataclasses.replace(REGISTRY[REPOINTED], points=4))


def _snapshot(course):
    """Every file of the course by content, apart from the grader's scratch folder; the gradebook as every row of
    every table (the portal keeps it in WAL mode, whose index file changes on any read)."""
    files = {str(p.relative_to(course.root)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(course.root.rglob("*")) if p.is_file() and ".work" not in p.parts
             and ".git" not in p.parts and not p.name.startswith("gradebook.db")}
    with sqlite3.connect(course.path(GRADEBOOK)) as db:
        return files, list(db.iterdump())


def test_a_release_that_fails_half_way_changes_no_byte(graded, changed_tests, monkeypatch, capsys):
    course, _ = graded
    before = _snapshot(course)
    real_migrate_all, real_add = cell_definitions.migrate_all, cell_definitions._add

    def fails_half_way(course_, definitions, *, commit=True):
        """The real migration, but when it is for real, the new cell's rows fail after the removal ran."""
        if commit:
            monkeypatch.setattr(cell_definitions, "_add", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
        try:
            return real_migrate_all(course_, definitions, commit=commit)
        finally:
            monkeypatch.setattr(cell_definitions, "_add", real_add)

    monkeypatch.setattr(cell_definitions, "migrate_all", fails_half_way)
    assert cli.main(["release", "--course", str(course.root)]) == 1
    said = capsys.readouterr().err
    assert "changed nothing" in said and "disk full" in said and "put back" in said
    assert _snapshot(course) == before


def test_a_release_nbgrader_refuses_changes_nothing_and_says_what_to_fix(graded, changed_tests, monkeypatch, capsys):
    course, _ = graded
    before = _snapshot(course)
    monkeypatch.setitem(REGISTRY, ADDED, dataclasses.replace(REGISTRY[ADDED], answer_cell="no_such_cell"))
    assert cli.main(["release", "--course", str(course.root)]) == 1
    said = capsys.readouterr().err
    assert "no_such_cell" in said and "answer_cell" in said
    assert _snapshot(course) == before


def test_tests_added_removed_and_repointed_midterm_regrade_everyone_and_keep_the_rest(graded, changed_tests,
                                                                                      capsys):
    course, first = graded
    portal_before = _portal_rows(course)
    assert cli.main(["release", "--course", str(course.root)]) == 0
    said = capsys.readouterr().out
    assert f"new test {ADDED} (1 point)" in said and f"test {REMOVED} removed" in said
    assert f"{REPOINTED} 2 → 4 points" in said
    assert f"the manual grade 2 of bo on the removed cell {REMOVED}" in said
    assert f"bo's manual grade on {REPOINTED} is kept as given, 1 (it was out of 2, now 4); it is not rescaled" in said
    served = f"_build/html/_sources/exercises/{NOTEBOOK}/{NOTEBOOK}.ipynb"
    assert course.path(served).read_bytes() == course.path(f"exercises/{NOTEBOOK}/{NOTEBOOK}.ipynb").read_bytes()
    assert f"book: {served} now hands out the new" in said and "old text until make book" in said
    with gradebook.open_gradebook(course) as gb:
        kept = gb.find_grade(REPOINTED, NOTEBOOK, NOTEBOOK, "bo")
        assert (kept.manual_score, kept.needs_manual_grade) == (1.0, True)           # flagged in formgrader
    assert "README.md (the table of assignments" in said and "autograder/test_plan.csv" in said
    changed = {line[3:] for line in _git(course, "status", "--porcelain").splitlines()}
    history = {p for p in changed if p.startswith("autograder/release_history/")}
    assert len(history) == 1 and changed - history == {
        "README.md", "autograder/test_plan.csv", f"solutions/{NOTEBOOK}/{NOTEBOOK}.ipynb",
        f"exercises/{NOTEBOOK}/{NOTEBOOK}.ipynb"}

    again = {r.student: r for r in grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)}
    for student, result in again.items():
        [note] = [n.text for n in result.notes_of(NoteKind.REGRADE)]
        assert f"{ADDED} new (1/1)" in note and f"{REMOVED} removed" in note
        assert f"{REPOINTED} now out of 4 (was 2)" in note, note
        assert f"automatic total {first[student].score:g} → {result.score:g}" in note
    assert {t.cell_id for t in again["ada"].tests} == {t.cell_id for t in first["ada"].tests} - {REMOVED} | {ADDED}
    assert again["ada"].max_score == first["ada"].max_score + 1 - 2 + (4 - 2)      # added, removed, re-pointed
    with gradebook.open_gradebook(course) as gb:
        ada = gradebook.cell_scores(gb, "ada", NOTEBOOK, NOTEBOOK)
        assert ada[KEPT_MANUAL] == (1.5, True)                       # formgrader's grade kept
        assert REMOVED not in ada and ada[ADDED] == (1.0, False) and ada[REPOINTED] == (4.0, False)
        score, max_score = gradebook.final_scores(gb, "ada", NOTEBOOK)
        assert max_score == again["ada"].max_score and score == again["ada"].score - 4 + 1.5
    assert _portal_rows(course) == portal_before
