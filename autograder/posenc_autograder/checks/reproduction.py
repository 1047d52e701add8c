"""Reproducing a failing case: the lines of code (a call, or an instance built, stepped and read) that give back the
value the page reports as wrong, as data the page writes out, and the student's own inputs it may show beside them.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.comparison import ProblemText, problem_of

SHOWN_INPUT_NUMBERS = 256  # a failing case's input arrays are kept (shown folded) up to this many entries


def with_case(problem, row: tuple, function: str | None, stand_ins: tuple[str, ...],
              reproduce: Callable[..., Reproduction] | None):
    """A failing case's first problem with the case as data: its inputs (the student's own variant, small enough to
    show) and its failing call, from the call() record (`function`) or from `reproduce(*row)`."""
    if variants.current() is not None and (shown := inputs_of(row[0])):
        problem = ProblemText(problem, inputs=shown)
    if function is not None and (called := call_of(function, row[0], stand_ins)):
        problem = ProblemText(problem, call=called)
    if reproduce is not None:
        problem = reproduced(problem, reproduce(*row))
    return problem


def _arrays_and_numbers(case) -> list:
    if isinstance(case, dict) and "args" in case:
        return list(case["args"]) + list(case["kwargs"].values())
    return [case]


def case_size(case) -> int:
    """How big a case is: its arrays' sizes plus the product of its whole-number arguments (a table's L x d)."""
    values = _arrays_and_numbers(case)
    whole = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return sum(int(np.size(v)) for v in values if isinstance(v, (np.ndarray, list))) + math.prod(whole)


def inputs_of(case) -> list[list] | None:
    """The case's array inputs as data (nested lists, exact), for the page to show by shape and a few entries with
    the whole array in a block to copy: they are the student's own variant, so showing them helps no one else.
    Arrays over SHOWN_INPUT_NUMBERS entries in all are left out (a page is no place for thousands of numbers)."""
    arrays = [np.asarray(v, dtype=np.float64) for v in _arrays_and_numbers(case)
              if isinstance(v, (np.ndarray, list)) and np.size(v)]
    if not arrays or sum(a.size for a in arrays) > SHOWN_INPUT_NUMBERS:
        return None
    return [a.tolist() for a in arrays]


SNIPPET_SCALARS = (bool, int, float, str, type(None))


def call_of(function: str, case, stand_ins: tuple[str, ...] = ()) -> dict | None:
    """A failing call() record as data for the page's snippet: scalar arguments as they are (the sentence shows them
    already), each array argument as {"input": its place among inputs_of(case), "shape", "dtype"}, never its
    values (the page takes them from the problem's inputs, which exist only when the student may see them). None
    for a case that is not a call, or has an argument a line of code cannot write."""
    if not (isinstance(case, dict) and "args" in case):
        return None
    places = iter(range(len(case["args"]) + len(case["kwargs"])))

    def written(value):
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, SNIPPET_SCALARS):
            return value
        if isinstance(value, dict) and set(value) == {"default_rng"}:       # probes.helpers.argument's generator
            return {"default_rng": int(value["default_rng"])}
        if isinstance(value, (np.ndarray, list)) and np.size(value):
            array = np.asarray(value)
            return {"input": next(places), "shape": list(array.shape), "dtype": str(array.dtype)}
        raise TypeError(type(value).__name__)
    try:
        return {"function": function, "args": [written(v) for v in case["args"]],
                "kwargs": {str(k): written(v) for k, v in case["kwargs"].items()},
                **({"stand_ins": list(stand_ins)} if stand_ins else {})}
    except TypeError:
        return None


# --- reproducing a failing case that is more than one call: lines of code, as data ---------------

def step(function: str, *args, assign: str | None = None, **kwargs) -> dict:
    """A line `assign = function(*args, **kwargs)` of a reproduction (function may be a method: `layer.forward`)."""
    return {"call": function, "args": list(args), "kwargs": kwargs, **({"assign": assign} if assign else {})}


def setting(target: str, value) -> dict:
    """A line `target = value` (say, `layer.embedding = <the table the probe set>`)."""
    return {"set": target, "value": value}


def reading(target: str) -> dict:
    """A line that reads an attribute (say, `layer.grad_embedding`): the value judged."""
    return {"get": target}


@dataclasses.dataclass(frozen=True)
class Unshown:
    """An argument of a reproduction that is no array nor number (the grader's encoder, say): named, described."""
    name: str
    what: str


@dataclasses.dataclass(frozen=True)
class Reproduction:
    """A failing case as lines of code (call data the page writes out: each array argument by its place among
    `arrays`, its shape and dtype; an all-zero one as np.zeros), with the arrays themselves, which become the
    problem's inputs only when the student may see them."""
    call: dict
    arrays: list


def reproduction(*lines: dict, stand_ins=()) -> Reproduction:
    """The lines (step, setting, reading) of a case as data; `stand_ins`: the student functions the probe replaced
    with the grader's own while the case ran (the page says so: the line runs the student's own)."""
    arrays: list[np.ndarray] = []

    def written(value):
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, SNIPPET_SCALARS) or (isinstance(value, dict) and set(value) == {"default_rng"}):
            return value
        if isinstance(value, Unshown):
            return {"object": value.name, "what": value.what}
        array = np.asarray(value)
        if array.dtype.kind not in "biuf":
            raise TypeError(type(value).__name__)
        if array.size and not array.any():
            return {"zeros": list(array.shape)}
        arrays.append(array)
        return {"input": len(arrays) - 1, "shape": list(array.shape), "dtype": str(array.dtype)}

    written_lines = []          # an argument a line of code cannot write (TypeError): no reproduction at all
    for line in lines:
        line = dict(line)
        if "call" in line:
            line["args"] = [written(v) for v in line["args"]]
            line["kwargs"] = {str(k): written(v) for k, v in line["kwargs"].items()}
        if "set" in line:
            line["value"] = written(line["value"])
        written_lines.append(line)
    return Reproduction({"lines": written_lines, **({"stand_ins": sorted(stand_ins)} if stand_ins else {})}, arrays)


def called(function: str, case: dict, stand_ins=()) -> Reproduction:
    """The reproduction of one call() record of `function`."""
    return reproduction(step(function, *case["args"], **case["kwargs"]), stand_ins=stand_ins)


def reproduced(problem, found: Reproduction):
    """The problem (anything but a sentence, None say, stays as it is) with the case's reproduction as its call, and
    the case's arrays as its inputs when they are the student's own variant and few enough to show."""
    if not isinstance(problem, str):
        return problem
    return ProblemText(problem, call=found.call, inputs=shown_arrays(found.arrays))


def shown_arrays(arrays: list[np.ndarray]) -> list | None:
    """The arrays a page may show of a case, by place (None for one left out): all of them are the student's own
    variant, and the smallest are shown until SHOWN_INPUT_NUMBERS entries in all (a page is no place for thousands
    of numbers). None when none is shown (course-wide inputs are everyone's: never shown)."""
    if variants.current() is None:
        return None
    shown: list = [None] * len(arrays)
    budget = SHOWN_INPUT_NUMBERS
    for place in sorted(range(len(arrays)), key=lambda i: arrays[i].size):
        if 0 < arrays[place].size <= budget:
            shown[place], budget = arrays[place].tolist(), budget - arrays[place].size
    return shown if any(a is not None for a in shown) else None


def reproducing(check: Callable[[], str | None], found: Reproduction) -> Callable[[], str | None]:
    """A zero-argument check (for problems_of) whose problem carries the reproduction."""
    return lambda: reproduced(problem_of(check), found)


