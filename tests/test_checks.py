"""The hidden-test checks, run in-process on the solution and on student variants (milliseconds each)."""
import pytest

from notebook_tools import implementation_source, namespace_from, solution_notebook
from posenc_autograder.checks import REGISTRY
from posenc_autograder.notebook import run_check
from student_variants import ALTERNATIVES, MISTAKES

SOLUTION = implementation_source(solution_notebook("positional_encoding"))
CORE_CHECKS = [cid for cid, c in REGISTRY.items() if c.assignment == "positional_encoding"]


def failures(ns):
    return {cid: problems for cid in CORE_CHECKS if (problems := run_check(cid, ns))}


def test_solution_passes_every_check():
    assert failures(namespace_from(SOLUTION)) == {}


def test_catalogue_has_at_least_25_mistakes():
    assert len(MISTAKES) >= 25
    assert len({m.name for m in MISTAKES}) == len(MISTAKES)


# Some mistakes (an unshifted softmax) overflow on purpose; their warnings are the mistake, not noise.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.name)
def test_mistake_loses_points_with_a_useful_message(mistake):
    problems = run_check(mistake.failing_check, namespace_from(SOLUTION, mistake.code))
    assert problems, f"{mistake.name} passed {mistake.failing_check}"
    if mistake.feedback_phrase:
        assert mistake.feedback_phrase in " ".join(problems), problems


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_correct_alternative_gets_full_marks(name):
    assert failures(namespace_from(SOLUTION, ALTERNATIVES[name])) == {}


def test_template_stubs_fail_every_check():
    stubbed = SOLUTION
    ns = namespace_from(stubbed, "def _stub(*a, **k):\n    raise NotImplementedError()\n"
                                 "sinusoidal_positional_encoding = relative_position_matrix = _stub\n"
                                 "dot_product_distance = encoding_statistics = self_attention = _stub\n"
                                 "encode_and_attend = _stub\n"
                                 "class SinusoidalPositionalEncoding:\n    __init__ = _stub\n"
                                 "class LearnedPositionalEncoding:\n    __init__ = _stub\n")
    assert set(failures(ns)) == set(CORE_CHECKS)


def test_missing_function_is_reported_by_name():
    ns = namespace_from(SOLUTION)
    del ns["dot_product_distance"]
    assert "`dot_product_distance` is not defined" in run_check("hidden_dot_product", ns)[0]


def test_probes_import_nothing_of_the_grader():
    """The probes package is shipped into the sandbox: it must not pull in the reference or the judges."""
    import ast
    import pathlib
    import sys

    import posenc_autograder.probes as probes_package

    allowed = set(sys.stdlib_module_names) | {"numpy", "IPython"}
    for path in pathlib.Path(probes_package.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level <= 1, (path.name, "imports from outside the probes package")
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            assert all(n.split(".")[0] in allowed for n in names), (path.name, names)
