"""The hidden tests, tested by mutation: a fixed sample of the references' mutants (all of them: `make mutate`)."""
import ast

import numpy as np
import pytest
from notebook_tools import ROOT

from posenc_autograder.checks import REGISTRY
from posenc_autograder.course import Course
from posenc_autograder.devtools import mutate
from posenc_autograder.notebook import run_check

SAMPLE = 60
SOURCES = mutate.reference_sources()
SOURCE = SOURCES["posenc_autograder/checks/positional_encoding/reference.py"]
STUDENT_FUNCTION = "sinusoidal_positional_encoding"


@pytest.fixture(scope="module")
def verdicts():
    return mutate.run(Course(ROOT), sample=SAMPLE, out=None)


@pytest.mark.parametrize("file", sorted(SOURCES))
def test_the_unmutated_reference_passes_every_hidden_test(file):
    namespace = mutate.student_namespace(mutate.solution_source(Course(ROOT)),
                                         mutate.mutant_module(SOURCES[file], None))
    assert {cid: problems for cid in REGISTRY if (problems := run_check(cid, namespace))} == {}


def test_mutants_cover_every_kind_of_change():
    changes = [m.change for source in SOURCES.values() for m in mutate.mutants(source)]
    for kind in ("`np.sin`: cos", "`np.max`: min", ": Sub", ": LtE", "drop `", "upper +1", ": UAdd"):
        assert any(kind in change for change in changes), kind
    assert len({(file, m.line, m.change) for file, source in SOURCES.items() for m in mutate.mutants(source)}) > 300


def test_sampled_non_equivalent_mutants_are_killed(verdicts):
    assert len(verdicts) == SAMPLE
    assert sum(v.status == "killed" for v in verdicts) >= SAMPLE // 2, "the sample must mostly be real mutants"
    assert [f"#{v.mutant.number} line {v.mutant.line}: {v.mutant.change}" for v in verdicts
            if v.status == "survived"] == []


def test_equivalence_is_judged_on_the_student_api():
    """A change only the judges' own helper sees is equivalent; a change a student could make is not."""
    by_change = {m.change: m for m in mutate.mutants(SOURCE)}
    judge_only = by_change["`w * offset`: Div"]          # in rotation_matrix_for_offset, which only judges call
    encoding = next(node for node in ast.parse(SOURCE).body if getattr(node, "name", "") == STUDENT_FUNCTION)
    sin_for_cos = next(m for m in mutate.mutants(SOURCE) if m.change == "`np.sin`: cos"
                       and encoding.lineno <= m.line <= encoding.end_lineno)     # in what the student writes too
    solution = mutate.solution_source(Course(ROOT))
    battery = mutate.spec_battery()
    original = mutate.student_namespace(solution, mutate.mutant_module(SOURCE, None))
    expected = [mutate._outcome(call, original) for call in battery]
    with np.errstate(all="ignore"):
        assert mutate.judge_mutant(judge_only, SOURCE, solution, battery, expected).status == "equivalent"
        assert mutate.judge_mutant(sin_for_cos, SOURCE, solution, battery, expected).status == "killed"


def test_the_battery_raises_only_the_errors_the_spec_asks_for():
    """A call that fails for another reason compares equal on every mutant and would hide them all."""
    namespace = mutate.student_namespace(mutate.solution_source(Course(ROOT)), mutate.mutant_module(SOURCE, None))
    reasons = []
    for call in mutate.spec_battery():
        try:
            call(namespace)
        except Exception as exc:  # noqa: BLE001 - collecting every failure is the point
            reasons.append(f"{type(exc).__name__}: {exc}")
    promised = ("must be even", "exceeds max_seq_len", "must be at least 1")      # the spec's ValueErrors
    assert reasons and all(r.startswith("ValueError: ") and any(p in r for p in promised) for r in reasons), reasons
