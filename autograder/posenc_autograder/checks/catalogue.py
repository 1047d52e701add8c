"""The catalogue of each assignment (checks/<assignment>/catalogue.py): plausible mistakes the grader must catch,
and correct alternatives it must accept, found the way the hidden tests are.

Each mistake redefines one piece of the solution the way a student might get it wrong, names
the hidden test that must fail, and a phrase the feedback must contain (None: any message). An
assignment's catalogue module defines MISTAKES (a list of Mistake) and ALTERNATIVES (name -> code).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import pkgutil


@dataclasses.dataclass(frozen=True)
class Mistake:
    name: str
    code: str
    failing_check: str
    feedback_phrase: str | None = None
    also_fails: tuple[str, ...] = ()     # every other hidden test it fails: with failing_check, the points it loses
    # with partial credit, the exact points lost (worked out by hand from the cases)
    points_lost: float | None = None

    @property
    def failing(self) -> set[str]:
        return {self.failing_check, *self.also_fails}


def contract_rule(mistakes: list[Mistake], contracts_test: str) -> list[Mistake]:
    """The rule, stated once: a function's contract counts only when it passes its own value tests, so a
    mistake that fails a value test fails the contracts test too (its one case there)."""
    return [m if m.failing <= {contracts_test} or contracts_test in m.failing
            else dataclasses.replace(m, also_fails=m.also_fails + (contracts_test,)) for m in mistakes]


def stubs(*names: str) -> str:
    """The template's stubs for these functions and classes (NotImplementedError)."""
    lines = ["def _template_stub(*args, **kwargs):", "    raise NotImplementedError()"]
    lines += [f"class {n}:\n    __init__ = _template_stub" if n[0].isupper() else f"{n} = _template_stub"
              for n in names]
    return "\n".join(lines) + "\n"


def missing(*names: str) -> str:
    """The names gone, as when the cell that defines them did not run."""
    return "".join(f"del {n}\n" for n in names)


def catalogues() -> dict[str, tuple[list[Mistake], dict[str, str]]]:
    """Assignment -> (MISTAKES, ALTERNATIVES), for every assignment folder with a catalogue module."""
    import posenc_autograder.checks as checks
    found = {}
    for info in pkgutil.iter_modules(checks.__path__):
        if info.ispkg and importlib.util.find_spec(f"{checks.__name__}.{info.name}.catalogue") is not None:
            module = importlib.import_module(f"{checks.__name__}.{info.name}.catalogue")
            found[info.name] = (module.MISTAKES, module.ALTERNATIVES)
    return found
