"""Reproducing a failing case: the lines of code (a call, or an instance built, stepped and read) that give back the
value the page reports as wrong, as a results.Reproduction the page writes out, and the student's own inputs it may
show beside them. Every reproduction is written here, by one rule for each kind of argument (`reproduction`).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from posenc_autograder.checks import variants
from posenc_autograder.checks.comparison import ProblemText, problem_of
from posenc_autograder.results import (
    SCALARS,
    Argument,
    InputArray,
    Line,
    Reading,
    Reproduction,
    Seeded,
    Setting,
    Step,
    Unshown,
    Zeros,
)

SHOWN_INPUT_NUMBERS = 256  # a failing case's input arrays are kept (shown folded) up to this many entries
WRITTEN_KINDS = "biuf"     # arrays of booleans, integers and floats are written; anything else cannot be


def with_case(problem, row: tuple, function: str | None, stand_ins: tuple[str, ...],
              reproduce: Callable[..., Reproduced | None] | None):
    """A failing case's first problem with the case as data: the lines that reproduce it, from the call() record
    (`function`) or from `reproduce(*row)`, with the arrays the student may see; for a case that is neither, its
    arrays alone."""
    case = row[0]
    if reproduce is not None:
        found = reproduce(*row)
    else:
        found = called(function, case, stand_ins) if function is not None and _is_call(case) else None
    if found is not None:
        return reproduced(problem, found)
    shown = shown_arrays([np.asarray(v) for v in _arrays_and_numbers(case) if isinstance(v, (np.ndarray, list))])
    return ProblemText(problem, inputs=shown) if shown else problem


def _is_call(case) -> bool:
    return isinstance(case, dict) and "args" in case


def _arrays_and_numbers(case) -> list:
    if _is_call(case):
        return list(case["args"]) + list(case["kwargs"].values())
    return [case]


def case_size(case) -> int:
    """How big a case is: its arrays' sizes plus the product of its whole-number arguments (a table's L x d)."""
    values = _arrays_and_numbers(case)
    whole = [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 0]
    return sum(int(np.size(v)) for v in values if isinstance(v, (np.ndarray, list))) + math.prod(whole)


# --- lines as the judge states them, with its values; reproduction() writes each value as an argument -------------

def step(function: str, *args, assign: str | None = None, **kwargs) -> Step:
    """A line `assign = function(*args, **kwargs)` of a reproduction (function may be a method: `layer.forward`)."""
    return Step(function, args, kwargs, assign)


def setting(target: str, value) -> Setting:
    """A line `target = value` (say, `layer.embedding = <the table the probe set>`)."""
    return Setting(target, value)


def reading(target: str) -> Reading:
    """A line that reads an attribute (say, `layer.grad_embedding`): the value judged."""
    return Reading(target)


@dataclasses.dataclass(frozen=True)
class Reproduced:
    """A reproduction with the arrays its InputArray arguments refer to by place, which become the problem's inputs
    only when the student may see them (shown_arrays)."""
    reproduction: Reproduction
    arrays: tuple[np.ndarray, ...]


class Unwritable(TypeError):
    """An argument no line of code can write (an object array, say)."""


def reproduction(*lines: Line, stand_ins=()) -> Reproduced | None:
    """The lines (step, setting, reading) of a case with each value written as an argument (written_argument);
    `stand_ins`: the student functions the probe replaced with the grader's own while the case ran (the page says so:
    the lines run the student's own). None when a value cannot be written."""
    arrays: list[np.ndarray] = []
    try:
        written = tuple(_line_written(line, arrays) for line in lines)
    except Unwritable:
        return None
    return Reproduced(Reproduction(written, tuple(sorted(stand_ins))), tuple(arrays))


def _line_written(line: Line, arrays: list[np.ndarray]) -> Line:
    if isinstance(line, Step):
        return dataclasses.replace(line, args=tuple(written_argument(v, arrays) for v in line.args),
                                   kwargs={str(k): written_argument(v, arrays) for k, v in line.kwargs.items()})
    if isinstance(line, Setting):
        return dataclasses.replace(line, value=written_argument(line.value, arrays))
    return line


def written_argument(value, arrays: list[np.ndarray]) -> Argument:
    """A value as a line of code can write it: a number by its value, a generator by its seed, an Unshown object by
    its name, an all-zero array as np.zeros, any other array by its place among `arrays` (appended to them).
    Unwritable for anything else."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, SCALARS) or isinstance(value, (Seeded, Unshown)):
        return value
    if isinstance(value, dict) and set(value) == {"default_rng"}:       # probes.helpers.argument's generator
        return Seeded(int(value["default_rng"]))
    array = np.asarray(value)
    if array.dtype.kind not in WRITTEN_KINDS:
        raise Unwritable(type(value).__name__)
    if array.size and not array.any():
        return Zeros(array.shape, str(array.dtype))
    arrays.append(array)
    return InputArray(len(arrays) - 1, array.shape, str(array.dtype))


def called(function: str, case: dict, stand_ins=()) -> Reproduced | None:
    """The reproduction of one call() record of `function`."""
    return reproduction(step(function, *case["args"], **case["kwargs"]), stand_ins=stand_ins)


def reproduced(problem, found: Reproduced | None):
    """The problem (anything but a sentence, None say, stays as it is) with the case's reproduction as its call, and
    the case's arrays as its inputs when they are the student's own variant and few enough to show."""
    if not isinstance(problem, str) or found is None:
        return problem
    return ProblemText(problem, call=found.reproduction, inputs=shown_arrays(found.arrays))


def shown_arrays(arrays) -> list | None:
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


def reproducing(check: Callable[[], object], found: Reproduced | None) -> Callable[[], object]:
    """A zero-argument check (for problems_of) whose problem carries the reproduction."""
    return lambda: reproduced(problem_of(check), found)
