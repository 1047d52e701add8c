"""Every hidden test, by its nbgrader cell id: the TESTS list of each module of each assignment's subpackage.

A subpackage per assignment (checks/<assignment>/), a module per part; the shared machinery (base,
contracts, reference, diagnosis, variants) sits beside them. Adding a module (or a HiddenTest to one) is
all it takes, then `make release` writes the notebooks' hidden cells, the test plan and the README's totals.
"""
import importlib
import pkgutil

from .base import HiddenTest, registry

ASSIGNMENT_PACKAGES = [importlib.import_module(f"{__name__}.{info.name}")
                       for info in pkgutil.iter_modules(__path__) if info.ispkg]
PART_MODULES = [importlib.import_module(f"{package.__name__}.{info.name}")
                for package in ASSIGNMENT_PACKAGES for info in pkgutil.iter_modules(package.__path__)
                if not info.ispkg]
REGISTRY: dict[str, HiddenTest] = registry(*PART_MODULES)


def hidden_tests(assignment: str) -> list[HiddenTest]:
    return [test for test in REGISTRY.values() if test.assignment == assignment]


def total_points(assignment: str) -> float:
    return sum(test.points for test in hidden_tests(assignment))


__all__ = ["REGISTRY", "HiddenTest", "hidden_tests", "total_points"]
