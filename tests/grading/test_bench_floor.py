"""`make bench`'s floor runs every assignment's hidden checks in the grader's own process: the probes' stand-ins
must be importable there under the names the sandbox ships them by."""
import pytest

from notebook_tools import ROOT
from posenc_autograder.course import Course
from posenc_autograder.devtools.bench import ASSIGNMENT, bonus_assignments, floor_cpu


def test_make_bench_times_every_assignment_of_the_course():
    """The assignments are the course's solutions/ folders, never a list kept by hand."""
    assert [ASSIGNMENT, *bonus_assignments(Course(ROOT))] == \
        [ASSIGNMENT, *sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and p.name != ASSIGNMENT)]


@pytest.mark.parametrize("assignment", [ASSIGNMENT, *bonus_assignments(Course(ROOT))])
def test_the_floor_runs_each_assignments_checks_in_process(assignment):
    assert floor_cpu(ROOT, assignment, repeats=1) > 0      # it ran; its figure is make bench's to print
