"""The shape of a graded check: a probe that runs student code, and a judge that never does.

A probe (in posenc_autograder.probes) receives the student's namespace and returns *observations*: plain data only (numpy
float arrays, numbers, strings, bools, lists and dicts of those), including the exceptions the
student's code raised. A judge receives those observations and returns the list of problems,
worded for the student, computing every expected value with the trusted reference. Keeping the
two apart lets the grader run the probe inside a sandbox and the judge outside it.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

Observations = dict
Problems = list


def no_inputs() -> dict:
    return {}


@dataclasses.dataclass(frozen=True)
class Check:
    cell_id: str                     # nbgrader grade_id of the hidden test cell
    points: float
    spec_bullets: tuple[str, ...]    # ids from posenc_autograder.spec_bullets
    probe: Callable[[dict, dict], Observations]   # from posenc_autograder.probes: runs student code
    judge: Callable[[Observations], Problems]     # trusted: never calls student code
    inputs: Callable[[], dict] = no_inputs        # trusted: data the probe needs, as plain data
    assignment: str = "positional_encoding"


REGISTRY: dict[str, Check] = {}


def register(cell_id: str, *, points: float, probe: Callable, judge: Callable, bullets: tuple[str, ...] = (),
             inputs: Callable[[], dict] = no_inputs, assignment: str = "positional_encoding") -> None:
    if cell_id in REGISTRY:
        raise ValueError(f"duplicate check id {cell_id}")
    REGISTRY[cell_id] = Check(cell_id, points, tuple(bullets), probe, judge, inputs, assignment)


# ---------------------------------------------------------------------------------------------
# Helpers for judges.

def value_of(observation: dict, what: str) -> tuple[object, str | None]:
    """(value, None) or (None, a problem sentence) for an attempt() record."""
    if "error" in observation:
        return None, f"{what} raised {observation['error']}"
    return observation["value"], None


def as_array(value, what: str) -> tuple[np.ndarray | None, str | None]:
    if isinstance(value, np.ndarray):
        return value, None
    try:
        return np.asarray(value, dtype=np.float64), None
    except (TypeError, ValueError):
        return None, f"{what} should be a numpy array, got {type(value).__name__}"


def shape_problem(array: np.ndarray, expected: tuple, what: str) -> str | None:
    if array.shape != tuple(expected):
        hint = ""
        if array.shape == tuple(reversed(expected)):
            hint = " (it looks transposed)"
        return f"{what} has shape {array.shape}, expected {tuple(expected)}{hint}"
    return None


def first_mismatch(actual: np.ndarray, expected: np.ndarray, atol: float, what: str) -> str | None:
    """A sentence naming the worst entry, or None when everything is within atol."""
    if not np.all(np.isfinite(actual)):
        bad = np.argwhere(~np.isfinite(actual))[0]
        return f"{what} contains NaN or Inf (first at index {tuple(int(i) for i in bad)})"
    diff = np.abs(actual - expected)
    if diff.max(initial=0.0) <= atol:
        return None
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    index = ", ".join(str(int(i)) for i in worst)
    return (f"{what} is wrong at [{index}]: expected {expected[worst]:.10g}, got {actual[worst]:.10g} "
            f"({int((diff > atol).sum())} of {diff.size} entries off by more than {atol:g})")


def is_close(a: float, b: float, rel: float) -> bool:
    return math.isfinite(a) and abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def compare_observed(record: dict, expected: np.ndarray, what: str, atol: float):
    """(the observed array or None, the first problem: an exception, not an array, wrong shape, wrong values)."""
    value, problem = value_of(record, what)
    if problem:
        return None, problem
    array, problem = as_array(value, what)
    if problem:
        return None, problem
    return array, shape_problem(array, expected.shape, what) or first_mismatch(array, expected, atol, what)
