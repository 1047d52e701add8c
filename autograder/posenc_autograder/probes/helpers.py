"""Call student code and keep only plain data from it."""
from __future__ import annotations

import contextlib
import functools
from typing import Callable

import numpy as np


def student_callable(ns: dict, name: str):
    obj = ns.get(name)
    if obj is None:
        raise NameError(f"`{name}` is not defined: keep the name and signature from the template")
    return obj


def describe(exc: BaseException) -> str:
    if isinstance(exc, NotImplementedError):
        return "NotImplementedError: the function is still the template stub"
    return f"{type(exc).__name__}: {exc}"[:500]


def attempt(fn: Callable, *args, **kwargs) -> dict:
    """Run student code; return {'value': plain data} or {'error': 'Type: message'}, and 'dtype' when the
    value was a numpy array of another dtype than float64 (the codec makes it float64): judges then allow
    the rounding of that precision, since the dtype itself is the contracts test's to charge."""
    try:
        value = fn(*args, **kwargs)
        record = {"value": to_plain(value)}
        if isinstance(value, np.ndarray) and value.dtype != np.float64:
            record["dtype"] = str(value.dtype)[:20]
        return record
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a student's exception of any kind is an observation
        return {"error": describe(exc)}


def guarded(probe: Callable) -> Callable:
    """Turn an exception escaping a probe's set-up code into an {'error': ...} observation."""
    @functools.wraps(probe)
    def run(ns, data):
        try:
            return probe(ns, data)
        except (KeyboardInterrupt, NameError):
            raise
        except BaseException as exc:  # noqa: BLE001
            return {"error": describe(exc)}
    return run


def to_plain(value):
    """Convert a student's return value into plain data (never keeps a student object)."""
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value) if isinstance(value, (float, np.floating)) else int(value)
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [to_plain(v) for v in value]
    return np.array(value, dtype=np.float64, copy=True)


def argument(value):
    """A plain-data argument as the student's function receives it: lists become numpy arrays."""
    return np.asarray(value) if isinstance(value, list) else value


def call_each(ns: dict, data: dict) -> dict:
    """Call data["function"] for every call record of every group: {group: [attempt records]}."""
    fn = student_callable(ns, data["function"])
    return {group: [attempt(fn, *map(argument, c["args"]), **{k: argument(v) for k, v in c["kwargs"].items()})
                    for c in calls]
            for group, calls in data["groups"].items()}


def kind_of(value) -> dict:
    """What a student's function returned, as plain data: its type, with dtype and shape for arrays.

    Values cross the codec as float64 arrays and plain numbers, so this is the only record of a
    list returned instead of an array, or of a float32 table."""
    if isinstance(value, np.ndarray):
        return {"type": "ndarray", "dtype": str(value.dtype), "shape": [int(n) for n in value.shape]}
    kind = {"type": str(type(value).__name__)[:60], "float": isinstance(value, float),
            "bool": isinstance(value, (bool, np.bool_))}
    if isinstance(value, (tuple, list)):
        kind["items"] = [kind_of(v) for v in list(value)[:8]]
    elif isinstance(value, dict):
        kind["items"] = {str(k)[:60]: kind_of(v) for k, v in list(value.items())[:16]}
    return kind


def attempt_contract(fn: Callable, *args) -> dict:
    """Call fn on the caller's own arrays: {'kind': kind_of(result)} or {'error': ...}, and 'changed',
    the indices of the arguments the call modified in place."""
    originals = [np.array(a, copy=True) for a in args]
    try:
        record = {"kind": kind_of(fn(*args))}
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a student's exception of any kind is an observation
        record = {"error": describe(exc)}
    record["changed"] = [i for i, (a, o) in enumerate(zip(args, originals))
                         if not (np.shape(a) == o.shape and np.array_equal(a, o, equal_nan=True))]
    return record


@contextlib.contextmanager
def returns_float64(ns, name):
    """While a probe tests code built on the student's function `name`, an array that function returns as a
    list or in another dtype comes back as float64: that costs the contracts test, not every test built on it."""
    original = ns.get(name)
    if callable(original):
        ns[name] = lambda *args, **kwargs: _float64_or_as_is(original(*args, **kwargs))
    try:
        yield
    finally:
        if callable(original):
            ns[name] = original


def _float64_or_as_is(value):
    """Lists and arrays as float64 arrays; anything else (a tuple of results, a dict) untouched."""
    if not isinstance(value, (list, np.ndarray)):
        return value
    try:
        return np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        return value
