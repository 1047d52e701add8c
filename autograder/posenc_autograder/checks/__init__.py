"""Every hidden test, by its nbgrader cell id: the TESTS list of each module of each assignment's subpackage.

A subpackage per assignment (checks/<assignment>/): its manifest, a module per part, its reference (a leaf the
book imports too), diagnoses, catalogue, mutation battery and stand-ins (stand_ins.py, numpy only: shipped into the
sandbox beside the probes, see stand_in_sources); the shared machinery sits beside them: the hidden test and its
registry (hidden), comparing answers (comparison), reproducing a failing case (reproduction), contracts,
diagnosis, variants and catalogue. Adding a module (or a HiddenTest to one) is all it takes, then `make release`
writes the notebooks' hidden cells, the test plan and the README's totals.

The assignments are discovered when first asked for (REGISTRY, ASSIGNMENT_PACKAGES, PART_MODULES), not by importing
this package: importing an assignment's reference module (as the book does) loads no hidden test. The grader's own
modules that judge, store or report (grading.pipeline, records.evidence, reports.dashboard, authoring.release, ...)
ask for REGISTRY as they are imported, so any command that grades has discovered them by its first notebook.
"""
from __future__ import annotations

import functools
import importlib
import pathlib
import pkgutil
import sys

DISCOVERED = ("ASSIGNMENT_PACKAGES", "PART_MODULES", "REGISTRY")
# An assignment's modules that hold no hidden test: its trusted reference, its diagnoses, its catalogue of mistakes
# and alternatives (the tests' and `make bench-scale`'s), the calls `make mutate` judges equivalence on.
NOT_PARTS = ("reference", "diagnosis", "catalogue", "mutation_battery", "stand_ins")
STAND_INS = "stand_ins"                  # the module of an assignment's own stand-in kinds


@functools.cache
def _discovered() -> dict:
    from .hidden import registry
    packages = [importlib.import_module(f"{__name__}.{info.name}")
                for info in pkgutil.iter_modules(__path__) if info.ispkg]
    parts = [importlib.import_module(f"{package.__name__}.{info.name}")
             for package in packages for info in pkgutil.iter_modules(package.__path__)
             if not info.ispkg and info.name not in NOT_PARTS]
    return {"ASSIGNMENT_PACKAGES": packages, "PART_MODULES": parts, "REGISTRY": registry(*parts)}


def __getattr__(name: str):
    if name in DISCOVERED:
        return _discovered()[name]
    if name == "HiddenTest":
        from .hidden import HiddenTest
        return HiddenTest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def stand_in_files() -> list[pathlib.Path]:
    return sorted(pathlib.Path(__file__).parent.glob(f"*/{STAND_INS}.py"))


def stand_in_sources() -> dict[str, str]:
    """{file name among the shipped probes: source} of every assignment's stand_ins.py (the sandbox imports it as
    the probes' stand_ins_<assignment>, probes.helpers.shipped_stand_ins)."""
    from posenc_autograder.probes.helpers import shipped_stand_ins
    return {f"{shipped_stand_ins(path.parent.name)}.py": path.read_text() for path in stand_in_files()}


@functools.cache
def stand_ins_in_process() -> None:
    """Every assignment's stand-in module importable under the name the probes use, for probes run in the grader's
    own process (notebook.record_in_process): the module itself, under a second name."""
    from posenc_autograder import probes
    from posenc_autograder.probes.helpers import shipped_stand_ins
    for path in stand_in_files():
        module = importlib.import_module(f"{__name__}.{path.parent.name}.{STAND_INS}")
        sys.modules.setdefault(f"{probes.__name__}.{shipped_stand_ins(path.parent.name)}", module)


def hidden_tests(assignment: str) -> list:
    return [test for test in _discovered()["REGISTRY"].values() if test.assignment == assignment]


def total_points(assignment: str) -> float:
    return sum(test.points for test in hidden_tests(assignment))


__all__ = ["REGISTRY", "HiddenTest", "hidden_tests", "stand_in_sources", "stand_ins_in_process", "total_points"]
