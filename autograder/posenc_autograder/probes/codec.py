"""Exact JSON encoding of plain data with float64 arrays (used on both sides of the sandbox)."""
from __future__ import annotations

import base64
import json

import numpy as np

ARRAY_KEY = "__ndarray_float64__"


def _encode(value):
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value, dtype="<f8")
        return {ARRAY_KEY: base64.b64encode(array.tobytes()).decode("ascii"), "shape": list(array.shape)}
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return {"__float__": repr(value)}
    return value


def _decode(value):
    if isinstance(value, dict):
        if ARRAY_KEY in value:
            raw = base64.b64decode(value[ARRAY_KEY].encode("ascii"), validate=True)
            shape = tuple(int(n) for n in value["shape"])
            return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dumps(value) -> str:
    return json.dumps(_encode(value), allow_nan=False)


def loads(text: str):
    return _decode(json.loads(text))
