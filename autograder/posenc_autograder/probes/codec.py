"""Exact JSON encoding of plain data with float64 arrays (used on both sides of the sandbox)."""
from __future__ import annotations

import base64
import json
import re

import numpy as np

ARRAY_KEY = "__ndarray_float64__"
ARRAY_REF = "__ndarray_index__"       # with `arrays`: the array is kept aside, as is, at this index
FLOAT_KEY = "__float__"
ESCAPE = "~"                          # a data key that is reserved or starts with this gets one more of it
RESERVED = (ARRAY_KEY, ARRAY_REF, FLOAT_KEY)
NON_FINITE = ("nan", "inf", "-inf")
MAX_NODES = 1_000_000                 # values in one decoded text: a 1000x1000 table returned as a list fits
MAX_DEPTH = 64                        # nesting: an honest record is under 10 deep


class TooLarge(ValueError):
    """The text would build more Python objects (or deeper) than the trusted side accepts."""


def _key(key) -> str:
    key = str(key)
    return ESCAPE + key if key in RESERVED or key.startswith(ESCAPE) else key


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
    if isinstance(value, dict):          # data keys never look like the codec's own
        return {_key(k): _encode(v, arrays) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode(v, arrays) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return {FLOAT_KEY: repr(value)}
    return value


def _decode(value, arrays=None):
    if isinstance(value, dict):
        reserved = set(value) & set(RESERVED)
        if not reserved:
            return {(k[1:] if k.startswith(ESCAPE) else k): _decode(v, arrays) for k, v in value.items()}
        # The codec's own structures, exactly; anything else holding a reserved key is forged.
        if set(value) == {ARRAY_REF} and arrays is not None and type(value[ARRAY_REF]) is int:
            return np.asarray(arrays[value[ARRAY_REF]], dtype=np.float64)
        if set(value) == {ARRAY_KEY, "shape"} and isinstance(value[ARRAY_KEY], str) \
                and isinstance(value["shape"], list):
            raw = base64.b64decode(value[ARRAY_KEY].encode("ascii"), validate=True)
            shape = tuple(int(n) for n in value["shape"])
            return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)
        if set(value) == {FLOAT_KEY} and value[FLOAT_KEY] in NON_FINITE:
            return float(value[FLOAT_KEY])
        raise ValueError(f"a reserved key of the codec in data: {sorted(reserved)}")
    if isinstance(value, list):
        return [_decode(v, arrays) for v in value]
    return value


def dumps(value, arrays: list | None = None) -> str:
    """JSON text; given a list `arrays`, arrays are appended to it as they are and referenced by index
    (no base64: for files the trusted side writes and reads back itself)."""
    return json.dumps(_encode(value, arrays), allow_nan=False)


def loads(text: str, arrays=None, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH):
    """Decode; text that would build more than max_nodes values or nest deeper than max_depth raises
    TooLarge before any object is built (the trusted side reads what student code wrote)."""
    nodes, depth = structure(text)
    if nodes > max_nodes or depth > max_depth:
        raise TooLarge(f"{nodes} values nested {depth} deep (at most {max_nodes}, {max_depth})")
    return _decode(json.loads(text), arrays)


JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
CHUNK = 1 << 22


def structure(text) -> tuple[int, int]:
    """(values, deepest nesting) of a JSON text, counted on its bytes without building it: every value
    but the first follows a comma or an opening bracket. Strings count as one value, whatever their length."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    skeleton = np.frombuffer(JSON_STRING.sub(b'""', data), dtype=np.uint8)
    nodes, depth, deepest = 1, 0, 0
    for start in range(0, len(skeleton), CHUNK):          # in slices: the counting itself stays small
        piece = skeleton[start:start + CHUNK]
        opens = (piece == ord("[")) | (piece == ord("{"))
        step = opens.astype(np.int8) - ((piece == ord("]")) | (piece == ord("}")))
        nodes += int(opens.sum()) + int(np.count_nonzero(piece == ord(",")))
        levels = depth + np.cumsum(step, dtype=np.int64)
        if len(levels):
            deepest, depth = max(deepest, int(levels.max())), int(levels[-1])
    return nodes, deepest
