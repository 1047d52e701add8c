"""Every hidden test, by its nbgrader cell id: the TESTS list of each module of each assignment's subpackage.

A subpackage per assignment (checks/<assignment>/): its manifest, a module per part, its reference (a leaf the
book imports too), diagnoses, catalogue and mutation battery; the shared machinery (base, contracts, diagnosis,
variants, catalogue) sits beside them. Adding a
module (or a HiddenTest to one) is all it takes, then `make release` writes the notebooks' hidden cells, the
test plan and the README's totals.

The assignments are discovered on first use (REGISTRY, ASSIGNMENT_PACKAGES, PART_MODULES), not on import:
importing an assignment's reference module loads no hidden test.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil

DISCOVERED = ("ASSIGNMENT_PACKAGES", "PART_MODULES", "REGISTRY")
# An assignment's modules that hold no hidden test: its trusted reference, its diagnoses, its catalogue of mistakes
# and alternatives (the tests' and `make bench-scale`'s), the calls `make mutate` judges equivalence on.
NOT_PARTS = ("reference", "diagnosis", "catalogue", "mutation_battery")


@functools.cache
def _discovered() -> dict:
    from .base import registry
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
        from .base import HiddenTest
        return HiddenTest
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def hidden_tests(assignment: str) -> list:
    return [test for test in _discovered()["REGISTRY"].values() if test.assignment == assignment]


def total_points(assignment: str) -> float:
    return sum(test.points for test in hidden_tests(assignment))


__all__ = ["REGISTRY", "HiddenTest", "hidden_tests", "total_points"]
