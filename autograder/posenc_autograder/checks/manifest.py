"""What the student writes, listed once per assignment: checks/<assignment>/manifest.py defines FUNCTIONS,
a tuple of StudentFunction. The contracts test, the probes (as data), the test stubs, mutation testing and
the release read it; adding a student function is an entry there, its answer cell and its HiddenTests.
"""
from __future__ import annotations

import dataclasses
import importlib
from typing import Callable

from posenc_autograder.checks.hidden import call
from posenc_autograder.probes.helpers import lookup_key

ARRAY, FLOAT, BOOL = "float64 array", "float", "bool"
INT_ARRAY, INT = "integer array", "int"      # indices and counts: any integer dtype, a Python or numpy int


@dataclasses.dataclass(frozen=True)
class StudentFunction:
    name: str                          # as defined: "f", or "Class.member" (a method, or an attribute read)
    arguments: tuple[str, ...]         # the template's parameters (a method's without self)
    returns: object                    # ARRAY, FLOAT, BOOL, INT_ARRAY, INT, or a tuple / dict of them: the promise
    cell: str                          # grade_id of the answer cell that defines it
    contract: Callable[[], dict] | None = None   # the contracts test's call (call() or method_call())
    stand_ins: Callable[[], dict] | None = None  # the student functions it calls -> stand-in spec, for that call
    reference: str | None = None       # its name in the assignment's reference.py when it differs; "" for none
    answers: Callable[[dict, dict], list] | None = None   # with no reference: (contract call, its stand-ins) ->
    #                                    the answers the trusted side accepts for that call (checks/contracts.py)

    @property
    def defined_name(self) -> str:
        """The name the student's cell defines: the function, or the class of a member."""
        return self.name.split(".", 1)[0]

    @property
    def member(self) -> str | None:
        return self.name.split(".", 1)[1] if "." in self.name else None


def method_call(init: dict, member: str, member_call: dict | None = None, steps=(), settings=None) -> dict:
    """A contract call of a class member: build the class with `init`, set each attribute of `settings` (values the
    trusted side chose, so that it knows the answers), call each (method, call) of `steps`, then call `member` with
    `member_call` (None: read the attribute `member`)."""
    return {**(member_call or call()), "init": init, "set": dict(settings or {}), "steps": [[m, c] for m, c in steps],
            "member": member, "attribute": member_call is None}


def functions(assignment: str) -> tuple[StudentFunction, ...]:
    """FUNCTIONS of the assignment's manifest (an empty tuple for an assignment without one)."""
    try:
        module = importlib.import_module(f"posenc_autograder.checks.{assignment}.manifest")
    except ModuleNotFoundError:
        return ()
    return tuple(module.FUNCTIONS)


def defined_names(entries) -> list[str]:
    """The names the student's cells define, in manifest order, each once."""
    return list(dict.fromkeys(entry.defined_name for entry in entries))


def by_name(entries) -> dict[str, StudentFunction]:
    return {entry.name: entry for entry in entries}


def stub_source(entries) -> str:
    """Every function and class of the manifest as the template's stub (raising NotImplementedError)."""
    lines = ["def _template_stub(*args, **kwargs):", "    raise NotImplementedError()"]
    for name in defined_names(entries):
        members = [e for e in entries if e.defined_name == name]
        if any(e.member for e in members):
            lines += [f"class {name}:", "    __init__ = _template_stub"]
        else:
            lines.append(f"{name} = _template_stub")
    return "\n".join(lines) + "\n"


# --- stand-ins (probes.helpers.standing_in): the specs, data the trusted side keeps; the shared 'lookup' kind here,
# an assignment's own kinds and their specs in its checks/<assignment>/stand_ins.py ---------------------------------

def lookup_stand_in(arguments, answers: dict, defaults=None, odd_error=False) -> dict:
    """For a function of numbers: answers {tuple of arguments: array}, arguments named and defaulted as the
    template's; ValueError for an odd first argument when `odd_error`."""
    return {"kind": "lookup", "arguments": list(arguments), "defaults": defaults or {}, "odd_error": odd_error,
            "values": {lookup_key(case): value for case, value in answers.items()}}


def lookup_answer(spec: dict, *arguments):
    """What a lookup stand-in answers for these arguments."""
    return spec["values"][lookup_key(arguments)]
