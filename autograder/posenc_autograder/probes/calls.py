"""Generic probes beyond helpers.call_each: the contracts (return type, and the arguments as they are after
the call) of every function of an assignment's manifest.

As everywhere in this package, every function name and argument arrives in `data`, built on the
trusted side from the manifest (checks/<assignment>/manifest.py).
"""
from __future__ import annotations

from .helpers import argument, attempt_contract, describe, kind_of, standing_in, student_callable


def _arguments(c: dict):
    return [argument(a) for a in c["args"]], {k: argument(v) for k, v in c["kwargs"].items()}


def contract_target(ns: dict, name: str, c: dict):
    """The student's function `name`, or for a member the bound method (or attribute value) of c["member"] on an
    instance built, set and stepped as c says."""
    if "member" not in c:
        return student_callable(ns, name)
    args, kwargs = _arguments(c["init"])
    instance = student_callable(ns, name.split(".", 1)[0])(*args, **kwargs)
    for attribute, value in c.get("set", {}).items():
        setattr(instance, attribute, argument(value))
    for method, step in c["steps"]:
        step_args, step_kwargs = _arguments(step)
        getattr(instance, method)(*step_args, **step_kwargs)
    return getattr(instance, c["member"])


def contract_case(ns: dict, name: str, c: dict) -> dict:
    """One contract: {'missing': why} for an undefined name, {'error': ...} when setting it up raised, else
    attempt_contract's record (an attribute: its kind alone)."""
    try:
        target = contract_target(ns, name, c)
    except NameError as exc:
        return {"missing": str(exc)}
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - set-up raising is the student's exception
        return {"error": describe(exc)}
    if c.get("attribute"):
        return {"kind": kind_of(target), "arguments": []}
    args, kwargs = _arguments(c)
    return attempt_contract(target, *args, **kwargs)


def contract_each(ns: dict, data: dict) -> dict:
    """{name: contract_case(...)} for each call of data["calls"] ({name: call record}), with the functions of
    data["stand_ins"][name] replaced while it runs: a mistake in a function it calls is not its own."""
    stand_ins = data.get("stand_ins", {})
    found = {}
    for name, c in data["calls"].items():
        with standing_in(ns, stand_ins.get(name, {})):
            found[name] = contract_case(ns, name, c)
    return found
