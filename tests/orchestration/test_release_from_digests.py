"""`make release` does only what changed: an assignment is generated again (nbgrader's generate_assignment, in-process)
only when its source notebook, its hidden tests or nbgrader's settings changed, or what was kept of it or released
from it was edited or deleted; a release with nothing changed reads no gradebook and imports no nbgrader; the
first registration on a course never released runs no subprocess (nbgrader's command line, `alembic`)."""
import base64
import dataclasses
import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from fixture_submissions import make_course
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.authoring import freshness, generation, release
from posenc_autograder.checks import hidden_tests
from posenc_autograder.course import Course
from posenc_autograder.records import gradebook

CHANGED = "rope_alibi"             # the assignment each test changes; the others must not be generated again


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A course released once, with its gradebook and kept entries: released from the registered test course, whose
    kept generations the release recalls by digest as a second release does (nbgrader generating from nothing is
    the first registration's test below; a whole first release, tests/authoring/test_release.py's)."""
    course = Course(make_course(tmp_path_factory.mktemp("released") / "course"))
    shutil.copy(ROOT / "autograder" / "test_plan.csv", course.path("autograder/test_plan.csv"))
    assert cli.main(["release", "--course", str(course.root)]) == 0
    return course


@pytest.fixture
def course(released, tmp_path):
    """A copy of the released course, for one test to change."""
    return Course(shutil.copytree(released.root, tmp_path / "course", symlinks=True))


def _calls_of(monkeypatch, name: str) -> list[str]:
    """The assignments generation.<name> is called with, in order (the function still runs)."""
    made = []
    real = getattr(generation, name)

    def spy(assignment, *args, **kwargs):
        made.append(assignment)
        return real(assignment, *args, **kwargs)

    monkeypatch.setattr(generation, name, spy)
    return made


@pytest.fixture
def generating(monkeypatch):
    """The assignments nbgrader generates, in order."""
    return _calls_of(monkeypatch, "_generate")


def _release(course, capsys) -> str:
    capsys.readouterr()
    assert cli.main(["release", "--course", str(course.root)]) == 0
    return capsys.readouterr().out


def _exercises(course) -> dict:
    return {str(p.relative_to(course.root)): p.read_bytes() for p in course.path("exercises").rglob("*") if p.is_file()}


def test_a_release_with_nothing_changed_generates_nothing_reads_no_gradebook_and_imports_no_nbgrader(course, capsys):
    _release(course, capsys)             # in the copy's own place (its gradebook is found at another path)
    before = {p: p.stat().st_mtime_ns for p in course.root.rglob("*") if p.is_file() and ".work" not in p.parts}
    script = ("import sys; from posenc_autograder import cli; "
              f"status = cli.main(['release', '--course', {str(course.root)!r}]); "
              "print(status, sorted(m for m in ('nbgrader', 'nbconvert', 'sqlalchemy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr
    assert "Nothing to release" in done.stdout
    assert {p: p.stat().st_mtime_ns for p in before} == before


def test_a_changed_point_value_generates_that_assignment_only(course, generating, monkeypatch, capsys):
    tests = hidden_tests(CHANGED)
    changed = dataclasses.replace(tests[0], points=tests[0].points + 1)
    monkeypatch.setattr(release, "hidden_tests", lambda a: [changed, *tests[1:]] if a == CHANGED else hidden_tests(a))
    said = _release(course, capsys)
    assert generating == [CHANGED]
    assert f"gradebook: {CHANGED}/{CHANGED}: {changed.id} {tests[0].points:g} → {changed.points:g} points" in said
    assert f"released: exercises/{CHANGED}/{CHANGED}.ipynb" in said
    notebook = course.path(f"exercises/{CHANGED}/{CHANGED}.ipynb").read_text()
    assert f"{changed.title}, with inputs you have not seen ({changed.points:g} points" in notebook
    assert _release(course, capsys).startswith("Nothing to release") and generating == [CHANGED]


def test_a_changed_hidden_test_input_generates_that_assignment_only(course, generating, monkeypatch, tmp_path, capsys):
    package = tmp_path / "package"
    shutil.copytree(generation.PACKAGE / "checks", package / "checks", ignore=shutil.ignore_patterns("__pycache__"))
    parts = package / "checks" / CHANGED / "parts.py"
    text = parts.read_text()
    assert "call(16, base=500.0)" in text
    parts.write_text(text.replace("call(16, base=500.0)", "call(16, base=600.0)"))
    monkeypatch.setattr(generation, "PACKAGE", package)
    before = _exercises(course)
    said = _release(course, capsys)
    assert generating == [CHANGED]
    assert said.startswith("Nothing to release") and _exercises(course) == before   # same notebook: nothing to hand out


def _edit_kept_entry(course):
    entry = course.work / generation.KEPT / f"{CHANGED}.json"
    stored = json.loads(entry.read_text())
    files = stored["payload"]["files"]
    files[f"{CHANGED}.ipynb"] = base64.b64encode(b'{"cells": [], "edited": true}').decode()
    entry.write_text(json.dumps(stored))


def _edit_released(course):
    path = course.path(f"exercises/{CHANGED}/{CHANGED}.ipynb")
    path.write_text(path.read_text().replace("raise NotImplementedError()", "pass", 1))


@pytest.mark.parametrize("stale, generated_again", [
    (_edit_kept_entry, True),
    (lambda course: (course.work / generation.KEPT / f"{CHANGED}.json").unlink(), True),
    (lambda course: (course.work / generation.KEPT / f"{CHANGED}.json").write_text("{"), True),
    (_edit_released, False),
    (lambda course: course.path(f"exercises/{CHANGED}/{CHANGED}.ipynb").unlink(), False),
], ids=["kept entry edited", "kept entry deleted", "kept entry cut short", "released file edited",
        "released file deleted"])
def test_what_was_kept_or_released_and_then_edited_or_deleted_is_not_trusted(course, generating, capsys, stale,
                                                                              generated_again):
    before = _exercises(course)
    stale(course)
    said = _release(course, capsys)
    assert generating == ([CHANGED] if generated_again else [])
    assert _exercises(course) == before
    if not generated_again:        # exercises/ was wrong: put right from the intact kept entry, and said
        assert f"released: exercises/{CHANGED}/{CHANGED}.ipynb" in said


def test_make_grade_registers_from_what_the_release_kept(course, generating):
    course.path("autograder/gradebook.db").unlink()
    gradebook.register(course, CHANGED)
    assert generating == [] and gradebook.is_registered(course, CHANGED)


def test_the_first_registration_on_a_course_never_released_runs_no_subprocess(tmp_path, generating, monkeypatch):
    course = Course(make_course(tmp_path / "course", registered=False))

    def refuse(*args, **kwargs):
        raise AssertionError(f"a subprocess was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse)
    gradebook.register(course, CHANGED)
    assert generating == [CHANGED] and gradebook.is_registered(course, CHANGED)


def _edit_a_released_cell(course):
    path = course.path(f"exercises/{CHANGED}/{CHANGED}.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += "\nedited by hand"
    nbformat.write(nb, path)


def test_the_release_check_on_a_course_never_released_generates_nothing_and_still_finds_an_edit(tmp_path,
                                                                                                 generating):
    """With no kept entry, make grade's check of exercises/ compares cells; it does not generate every assignment
    (the old code did, the first grade's largest cost)."""
    course = Course(make_course(tmp_path / "course", registered=False))
    assert freshness.stale_notebooks(course) == []
    _edit_a_released_cell(course)
    assert freshness.stale_notebooks(course) == [f"{CHANGED}/{CHANGED}.ipynb"]
    assert generating == []


def test_the_release_check_generates_an_assignment_when_the_settings_add_a_header(tmp_path, generating):
    """A header cell is nbgrader's to add, not the cells' comparison's: then the check generates what it has not
    kept, and a notebook released with its header is current."""
    course = Course(make_course(tmp_path / "course", registered=False))
    header = tmp_path / "header.ipynb"
    header_notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Course header")])
    nbformat.write(header_notebook, header)
    with course.path("autograder/nbgrader_config.py").open("a") as config:
        config.write(f"\nc.IncludeHeaderFooter.header = {str(header)!r}\n")
    generation.generated(course, CHANGED).write(course.path(f"exercises/{CHANGED}"))
    generation.forget(course, CHANGED)
    assert freshness.stale_notebooks(course, [CHANGED]) == []
    assert generating == [CHANGED, CHANGED]
    _edit_a_released_cell(course)
    assert freshness.stale_notebooks(course, [CHANGED]) == [f"{CHANGED}/{CHANGED}.ipynb"]


@pytest.fixture
def converting(monkeypatch):
    """The assignments nbgrader's converter made (not re-weighed), in order."""
    return _calls_of(monkeypatch, "_converted")


def test_a_points_change_is_reweighed_byte_for_byte_as_nbgrader_generates_it(course, converting, monkeypatch,
                                                                              tmp_path, capsys):
    """Only points changed: the kept entry is re-weighed (points, title line, nbgrader's checksums), nbgrader's
    converter does not run, and what is made (the released files, the gradebook's definitions) is byte for byte
    what nbgrader's generate_assignment makes of the new sources. (The old code ran the converter.)"""
    tests = hidden_tests(CHANGED)
    changed = dataclasses.replace(tests[0], points=tests[0].points + 1)
    monkeypatch.setattr(release, "hidden_tests", lambda a: [changed, *tests[1:]] if a == CHANGED else hidden_tests(a))
    said = _release(course, capsys)
    assert converting == []
    assert f"gradebook: {CHANGED}/{CHANGED}: {changed.id} {tests[0].points:g} → {changed.points:g} points" in said
    converted = generation._converted(CHANGED, course.root, generation.course_config(course), tmp_path)
    reweighed = generation.generated(course, CHANGED)
    assert converting == [CHANGED]                     # the one just asked for, to compare with
    assert reweighed.files == converted.files and converted.same_as(course.path(f"exercises/{CHANGED}"))
    assert {n: d.as_json() for n, d in reweighed.definitions.items()} == \
        {n: d.as_json() for n, d in converted.definitions.items()}
    assert f"({changed.points:g} points".encode() in converted.files[f"{CHANGED}.ipynb"]


@pytest.mark.parametrize("edit", [
    lambda cells: cells[0].update(source=cells[0]["source"] + ["\nmore"]),
    lambda cells: cells.pop(),
], ids=["another cell's text", "a cell removed"])
def test_a_source_changed_beyond_points_is_not_reweighed(edit):
    notebook = json.loads(generation._read(ROOT / "solutions" / CHANGED / f"{CHANGED}.ipynb"))
    edited = json.loads(json.dumps(notebook))
    edit(edited["cells"])
    assert generation._reweighed_cells(notebook, notebook) == []
    assert generation._reweighed_cells(notebook, edited) is None
