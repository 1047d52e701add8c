"""The shape of a graded check: a probe that runs student code, and a judge that never does.

A probe receives the student's namespace and returns *observations*: plain data only (numpy
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


@dataclasses.dataclass(frozen=True)
class Check:
    cell_id: str                     # nbgrader grade_id of the hidden test cell
    points: float
    spec_bullets: tuple[str, ...]    # ids from posenc_autograder.spec_bullets
    probe: Callable[[dict], Observations]
    judge: Callable[[Observations], Problems]
    assignment: str = "positional_encoding"


REGISTRY: dict[str, Check] = {}


def check(cell_id: str, *, points: float, bullets: tuple[str, ...], judge: Callable,
          assignment: str = "positional_encoding"):
    """Register the decorated probe with its judge under the hidden test cell id."""
    def register(probe):
        if cell_id in REGISTRY:
            raise ValueError(f"duplicate check id {cell_id}")
        REGISTRY[cell_id] = Check(cell_id, points, tuple(bullets), probe, judge, assignment)
        return probe
    return register


# ---------------------------------------------------------------------------------------------
# Helpers for probes: call student code and keep only plain data.

def student_callable(ns: dict, name: str):
    obj = ns.get(name)
    if obj is None:
        raise NameError(f"`{name}` is not defined: keep the name and signature from the template")
    return obj


def attempt(fn: Callable, *args, **kwargs) -> dict:
    """Run student code; return {'value': plain data} or {'error': 'Type: message'}."""
    try:
        return {"value": to_plain(fn(*args, **kwargs))}
    except NotImplementedError:
        return {"error": "NotImplementedError: the function is still the template stub"}
    except BaseException as exc:  # noqa: BLE001 - a student's exception of any kind is an observation
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"error": f"{type(exc).__name__}: {exc}"[:500]}


def raises(fn: Callable, *args, **kwargs) -> str | None:
    """Name of the exception the call raised, or None when it returned normally."""
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, KeyboardInterrupt):
            raise
        return type(exc).__name__
    return None


def to_plain(value):
    """Convert a student's return value into plain data (never keeps a student object)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        return value.item() if isinstance(value, np.generic) else value
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    array = np.array(value, dtype=np.float64, copy=True)
    return array


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
