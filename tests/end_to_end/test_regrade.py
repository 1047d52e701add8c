"""Regrading when the course changes: a re-release with edited visible tests, a stricter grader with
--force, and a run limited to one student that merges into the class files."""
import copy
import csv
import json
import shutil

import nbformat
import pytest
from fixture_submissions import FULL, make_course, solved_notebook
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.authoring import release_history
from posenc_autograder.course import Course
from posenc_autograder.grading.pipeline import prepare
from posenc_autograder.intake.submissions import discover
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.settings import Limits

NB = "positional_encoding"
LIMITS = Limits(cell_seconds=8, notebook_seconds=30)
EDITED = "read-only cells were edited"


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _submit(course, student, nb):
    folder = course.submitted / student / NB
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{NB}.ipynb")


def _notes(course):
    """student -> notes from preparing (assembling) each submission; nothing is run."""
    notes = {}
    for sub in discover(course):
        prepare(course, sub, LIMITS, isolate=False)
        notes[sub.student] = " ".join(n.text for n in sub.notes)
    return notes


@pytest.fixture(scope="module")
def rereleased(tmp_path_factory):
    """A class that submitted against release 1; then the instructor edits a visible test and re-releases."""
    course = Course(make_course(tmp_path_factory.mktemp("rerelease")))
    shutil.copy(ROOT / "autograder" / "test_plan.csv", course.path("autograder/test_plan.csv"))
    release_history.record(course, NB)                       # release 1, as `make release` left it
    old = solved_notebook()
    _submit(course, "kept_old_copy", old)
    cheated = copy.deepcopy(old)
    _cell(cheated, "test_pe_visible").source = "pass  # tests removed"
    _submit(course, "edited_test", cheated)
    source = nbformat.read(course.source_notebook(NB, NB), as_version=4)
    _cell(source, "test_pe_visible").source += "\nassert pe.dtype.kind == 'f', 'the table should hold floats'"
    nbformat.write(source, course.source_notebook(NB, NB))
    assert cli.main(["release", "--course", str(course.root)]) == 0   # `make release`
    return course


def test_rerelease_accepts_earlier_released_test_cells(rereleased):
    course = rereleased
    released = nbformat.read(course.path("exercises") / NB / f"{NB}.ipynb", as_version=4)
    assert "should hold floats" in _cell(released, "test_pe_visible").source
    assert len(list(release_history.folder(course, NB).glob("*.json"))) == 2
    notes = _notes(course)
    assert EDITED not in notes["kept_old_copy"]
    assert EDITED in notes["edited_test"] and "test_pe_visible" in notes["edited_test"]


def test_without_the_history_the_old_copy_would_be_blamed(rereleased):
    history = release_history.folder(rereleased, NB)
    history.rename(history.with_name("set_aside"))
    try:
        assert EDITED in _notes(rereleased)["kept_old_copy"]
    finally:
        history.with_name("set_aside").rename(history)


def _with_reservation(nb):
    """The solution, but dot_product_distance reserves 1.9 GiB of address space it never uses."""
    nb = copy.deepcopy(nb)
    cell = _cell(nb, "dot_product_and_statistics")
    assert "    return pe @ pe.T" in cell.source
    cell.source = cell.source.replace("    return pe @ pe.T", "    spare = np.empty(int(1.9 * 2**30), dtype=np.uint8)\n"
                                                               "    return pe @ pe.T")
    return nb


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("course")))
    solved = solved_notebook()
    _submit(course, "correct", solved)
    _submit(course, "roomy", _with_reservation(solved))
    _submit(course, "untouched", nbformat.read(ROOT / "exercises" / NB / f"{NB}.ipynb", as_version=4))
    results = {r.student: r.score for r in grade_all(course, jobs=2, limits=LIMITS, quiet=True)}
    assert results == {"correct": FULL, "roomy": FULL, "untouched": 0}
    return course


def _grades(course):
    return {r["student"]: float(r["score"]) for r in csv.DictReader(open(course.grades_csv))}


def test_stricter_grader_with_force_lowers_and_says_what_changed(graded_class):
    course = graded_class
    stricter = Limits(cell_seconds=8, notebook_seconds=30, memory_bytes=int(1.5 * 2**30))
    [roomy] = grade_all(course, jobs=1, limits=stricter, quiet=True, students=["roomy"], force=True)
    lost = [t for t in roomy.tests if t.points < t.max_points and t.cell_id != "hidden_contracts"]
    assert [t.cell_id for t in lost] == ["hidden_dot_product"]      # and its contract case, which needs it to pass
    change = next(n.text for n in roomy.notes if n.text.startswith("regraded with a changed grader"))
    assert f"hidden_dot_product {lost[0].max_points:g} → 0" in change and f"total {FULL:g} → {roomy.score:g}" in change
    # A single-student run merges into the class files instead of replacing them.
    assert _grades(course) == {"correct": FULL, "roomy": roomy.score, "untouched": 0}
    entries = json.loads((course.reports / "grading-report.json").read_text())
    assert [e["student"] for e in entries] == ["roomy"]
    dashboard = (course.reports / "class.html").read_text()
    assert all(f'data-label="Student">{s}</td>' in dashboard for s in ("correct", "roomy", "untouched"))
    # The same grader again: the file and grader are unchanged, so nothing is re-run or lowered.
    [again] = grade_all(course, jobs=1, limits=stricter, quiet=True, students=["roomy"])
    assert again.score == roomy.score


def test_a_test_added_after_the_first_grading_is_recorded_for_earlier_submissions(tmp_path):
    """A re-release that adds a hidden test: students graded before it get a grade row for it on the next run."""
    import sqlite3

    from posenc_autograder.records import gradebook

    course = Course(make_course(tmp_path / "course"))
    _submit(course, "early", solved_notebook())
    grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    with sqlite3.connect(course.path("autograder/gradebook.db")) as db:      # as if the test were new
        db.execute("DELETE FROM grade WHERE cell_id = (SELECT id FROM base_cell WHERE name = 'hidden_contracts')")
    with gradebook.open_gradebook(course) as gb:
        assert "hidden_contracts" not in gradebook.cell_scores(gb, "early", NB, NB)
    (result,) = grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True, force=True)
    assert result.graded and result.score == FULL
    with gradebook.open_gradebook(course) as gb:
        assert gradebook.final_scores(gb, "early", NB) == (FULL, FULL)
