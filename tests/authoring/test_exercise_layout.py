"""The student notebooks are what nbgrader generates, and the test plan covers the whole spec."""
import shutil

import nbformat
import pytest
from fixture_submissions import solved_notebook
from notebook_tools import ROOT, grade_cells, nbgrader_validate, solution_notebook

from posenc_autograder.authoring.plan import plan_rows, render_plan_csv
from posenc_autograder.authoring.spec_bullets import all_spec_bullets
from posenc_autograder.checks import REGISTRY
from posenc_autograder.course import run_nbgrader

ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


@pytest.mark.slow          # runs nbgrader generate_assignment
def test_committed_exercises_equal_a_fresh_generation(tmp_path):
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    (tmp_path / "autograder").mkdir()
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", tmp_path / "autograder")
    # every assignment in solutions/ in one nbgrader process (its assignment id is a glob)
    run_nbgrader(tmp_path, "generate_assignment", "*", "--force", "--log-level=ERROR", home=tmp_path,
                 check=True, capture_output=True)
    fresh = sorted(p.relative_to(tmp_path / "exercises") for p in (tmp_path / "exercises").rglob("*.ipynb"))
    committed = sorted(p.relative_to(ROOT / "exercises") for p in (ROOT / "exercises").rglob("*.ipynb"))
    assert fresh == committed, "run `make release`"
    for relative in fresh:        # byte for byte: make release generates in-process, this is nbgrader's command line
        assert (tmp_path / "exercises" / relative).read_bytes() == (ROOT / "exercises" / relative).read_bytes(), \
            f"{relative} is stale: run `make release`"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebooks_hide_solutions_and_hidden_tests(assignment):
    text = (ROOT / "exercises" / assignment / f"{assignment}.ipynb").read_text()
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden_test("):
        assert marker not in text


def test_every_spec_bullet_is_graded():
    covered = {row["bullet_id"] for row in plan_rows()}
    assert set(all_spec_bullets()) - covered == set(), "spec bullets with no hidden test"


def test_committed_plan_is_current():
    assert (ROOT / "autograder" / "test_plan.csv").read_text() == render_plan_csv(), \
        "regenerate with: python -m posenc_autograder.authoring.plan > autograder/test_plan.csv"


def test_every_planned_cell_exists_with_its_points():
    for row in plan_rows():
        cells = grade_cells(solution_notebook(row["assignment"]))
        assert row["grade_cell_id"] in cells, f"{row['grade_cell_id']} missing from {row['assignment']}"
        assert cells[row["grade_cell_id"]] == float(row["points"])


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_hidden_cell_has_a_registered_check(assignment):
    hidden = {cid for cid in grade_cells(solution_notebook(assignment)) if cid.startswith("hidden_")}
    registered = {c.cell_id for c in REGISTRY.values() if c.assignment == assignment}
    assert hidden == registered


@pytest.fixture(scope="module")
def validated(tmp_path_factory) -> dict[str, str]:
    """What a student sees from `nbgrader validate` before submitting, outside the course folder, for each
    assignment's solved and untouched notebook (all in one nbgrader process): file name -> its output."""
    folder = tmp_path_factory.mktemp("validate")
    for assignment in ASSIGNMENTS:
        nbformat.write(solved_notebook(assignment), folder / f"{assignment}_solved.ipynb")
        shutil.copy(ROOT / "exercises" / assignment / f"{assignment}.ipynb", folder / f"{assignment}_untouched.ipynb")
    return nbgrader_validate(folder, [f"{a}_{kind}.ipynb" for a in ASSIGNMENTS for kind in ("solved", "untouched")])


@pytest.mark.slow          # runs nbgrader validate
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_nbgrader_validate_passes_a_solved_notebook_and_flags_an_untouched_one(assignment, validated):
    assert "Success! Your notebook passes all the tests." in validated[f"{assignment}_solved.ipynb"]
    untouched = validated[f"{assignment}_untouched.ipynb"]
    assert "VALIDATION FAILED" in untouched and "NotImplementedError" in untouched
