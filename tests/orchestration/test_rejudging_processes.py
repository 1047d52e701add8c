"""A class re-judged from kept records (a hidden test's points changed) is spread over processes forked from the run
(orchestration/ahead.py): they re-judge (each stored record as the run read it), the run stores, in order. What is
stored is byte for byte what one process stores (results, autograded notebooks, feedback pages, integrity evidence,
kept records, attempts, the gradebook's rows), and a process that dies loses nothing: the run re-judges its notebooks
itself."""
import copy
import os
import pathlib
import shutil
import sqlite3
import time

import pytest
from fixture_submissions import NOTEBOOK, course_with_solvers, set_released_points

from posenc_autograder.course import GRADEBOOK, RELEASE_DIRECTORY
from posenc_autograder.grading import regrade
from posenc_autograder.orchestration import grade
from posenc_autograder.records import results_store
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=60)
TEST = "hidden_pe_values"
STUDENTS = ("ann", "ben", "cat", "dan")             # dan hands in the notebook as released: every test fails
STORED = ("autograded", "feedback", "attempts", ".work/integrity")
ROWS = ("SELECT * FROM grade ORDER BY id", "SELECT * FROM comment ORDER BY id",
        "SELECT * FROM submitted_assignment ORDER BY id", "SELECT * FROM submitted_notebook ORDER BY id")


def _stored(course) -> dict:
    """Every file a regrade stores per notebook, and the gradebook's rows."""
    found = {}
    for folder in STORED:
        for path in sorted((course.root / "autograder" / folder).rglob("*")):
            if path.is_file() and path.name != ".lock":
                found[str(path.relative_to(course.root))] = path.read_bytes()
    with sqlite3.connect(course.path(GRADEBOOK)) as database:
        for query in ROWS:
            found[query] = database.execute(query).fetchall()
    return found


@pytest.fixture(scope="module")
def graded_once(tmp_path_factory):
    """A class graded once a module, then a hidden test's points changed; the course as it then is kept aside."""
    tmp_path = tmp_path_factory.mktemp("rejudged")
    course = course_with_solvers(tmp_path / "course", *STUDENTS[:-1])
    stub = course.path(RELEASE_DIRECTORY) / "positional_encoding" / f"{NOTEBOOK}.ipynb"
    (course.submitted / STUDENTS[-1] / "positional_encoding").mkdir(parents=True)
    shutil.copy(stub, course.submitted / STUDENTS[-1] / "positional_encoding" / f"{NOTEBOOK}.ipynb")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    set_released_points(course, TEST, 5)
    aside = tmp_path / "aside"
    shutil.copytree(course.root, aside, symlinks=True)

    def again():
        shutil.rmtree(course.root)
        shutil.copytree(aside, course.root, symlinks=True)
        return course
    return course, again


@pytest.fixture
def graded_class(graded_once):
    """The class as graded_once left it, for each test (a test regrades it, twice): (course, again)."""
    course, again = graded_once
    return again(), again


def _prepared_where(monkeypatch, log: pathlib.Path, dies: str | None = None, after: str | None = None):
    """Each notebook's prepare logged with the process that did it; `dies`: that student's kills its process, once
    `after`'s notebook was begun by a process (a pool broken before that leaves it to the run: a race under load)."""
    real, run = grade.prepare_run, os.getpid()

    def logged(course, sub, *args, **kwargs):
        if sub.student == dies and os.getpid() != run:
            _wait_for(log, f"{after} process")
            os._exit(9)                               # the process dies mid-notebook, nothing said
        with open(log, "a") as out:
            out.write(f"{sub.student} {'run' if os.getpid() == run else 'process'}\n")
        return real(course, sub, *args, **kwargs)

    monkeypatch.setattr(grade, "prepare_run", logged)


def _wait_for(log: pathlib.Path, line: str, seconds: float = 120) -> None:
    """Until the log holds this line (a bounded wait: past it, the test's own assertion says what is missing)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and line not in (log.read_text().splitlines() if log.is_file() else []):
        time.sleep(0.01)


def _where(log: pathlib.Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for line in log.read_text().splitlines():
        student, where = line.split()
        found.setdefault(student, set()).add(where)
    return found


def test_a_class_rejudged_by_processes_stores_what_one_process_stores(graded_class, tmp_path, monkeypatch, capsys):
    course, again = graded_class
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS)
    alone = _stored(course)
    assert "4 notebooks re-judged from their kept records" in capsys.readouterr().err
    assert [next(t.max_points for t in r.tests if t.cell_id == TEST) for r in results] == [5] * 4

    monkeypatch.setattr(grade, "AHEAD_FROM", 2, raising=False)
    _prepared_where(monkeypatch, tmp_path / "spread.log")
    real_load, run = results_store.load, os.getpid()
    monkeypatch.setattr(results_store, "load", lambda path: real_load(path) if os.getpid() == run
                        else pytest.fail("a process read a stored record again"))
    spread = grade.grade_all(again(), jobs=2, isolate=False, limits=LIMITS)
    assert "4 notebooks re-judged from their kept records" in capsys.readouterr().err
    assert _where(tmp_path / "spread.log") == {student: {"process"} for student in STUDENTS}   # none in the run
    assert [r.to_json() for r in spread] == [r.to_json() for r in results]
    assert _stored(course) == alone


def test_a_process_that_dies_loses_nothing(graded_class, tmp_path, monkeypatch, capsys):
    course, again = graded_class
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    alone = _stored(course)

    monkeypatch.setattr(grade, "AHEAD_FROM", 2, raising=False)
    _prepared_where(monkeypatch, tmp_path / "died.log", dies="ben", after="ann")
    survived = grade.grade_all(again(), jobs=2, isolate=False, limits=LIMITS)
    assert "4 notebooks re-judged from their kept records" in capsys.readouterr().err   # none run again
    where = _where(tmp_path / "died.log")
    assert "run" in where["ben"] and "process" in where["ann"]     # the run re-judged the dead process's notebook
    assert [r.to_json() for r in survived] == [r.to_json() for r in results]
    assert _stored(course) == alone


def _made_where(monkeypatch, log: pathlib.Path):
    """Each feedback page rendered and each autograded notebook built, logged with the process that did it."""
    from posenc_autograder.records import nbgrader_files
    from posenc_autograder.reports import feedback

    run = os.getpid()

    def logging(module, name):
        real = getattr(module, name)

        def logged(*args, **kwargs):
            with open(log, "a") as out:
                out.write(f"{name} {'run' if os.getpid() == run else 'process'}\n")
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, logged)

    logging(feedback, "render")
    logging(nbgrader_files, "autograded_notebook")


def test_the_processes_make_the_pages_and_autograded_notebooks_the_run_stores(graded_class, tmp_path, monkeypatch):
    """The run writes what the processes made of each notebook (its autograded notebook and feedback page, from the
    result as the run settles it and the gradebook's automatic points): it renders none itself, and stores what
    one process stores. (The old code: the run made all eight.)"""
    course, again = graded_class
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    alone = _stored(course)

    monkeypatch.setattr(grade, "AHEAD_FROM", 2, raising=False)
    _made_where(monkeypatch, tmp_path / "made.log")
    grade.grade_all(again(), jobs=2, isolate=False, limits=LIMITS, quiet=True)
    made = (tmp_path / "made.log").read_text().split("\n")
    assert sorted(set(made) - {""}) == ["autograded_notebook process", "render process"]
    assert made.count("render process") == len(STUDENTS)
    assert _stored(course) == alone


def test_a_manual_grade_and_a_comment_are_on_the_page_the_run_renders_itself(graded_class, tmp_path, monkeypatch):
    """A notebook whose gradebook holds more than its automatic points (an instructor's score or comment) has its page
    rendered by the run, from the gradebook, as one process renders it; the others' pages are the processes'."""
    from posenc_autograder.records import gradebook

    course, again = graded_class

    def by_hand(course):
        with gradebook.open_gradebook(course) as gb:
            gb.find_grade(TEST, NOTEBOOK, NOTEBOOK, "ann").manual_score = 1.5
            gb.db.commit()
        with sqlite3.connect(course.path(GRADEBOOK)) as db:
            comment = db.execute("SELECT comment.id FROM comment JOIN submitted_notebook ON comment.notebook_id = "
                                 "submitted_notebook.id JOIN submitted_assignment ON submitted_notebook.assignment_id "
                                 "= submitted_assignment.id WHERE submitted_assignment.student_id = 'cat' "
                                 "ORDER BY comment.id LIMIT 1").fetchone()[0]
            db.execute("UPDATE comment SET manual_comment = 'See me about the scaling' WHERE id = ?", (comment,))
        return course

    grade.grade_all(by_hand(course), jobs=1, isolate=False, limits=LIMITS, quiet=True)
    alone = _stored(course)
    page = "autograder/feedback/{}/positional_encoding/" + f"{NOTEBOOK}.html"
    assert b"set by your instructor" in alone[page.format("ann")]
    assert b"See me about the scaling" in alone[page.format("cat")]

    monkeypatch.setattr(grade, "AHEAD_FROM", 2, raising=False)
    _made_where(monkeypatch, tmp_path / "made.log")
    grade.grade_all(by_hand(again()), jobs=2, isolate=False, limits=LIMITS, quiet=True)
    made = (tmp_path / "made.log").read_text().split("\n")
    assert made.count("render run") == 2 and made.count("render process") == len(STUDENTS)
    assert _stored(course) == alone


def test_what_a_process_made_from_another_result_is_not_written(graded_class, monkeypatch):
    """A notebook whose result as the run settles it is not the one a process made its files from: the run builds
    its autograded notebook and page itself, from the notebook the process sent, as one process does."""
    import dataclasses

    from posenc_autograder.records import graded
    from posenc_autograder.results import Note, NoteKind

    course, again = graded_class
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    alone = _stored(course)

    real = graded.made_ahead

    def from_another_result(*args, **kwargs):
        made = real(*args, **kwargs)
        other = copy.deepcopy(made.result)
        other.notes.append(Note(NoteKind.ASSEMBLY, "not what the run settles"))
        return dataclasses.replace(made, result=other, autograded="{}", page=dataclasses.replace(
            made.page, stored=dataclasses.replace(made.page.stored, result=other), text="not the page"))

    monkeypatch.setattr(grade, "AHEAD_FROM", 2, raising=False)
    monkeypatch.setattr(graded, "made_ahead", from_another_result)
    grade.grade_all(again(), jobs=2, isolate=False, limits=LIMITS, quiet=True)
    assert _stored(course) == alone


def test_the_code_that_runs_a_job_is_digested_once_a_run(graded_class, monkeypatch):
    """Each notebook's job digests take the digest of the code that runs a job (regrade.RUN_CODE): worked out once a
    run, as the judge's is (it stats every file of the sandbox package), not once a notebook."""
    course, _ = graded_class
    calls, real = [], regrade._code_digest
    monkeypatch.setattr(regrade, "_code_digest", lambda *args: calls.append(args) or real(*args))
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert len(results) == len(STUDENTS) and calls == [(regrade.PACKAGE, regrade.RUN_CODE)]


def test_the_processes_are_forked_before_the_run_makes_the_gradebook_ready(graded_class, monkeypatch):
    """With no zygote to wait for, the processes re-judging ahead are forked before the run registers the assignment
    and opens the gradebook (importing nbgrader's models, which they never use): they re-judge while it does. (The old
    code forked them once the gradebook was open, its models imported.)"""
    import subprocess
    import sys

    from posenc_autograder.orchestration import ahead
    from posenc_autograder.records import gradebook

    course, _ = graded_class
    order, real_start, real_register = [], ahead.Ahead.__init__, gradebook.register

    def forked(self, *args, **kwargs):
        order.append("forked")
        real_start(self, *args, **kwargs)

    monkeypatch.setattr(ahead.Ahead, "__init__", forked)
    monkeypatch.setattr(gradebook, "register", lambda *args: order.append("registered") or real_register(*args))
    monkeypatch.setattr(grade, "AHEAD_FROM", 2, raising=False)
    grade.grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)
    assert order[:2] == ["forked", "registered"]
    imported = subprocess.run([sys.executable, "-c", "import sys; from posenc_autograder.orchestration import grade; "
                               "from posenc_autograder.records import graded; print('nbgrader.api' in sys.modules)"],
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(pathlib.Path(grade.__file__).parents[2])})
    assert imported.stdout.split() == ["False"], imported.stderr


def test_the_class_files_of_a_round_take_submitted_as_the_round_hashed_it(graded_class, monkeypatch):
    """The class files a round writes take each submission's time from what place_counted hashed of submitted/ for the
    round: no submitted notebook is read and hashed again to find its attempt. (The old code hashed every one.)"""
    from posenc_autograder.intake import attempts
    from posenc_autograder.orchestration import class_files

    course, _ = graded_class
    writing, hashed = [], []
    real_rebuild, real_in_submitted = class_files.rebuild_class_files, attempts.in_submitted

    def rebuilt(*args, **kwargs):
        writing.append(True)
        try:
            return real_rebuild(*args, **kwargs)
        finally:
            writing.pop()

    monkeypatch.setattr(class_files, "rebuild_class_files", rebuilt)
    monkeypatch.setattr(attempts, "in_submitted",
                        lambda *args: hashed.append(bool(writing)) or real_in_submitted(*args))
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert hashed.count(True) == 0 and hashed.count(False) == 2 * len(STUDENTS)      # place_counted's, twice
    written = {path: path.read_bytes() for path in course.reports.rglob("*") if path.is_file()}
    real_rebuild(course)                                  # make feedback's: it reads submitted/ itself
    assert {path: path.read_bytes() for path in course.reports.rglob("*") if path.is_file()} == written
