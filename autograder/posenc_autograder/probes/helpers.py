"""Call student code and keep only plain data from it."""
from __future__ import annotations

import contextlib
import functools
import importlib
from typing import Callable

import numpy as np

from . import codec, guard


def not_defined(name: str) -> str:
    """What a probe says of a student function the notebook does not define (the grader reads it back: one source)."""
    return f"`{name}` is not defined: keep the name and signature from the template"


def student_callable(ns: dict, name: str):
    obj = ns.get(name)
    if obj is None:
        raise NameError(not_defined(name))
    return obj


def describe(exc: BaseException) -> str:
    if isinstance(exc, NotImplementedError):
        return "NotImplementedError: the function is still the template stub"
    return f"{type(exc).__name__}: {exc}"[:500]


def attempt(fn: Callable, *args, **kwargs) -> dict:
    """Run student code; return {'value': plain data} or {'error': 'Type: message'}. A float32 array stays float32
    (to_plain), so the judges read the precision from the array itself: they allow its rounding, the dtype being
    the contracts test's to charge. A value that is not data (an object, an object array) is {'returned': its
    type}: the call returned, it did not raise."""
    try:
        value = fn(*args, **kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a student's exception of any kind is an observation
        return {"error": describe(exc)}
    finally:
        guard.restore()                      # the probe's own tools again, whatever the call replaced
    return recorded(value)


def recorded(value) -> dict:
    """{'value': plain data} for what a student's function returned, or {'returned': its type's name}."""
    try:
        return {"value": to_plain(value)}
    except Exception:  # noqa: BLE001 - not plain data: say what it was, never keep it
        return {"returned": type_name(value)}


def true_dtype(value):
    """The dtype numpy itself holds for an array (a subclass cannot answer for it), or None."""
    if np.ndarray not in type.__dict__["__mro__"].__get__(type(value)):
        return None
    return np.ndarray.__dict__["dtype"].__get__(value)


def type_name(value) -> str:
    return str(type.__dict__["__name__"].__get__(type(value)))[:60]


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
    """Convert a student's return value into plain data (never keeps a student object): exact types only,
    so a subclass of a number or an array is read through the base type, whatever it says of itself."""
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is np.bool_:
        return bool(value)
    if kind in (int, np.int64, np.int32, np.int16, np.int8, np.uint64, np.uint32, np.uint16, np.uint8):
        return int(value)
    if kind in (float, np.float64, np.float32, np.float16):
        return float(value)
    if kind is dict:
        return {str(k): to_plain(v) for k, v in dict.items(value)}
    if kind in (tuple, list):
        if codec.PLAIN_SCALARS.issuperset(map(type, value)):       # each already its own plain value
            return list(value)
        return [to_plain(v) for v in value]
    precision = np.float32 if true_dtype(value) == np.float32 else np.float64      # as it crosses the codec
    array = np.array(value, dtype=precision, copy=True)     # a subclass becomes a plain ndarray
    if type(array) is not np.ndarray:
        raise TypeError("not an array of numbers")
    return array


def argument(value):
    """A plain-data argument as the student's function receives it: lists become numpy arrays, and
    {'default_rng': seed} a fresh numpy generator."""
    if isinstance(value, dict) and set(value) == {"default_rng"}:
        return np.random.default_rng(value["default_rng"])
    return np.asarray(value) if isinstance(value, list) else value


def call_each(ns: dict, data: dict) -> dict:
    """Call data["function"] for every call record of every group: {group: [attempt records]}, with the
    functions of data["stand_ins"] (if any) replaced while it runs (see standing_in)."""
    fn = student_callable(ns, data["function"])
    with standing_in(ns, data.get("stand_ins", {})):
        return {group: [attempt(fn, *map(argument, c["args"]), **{k: argument(v) for k, v in c["kwargs"].items()})
                        for c in calls]
                for group, calls in data["groups"].items()}


def kind_of(value) -> dict:
    """What a student's function returned, as plain data: its exact type, with dtype and shape for arrays.

    Values cross the codec as float64 arrays and plain numbers, so this is the only record of a
    list returned instead of an array, or of a float32 table. Only an exact ndarray counts as one: a
    subclass could answer `dtype` as it likes."""
    kind_type = type(value)
    if kind_type is np.ndarray:
        return {"type": "ndarray", "dtype": str(true_dtype(value)), "shape": [int(n) for n in value.shape]}
    kind = {"type": type_name(value), "float": kind_type in (float, np.float64),
            "bool": kind_type in (bool, np.bool_)}
    if kind_type in (tuple, list):
        kind["items"] = [kind_of(v) for v in list(value)[:8]]
    elif kind_type is dict:
        kind["items"] = {str(k)[:60]: kind_of(v) for k, v in list(dict.items(value))[:16]}
    return kind


def attempt_contract(fn: Callable, *args, **kwargs) -> dict:
    """Call fn on the caller's own arrays, then again on the very same objects: {'kind': kind_of(first result),
    'value': the first answer, 'again': attempt()'s record of the second} or {'error': ...}, and 'arguments', the
    arguments as they are after the calls. The trusted side checks the second answer against its own reference
    for the inputs it sent: a call that wrote into its arguments answers the second time for inputs it changed."""
    try:
        value = fn(*args, **kwargs)
        guard.restore()
        record: dict[str, object] = {"kind": kind_of(value), **_answer(value)}
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a student's exception of any kind is an observation
        guard.restore()
        record = {"error": describe(exc)}
    if "error" not in record:
        record["again"] = attempt(fn, *args, **kwargs)
    record["arguments"] = [_argument_after(a) for a in args]
    return record


def _answer(value) -> dict:
    """{'value': plain data} of a contract's first answer, or {} for one that is not data (its kind says what)."""
    answer = recorded(value)
    return answer if "value" in answer else {}


def _argument_after(value):
    try:
        return to_plain(value)
    except Exception:  # noqa: BLE001 - an argument the student replaced by something that is not data
        return None


# --- stand-ins: the subject judged alone --------------------------------------------------------

@contextlib.contextmanager
def standing_in(ns: dict, stand_ins: dict):
    """While a probe runs a subject, each student function named in `stand_ins` (name -> spec, data from
    the trusted side) is replaced by a stand-in whose behaviour the trusted side knows: a mistake in the
    student's own function then costs its own tests only, and a degenerate one earns nothing here."""
    originals = {name: ns.get(name, _ABSENT) for name in stand_ins}
    ns.update({name: stand_in(spec) for name, spec in stand_ins.items()})
    try:
        yield
    finally:
        for name, original in originals.items():
            if original is _ABSENT:
                ns.pop(name, None)
            else:
                ns[name] = original


_ABSENT = object()


def _lookup(spec):
    """A function of numbers answered from a table of arrays keyed by its arguments (names and defaults as
    the template's), with the spec's ValueError for an odd first argument when `odd_error`."""
    values, names, defaults = spec["values"], spec["arguments"], spec.get("defaults", {})

    def stand_in(*args, **kwargs):
        bound = {**defaults, **dict(zip(names, args, strict=False)), **kwargs}   # fewer args: defaults
        if spec.get("odd_error") and int(bound[names[0]]) % 2:
            raise ValueError(f"{names[0]} must be even, got {bound[names[0]]}")
        key = lookup_key([bound.get(name) for name in names])
        if key not in values:
            raise LookupError(f"the grader's stand-in has no answer for {key}")
        return np.array(values[key], dtype=np.float64)
    return stand_in


def lookup_key(arguments) -> str:
    """How a lookup stand-in files an answer: its arguments as floats ('8.0/10000.0')."""
    return "/".join(repr(float(a)) for a in arguments)


STAND_INS = {"lookup": _lookup}         # the kinds any assignment may use; its own are in its stand_ins.py
SHIPPED_PREFIX = "stand_ins_"           # checks/<assignment>/stand_ins.py is shipped as stand_ins_<assignment>


def shipped_stand_ins(assignment: str) -> str:
    """The module name, in this package, of an assignment's own stand-in kinds."""
    return f"{SHIPPED_PREFIX}{assignment}"


def stand_in(spec: dict):
    """The stand-in a spec describes: kind 'lookup' (STAND_INS), or '<assignment>.<kind>', one of KINDS of that
    assignment's stand-in module (imported before any student code ran: see shell_runner.probe_modules)."""
    assignment, _, kind = spec["kind"].rpartition(".")
    kinds = importlib.import_module(f"{__package__}.{shipped_stand_ins(assignment)}").KINDS if assignment else STAND_INS
    return kinds[kind](spec)


def stand_in_assignments(data) -> set[str]:
    """The assignments whose stand-in kinds a task's data names (in every "stand_ins" table, however nested)."""
    found = set()
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "stand_ins" and isinstance(value, dict):
                found |= _kinds_in(value)
            else:
                found |= stand_in_assignments(value)
    elif isinstance(data, list):
        for value in data:
            found |= stand_in_assignments(value)
    return found


def _kinds_in(table: dict) -> set[str]:
    if isinstance(table.get("kind"), str):
        return {table["kind"].rpartition(".")[0]} - {""}
    return set().union(*(_kinds_in(v) for v in table.values() if isinstance(v, dict)))


class AddingEncoder:
    """An encoder argument whose behaviour the trusted side knows: forward adds rows of a table it sent."""

    def __init__(self, table):
        self._table = np.asarray(table, dtype=np.float64)

    def get_encoding(self, seq_len):
        return self._table[:int(seq_len)].copy()

    def forward(self, X):
        X = np.asarray(X, dtype=np.float64)
        return X + self._table[None, :X.shape[-2]]
