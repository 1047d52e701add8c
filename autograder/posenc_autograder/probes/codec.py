"""Exact JSON encoding of plain data with float64 arrays (used on both sides of the sandbox)."""
from __future__ import annotations

import base64
import json

import numpy as np

ARRAY_KEY = "__ndarray_float64__"
ARRAY_REF = "__ndarray_index__"       # with `arrays`: the array is kept aside, as is, at this index


def _encode(value, arrays: list | None = None):
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value, dtype="<f8")
        if arrays is not None:        # one copy of an array met twice (the same object: a shared record)
            index = next((i for i, kept in enumerate(arrays) if kept is array), None)
            if index is None:
                arrays.append(array)
                index = len(arrays) - 1
            return {ARRAY_REF: index}
        return {ARRAY_KEY: base64.b64encode(array.tobytes()).decode("ascii"), "shape": list(array.shape)}
    if isinstance(value, dict):
        return {str(k): _encode(v, arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return {"__float__": repr(value)}
    return value


def _decode(value, arrays=None):
    if isinstance(value, dict):
        if arrays is not None and set(value) == {ARRAY_REF}:
            return np.asarray(arrays[int(value[ARRAY_REF])], dtype=np.float64)
        if ARRAY_KEY in value:
            raw = base64.b64decode(value[ARRAY_KEY].encode("ascii"), validate=True)
            shape = tuple(int(n) for n in value["shape"])
            return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: _decode(v, arrays) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def dumps(value, arrays: list | None = None) -> str:
    """JSON text; given a list `arrays`, arrays are appended to it as they are and referenced by index
    (no base64: for files the trusted side writes and reads back itself)."""
    return json.dumps(_encode(value, arrays), allow_nan=False)


def loads(text: str, arrays=None):
    return _decode(json.loads(text), arrays)
