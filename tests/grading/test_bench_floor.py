"""`make bench`'s floor runs every assignment's hidden checks in the grader's own process: the probes' stand-ins
must be importable there under the names the sandbox ships them by."""
import pytest

from notebook_tools import ROOT
from posenc_autograder.devtools.bench import ASSIGNMENT, BONUS, floor_cpu


@pytest.mark.parametrize("assignment", [ASSIGNMENT, *BONUS])
def test_the_floor_runs_each_assignments_checks_in_process(assignment):
    assert floor_cpu(ROOT, assignment, repeats=1) > 0      # it ran; its figure is make bench's to print
