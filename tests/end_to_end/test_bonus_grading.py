"""The bonus assignments (every assignment but the core one, discovered as make bench discovers them) through
`make grade` in the sandbox, as the core one is in test_grading.py: a solved notebook earns every point, the untouched
template none, and a catalogued mistake exactly what the in-process catalogue says (the same verdicts on both sides of
the sandbox)."""
import re

import nbformat
import pytest
from fixture_submissions import make_course, solved_notebook
from notebook_tools import ROOT

from posenc_autograder.checks import manifest, total_points
from posenc_autograder.checks.catalogue import catalogues
from posenc_autograder.course import Course, grade_id
from posenc_autograder.devtools.bench import bonus_assignments
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.settings import Limits

BONUS = tuple(bonus_assignments(Course(ROOT)))


def worked_mistake(assignment: str):
    """The first mistake of the assignment's catalogue whose points were worked out by hand and that redefines one
    function of its value tests (not a stub, not a contract only)."""
    mistakes, _ = catalogues()[assignment]
    return next(m for m in mistakes if m.points_lost and not m.name.startswith("stub")
                and len(re.findall(r"^def \w+", m.code, re.M)) == 1 and "contracts" not in m.failing_check)


MISTAKES = {assignment: worked_mistake(assignment) for assignment in BONUS}


def with_mistake(assignment: str, mistake) -> nbformat.NotebookNode:
    """The solved notebook with the mistaken function redefined at the end of its own answer cell."""
    nb = solved_notebook(assignment)
    name = re.search(r"^def (\w+)", mistake.code, re.M).group(1)
    cell_id = {function.name: function.cell for function in manifest.functions(assignment)}.get(name)
    cell = next(c for c in nb.cells if (grade_id(c) == cell_id if cell_id else f"def {name}(" in c.source))
    cell.source += "\n\n" + mistake.code
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("bonus")))
    for assignment in BONUS:
        template = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
        for student, nb in (("solved", solved_notebook(assignment)), ("untouched", template),
                            ("mistaken", with_mistake(assignment, MISTAKES[assignment]))):
            folder = course.submitted / student / assignment
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / f"{assignment}.ipynb")
    results = grade_all(course, jobs=2, assignments=list(BONUS), limits=Limits(cell_seconds=8, notebook_seconds=40),
                        quiet=True)
    return {(r.student, r.assignment): r for r in results}


@pytest.mark.parametrize("assignment", BONUS)
def test_a_solved_bonus_notebook_earns_every_point_and_the_template_none(graded, assignment):
    solved, untouched = graded["solved", assignment], graded["untouched", assignment]
    assert solved.graded and solved.score == total_points(assignment) > 0, [t.problems for t in solved.tests]
    assert untouched.graded and untouched.score == 0


@pytest.mark.parametrize("assignment", BONUS)
def test_a_catalogued_mistake_costs_in_the_sandbox_what_it_costs_in_process(graded, assignment):
    mistake, result = MISTAKES[assignment], graded["mistaken", assignment]
    assert {t.cell_id for t in result.tests if t.hidden and not t.passed} == mistake.failing
    assert result.score == total_points(assignment) - mistake.points_lost
