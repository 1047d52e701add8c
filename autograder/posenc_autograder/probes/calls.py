"""Generic probes beyond helpers.call_each: calls with the student's own earlier functions beside them,
and the contracts (return type, dtype, arguments left unchanged) of several functions at once.

As everywhere in this package, every function name and argument arrives in `data`, built on the
trusted side by the hidden test's inputs().
"""
from __future__ import annotations

import contextlib

from .helpers import argument, attempt_contract, call_each, returns_float64


def _defined(ns: dict, name: str) -> bool:
    return ns.get(name) is not None


def call_each_with_parts(ns: dict, data: dict) -> dict:
    """call_each, plus under "parts" the student's own earlier functions called as data["parts"] says
    ({label: calling(...)}): a test of a function built on them is judged on their answers too, so that
    one mistake costs its own test only. An undefined part is recorded as missing, not as this test's."""
    with contextlib.ExitStack() as parts_as_float64:
        for part in data["parts"].values():
            parts_as_float64.enter_context(returns_float64(ns, part["function"]))
        obs = call_each(ns, data)
    obs["parts"] = {label: call_each(ns, part) if _defined(ns, part["function"])
                    else {"missing": f"`{part['function']}` is not defined"}
                    for label, part in data["parts"].items()}
    return obs


def contract_each(ns: dict, data: dict) -> dict:
    """{name: attempt_contract(the function `name`, *args)} for each call of data["calls"] ({name: call record}):
    the kind of what came back, and which of the caller's arrays the call changed."""
    return {name: attempt_contract(ns[name], *map(argument, c["args"])) if _defined(ns, name)
            else {"missing": f"`{name}` is not defined"}
            for name, c in data["calls"].items()}
