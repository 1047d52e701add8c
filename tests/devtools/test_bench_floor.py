"""`make bench`'s floor runs every assignment's hidden checks in the grader's own process: the probes' stand-ins
must be importable there under the names the sandbox ships them by, and what it times must be the real checks:
every hidden test judged, passing on the solution and failing on the notebook as handed out."""
import nbformat
import pytest
from notebook_tools import ROOT

from posenc_autograder.checks import hidden_tests, stand_ins_in_process
from posenc_autograder.course import Course
from posenc_autograder.devtools.bench import ASSIGNMENT, bonus_assignments, floor_problems, notebook_namespace, solved

ASSIGNMENTS = [ASSIGNMENT, *bonus_assignments(Course(ROOT))]


def test_make_bench_times_every_assignment_of_the_course():
    """The assignments are the course's solutions/ folders, never a list kept by hand."""
    assert ASSIGNMENTS == \
        [ASSIGNMENT, *sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and p.name != ASSIGNMENT)]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_floor_judges_every_hidden_test_in_process(assignment):
    stand_ins_in_process()
    tests = hidden_tests(assignment)
    inputs = {test.id: test.plain_inputs() for test in tests}
    on_solution = floor_problems(notebook_namespace(solved(ROOT, assignment)), tests, inputs)
    assert set(on_solution) == {test.id for test in tests}
    assert {cid: found for cid, found in on_solution.items() if found} == {}
    handed_out = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    on_stubs = floor_problems(notebook_namespace(handed_out), tests, inputs)
    assert [cid for cid, found in on_stubs.items() if not found] == [], "a stub passed a check the floor times"
