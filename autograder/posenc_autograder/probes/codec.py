"""Exact encoding of plain data with float64 arrays (used on both sides of the sandbox).

Two forms. `dumps`/`loads`: JSON text, arrays inline as base64 or kept aside by index (the integrity
store). `frame`/`FrameReader`: what crosses the sandbox boundary, a bounded header, a small JSON skeleton
(arrays replaced by their index, with a table of their shapes) and then the arrays' raw little-endian
float64 bytes. The reader checks the header, bounds the skeleton's values (counted on its bytes, unless it is
too short to hold more than the cap) and its depth (as it decodes it), and checks every shape against the bytes
announced before it builds any array; it decodes each frame once.
"""
from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import math
import mmap
import re
import struct

import numpy as np

ARRAY_KEY = "__ndarray_float64__"
ARRAY_REF = "__ndarray_index__"       # with `arrays`: the array is kept aside, as is, at this index
FLOAT_KEY = "__float__"
ESCAPE = "~"                          # a data key that is reserved or starts with this gets one more of it
RESERVED = (ARRAY_KEY, ARRAY_REF, FLOAT_KEY)
NON_FINITE = ("nan", "inf", "-inf")
# Values of exactly these types are what they encode to (a non-finite float aside): a list of them needs no recursion
PLAIN_SCALARS = frozenset({float, int, bool, str, type(None)})
MAX_NODES = 1_000_000                 # values in one decoded text: a 1000x1000 table returned as a list fits
MAX_DEPTH = 64                        # nesting: an honest record is under 10 deep
MAX_CONTAINERS = 2**16                # lists and objects in one decoded text: each is an object Python's collector
                                      # walks and frees one at a time, holding the interpreter (600,000 small lists:
                                      # 100-400 ms stalls); an honest record, every array returned as lists, ~10,000


class TooLarge(ValueError):
    """The text would build more Python objects (or deeper) than the trusted side accepts."""


def _key(key) -> str:
    key = str(key)
    return ESCAPE + key if key in RESERVED or key.startswith(ESCAPE) else key


class Framed:
    """A value already encoded by frame(), placed inside a value being framed as it is: its skeleton is read (it is
    small), its arrays' indexes moved after those before it and their bytes joined without being decoded. Prepare
    builds each task from the inputs frames it keeps this way instead of decoding them only to encode them again."""

    def __init__(self, data: bytes):
        self.data = data

    def encoded(self, arrays: list):
        skeleton_bytes, array_bytes = HEADER.unpack_from(self.data)
        first, offset = len(arrays), HEADER.size + skeleton_bytes
        text = self.data[HEADER.size:offset]
        if first:                     # every array index moved after the arrays before it, in the text itself
            text = REFERENCE_TEXT.sub(lambda found: b'{"%s": %d}' % (ARRAY_REF.encode(), int(found[1]) + first), text)
        shapes, body = json.loads(text)
        for shape in shapes:          # views of the frame's own bytes: joined into the new frame, never copied here
            count = math.prod(shape)
            arrays.append(np.frombuffer(self.data, dtype="<f8", count=count, offset=offset).reshape(shape))
            offset += count * ITEM_BYTES
        return body


# An array's index as frame() writes it. Never part of a data string (JSON escapes the quotes in those), and data keys
# that look like the codec's own are escaped: the pattern is found only where frame() put an index.
REFERENCE_TEXT = re.compile(rb'\{"' + ARRAY_REF.encode() + rb'": (\d+)\}')


def _encode(value, arrays: list | None = None, indexes: dict | None = None):
    """indexes: id of each array in `arrays` -> its index (made here for the outermost call), so that an array met
    again is found without searching the list."""
    if arrays is not None and indexes is None:
        indexes = {id(array): i for i, array in enumerate(arrays)}
    if isinstance(value, Framed) and arrays is not None:
        return value.encoded(arrays)          # views made for this frame: never met again
    if isinstance(value, np.ndarray):
        kept = arrays is not None and value.dtype == np.float32       # inline base64 text carries float64 only
        array = np.ascontiguousarray(value, dtype=WIRE_DTYPES[FLOAT32 if kept else None])
        if arrays is not None:        # one copy of an array met twice (the same object: a shared record)
            index = indexes.get(id(array))          # `arrays` holds every array indexed: their ids stay theirs
            if index is None:
                index = indexes[id(array)] = len(arrays)
                arrays.append(array)
            return {ARRAY_REF: index}
        return {ARRAY_KEY: base64.b64encode(array.tobytes()).decode("ascii"), "shape": list(array.shape)}
    if isinstance(value, dict):          # data keys never look like the codec's own
        return {_key(k): _encode(v, arrays, indexes) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if PLAIN_SCALARS.issuperset(map(type, value)):      # a row of numbers (a table returned as a list)
            return [v if type(v) is not float or math.isfinite(v) else {FLOAT_KEY: repr(v)} for v in value]
        return [_encode(v, arrays, indexes) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return {FLOAT_KEY: repr(value)}
    return value


def _decode(value, arrays=None, inline=True, levels: int | None = None):
    """The value with the codec's structures decoded, in place: `value` is freshly parsed JSON of the caller's own,
    so its lists and dicts are reused rather than copied (a copy held the whole tree twice at once: 70 MB more for a
    5 MB frame of small answers); `levels`: how many more levels of nesting are allowed (TooLarge past them; None:
    not counted here)."""
    if isinstance(value, (dict, list)):
        if levels is not None and levels <= 0:
            raise TooLarge("nested deeper than the cap")
        inner = None if levels is None else levels - 1
    if isinstance(value, dict):
        reserved = set(value) & set(RESERVED)
        if not reserved:
            for key, item in value.items():          # same keys: changing their values while iterating is safe
                if isinstance(item, (dict, list)):
                    value[key] = _decode(item, arrays, inline, inner)
            if any(key.startswith(ESCAPE) for key in value):      # rare: only such a dict is built again
                value = {(k[1:] if k.startswith(ESCAPE) else k): v for k, v in value.items()}
            return value
        # The codec's own structures, exactly; anything else holding a reserved key is forged.
        if set(value) == {ARRAY_REF} and arrays is not None and type(value[ARRAY_REF]) is int \
                and value[ARRAY_REF] in (arrays if isinstance(arrays, dict) else range(len(arrays))):
            array = np.asarray(arrays[value[ARRAY_REF]])
            return array if array.dtype == np.float32 else np.asarray(array, dtype=np.float64)
        if inline and set(value) == {ARRAY_KEY, "shape"} and isinstance(value[ARRAY_KEY], str) \
                and isinstance(value["shape"], list):
            raw = base64.b64decode(value[ARRAY_KEY].encode("ascii"), validate=True)
            shape = tuple(int(n) for n in value["shape"])
            return np.frombuffer(raw, dtype="<f8").reshape(shape).astype(np.float64)
        if set(value) == {FLOAT_KEY} and value[FLOAT_KEY] in NON_FINITE:
            return float(value[FLOAT_KEY])
        raise ValueError(f"a reserved key of the codec in data: {sorted(reserved)}")
    if isinstance(value, list):          # plain numbers and strings (most of a long list) need no call of their own
        if PLAIN_SCALARS.issuperset(map(type, value)):        # a row of them: not even a look at each in Python
            return value
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
                value[index] = _decode(item, arrays, inline, inner)
    return value


def dumps(value, arrays: list | None = None) -> str:
    """JSON text; given a list `arrays`, arrays are appended to it as they are and referenced by index
    (no base64: for files the trusted side writes and reads back itself)."""
    return json.dumps(_encode(value, arrays), allow_nan=False)


def loads(text: str, arrays=None, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH):
    """Decode; text that would build more than max_nodes values or nest deeper than max_depth raises
    TooLarge before any object is built (the trusted side reads what student code wrote)."""
    nodes, depth = structure(text, max_nodes, max_depth)
    if nodes > max_nodes or depth > max_depth:
        raise TooLarge(f"{nodes} values nested {depth} deep (at most {max_nodes}, {max_depth})")
    return _decode(json.loads(text), arrays)


SCAN_CHUNK = 1 << 19                 # bytes scanned at once: the scan's memory is about 45 times this (int64 steps),
                                     # whatever the text: ~24 MiB, where 1 MiB chunks took 47 (CPU the same)
QUOTE, BACKSLASH, COMMA = ord('"'), ord("\\"), ord(",")


@dataclasses.dataclass
class Shape:
    """What a scan of JSON text found outside its strings, up to the first place a parser would stop."""
    depth: int = 0                   # the deepest nesting of arrays and objects
    values: int = 0                  # arrays and objects opened, plus commas: at least every value but scalars alone
    containers: int = 0              # arrays and objects opened
    in_string: bool = False          # the text ended inside a string (unterminated)
    open_now: int = 0                # nesting at the end of the text scanned so far
    backslashes: int = 0             # the run of backslashes the text scanned so far ends with


def json_shape(data, chunk: int = SCAN_CHUNK, max_depth: int | None = None, max_values: int | None = None) -> Shape:
    """Nesting depth and value count of JSON text without parsing it, in one linear pass (numpy, a chunk at a
    time, no regular expression: a pattern for strings backtracks on an unterminated one and costs the square
    of its length). A quote ends or starts a string unless an odd run of backslashes precedes it; brackets and
    commas count only outside strings. Exact for valid JSON; for invalid JSON exact up to the first error, which
    is as far as any parser builds. With caps, the scan stops after the first chunk that passes one (the shape
    then says so, and text refused for its values costs a chunk's scan, not the whole text's)."""
    data = data.encode() if isinstance(data, str) else data
    shape = Shape()
    for start in range(0, len(data), chunk):
        _scan(np.frombuffer(data, np.uint8, count=min(chunk, len(data) - start), offset=start), shape)
        if (max_depth is not None and shape.depth > max_depth) or (max_values is not None and
                                                                     shape.values > max_values):
            break
    return shape


def _classify(raw: np.ndarray, shape: Shape) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(outside, opening, closing, levels) of one chunk: the bytes outside strings (a quote that opens or closes one
    is neither), the brackets that open and close there, and the nesting after each byte. Carries the state the
    next chunk starts from (in a string, the nesting, a run of backslashes) in `shape`."""
    positions = np.arange(raw.size, dtype=np.int32)          # a chunk's offsets fit: SCAN_CHUNK < 2**31
    backslash = raw == BACKSLASH
    last_other = np.maximum.accumulate(np.where(backslash, -1, positions))   # last non-backslash at or before i
    quotes = np.flatnonzero(raw == QUOTE)
    ahead = np.where(quotes > 0, last_other[np.maximum(quotes - 1, 0)], -1)  # last non-backslash before each
    run = quotes - 1 - ahead + np.where(ahead < 0, shape.backslashes, 0)    # a run may begin in the last chunk
    toggles = np.zeros(raw.size, np.int32)
    toggles[quotes[run % 2 == 0]] = 1                                         # the quotes that open or close
    inside = (np.cumsum(toggles) + shape.in_string) % 2 == 1                  # a closing quote itself: outside
    outside = ~inside & (toggles == 0)
    opening = ((raw == ord("[")) | (raw == ord("{"))) & outside
    closing = ((raw == ord("]")) | (raw == ord("}"))) & outside
    levels = np.cumsum(opening.astype(np.int32) - closing) + shape.open_now
    if raw.size:
        shape.open_now = int(levels[-1])
        shape.in_string = bool(inside[-1])
    trailing = raw.size - 1 - int(last_other[-1]) if raw.size else 0
    shape.backslashes = trailing + (shape.backslashes if trailing == raw.size else 0)
    return outside, opening, closing, levels


def _scan(raw: np.ndarray, shape: Shape) -> None:
    outside, opening, _, levels = _classify(raw, shape)
    if levels.size:
        shape.depth = max(shape.depth, int(levels.max()))
    shape.values += int(opening.sum()) + int(((raw == COMMA) & outside).sum())


def structure(text, max_nodes: int | None = None, max_depth: int | None = None) -> tuple[int, int]:
    """(values, deepest nesting) of a JSON text, counted on its bytes without building it, in linear time: every
    value but the first follows a comma or an opening bracket. Strings count as one value, whatever their length.
    With caps, counting stops once one is passed (the counts then pass it too)."""
    shape = json_shape(text, max_depth=max_depth, max_values=None if max_nodes is None else max_nodes - 1)
    return shape.values + 1, shape.depth


# --- JSON a piece at a time: a long text never holds the interpreter in one call -----------------------

PIECE_BYTES = 16 * 2**10             # JSON text given to json.loads at once, at most about twice this: a few ms on the
                                     # slowest text (small nested lists), so a thread decoding a hostile 16 MiB
                                     # skeleton lets the threads serving others run between its pieces
MARKS_CHUNK = 2**18                  # bytes marked at once: the scan's temporaries (~40 bytes a byte) stay ~10 MiB
BLANKS = b" \t\n\r"                  # JSON's whitespace
COLON = ord(":")
OPENERS = {ord("["): ord("]"), ord("{"): ord("}")}


@dataclasses.dataclass
class Marks:
    """Where a JSON text's commas, colons and closing brackets are outside its strings, and the nesting after each
    (numpy arrays, positions ascending): how loads_in_pieces finds a container's own items without parsing it."""
    commas: np.ndarray
    comma_levels: np.ndarray
    colons: np.ndarray
    colon_levels: np.ndarray
    closers: np.ndarray
    closer_levels: np.ndarray
    shape: Shape


def marks(data: bytes, max_values: int = MAX_NODES, max_depth: int = MAX_DEPTH,
          max_containers: int = MAX_CONTAINERS) -> Marks:
    """One linear pass (the scan of json_shape) keeping the marks; TooLarge past any cap (values counted as
    structure() counts them; the arrays and objects opened), ValueError for a closing bracket that closes nothing or
    more colons than values: the marks kept are never more than the values allowed."""
    shape, found = Shape(), {"commas": [], "colons": [], "closers": []}
    colons = 0
    for start in range(0, len(data), MARKS_CHUNK):
        raw = np.frombuffer(data, np.uint8, count=min(MARKS_CHUNK, len(data) - start), offset=start)
        outside, opening, closing, levels = _classify(raw, shape)
        if levels.size and int(levels.min()) < 0:
            raise ValueError("a closing bracket with nothing open")
        shape.depth = max(shape.depth, int(levels.max())) if levels.size else shape.depth
        for name, where in (("commas", (raw == COMMA) & outside), ("colons", (raw == COLON) & outside),
                            ("closers", closing)):
            at = np.flatnonzero(where)             # kept small: a 16 MiB text's offsets fit int32, levels int16
            found[name].append(((at + start).astype(np.int32), levels[at].astype(np.int16)))
        opened = int(opening.sum())
        shape.values += opened + len(found["commas"][-1][0])
        shape.containers += opened
        colons += len(found["colons"][-1][0])
        if shape.values + 1 > max_values or shape.depth > max_depth or shape.containers > max_containers:
            raise TooLarge(f"more than {max_values} values, {max_containers} lists and objects, or nested deeper "
                           f"than {max_depth}")
        if colons > shape.values + 1:            # one per object member at most, and each member is a value
            raise ValueError("more colons than values")
    joined = {name: (np.concatenate([p for p, _ in parts]) if parts else np.zeros(0, np.int32),
                     np.concatenate([lv for _, lv in parts]) if parts else np.zeros(0, np.int16))
              for name, parts in found.items()}
    return Marks(*joined["commas"], *joined["colons"], *joined["closers"], shape)


def loads_in_pieces(data: bytes, max_values: int = MAX_NODES, max_depth: int = MAX_DEPTH,
                    piece: int = PIECE_BYTES, max_containers: int = MAX_CONTAINERS):
    """json.loads(data) for UTF-8 text, in pieces of about `piece` bytes: a container longer than that is split at its
    own commas (found by marks(), never by parsing) into runs of items parsed together and long items taken apart
    the same way. Linear, and json.loads never runs on more than ~2 * piece bytes at once (a single string item
    is parsed whole: strings parse at C speed). ValueError where json.loads would raise (text json.loads reads as
    UTF-16 or with a byte-order mark too), TooLarge past the caps."""
    if len(data) <= piece and len(data) < min(max_values, max_containers):
        return json.loads(data)          # short, and fewer bytes than values allowed: it cannot pass the caps
    if b"\x00" in data:                  # never in UTF-8 JSON (inside a string it is \u0000): UTF-16 or not JSON
        raise ValueError("not UTF-8 JSON text")
    return _Pieces(data, marks(data, max_values, max_depth, max_containers), piece).value(0, len(data), 0)


class _Pieces:
    def __init__(self, data: bytes, found: Marks, piece: int):
        self.data, self.marks, self.piece = data, found, piece

    def value(self, start: int, end: int, level: int):
        """The one JSON value in data[start:end], which starts at nesting `level`."""
        start, end = _skip_blanks(self.data, start, end), _before_blanks(self.data, start, end)
        if end - start <= self.piece:
            return json.loads(self.data[start:end])
        if self.data[start] not in OPENERS:
            return json.loads(self.data[start:end])        # one long string (or number): parsed at C speed, linearly
        return self.container(start, end, level)

    def _between(self, positions: np.ndarray, levels: np.ndarray, start: int, end: int, level: int) -> np.ndarray:
        low, high = np.searchsorted(positions, start), np.searchsorted(positions, end)
        return positions[low:high][levels[low:high] == level]

    def container(self, start: int, end: int, level: int):
        data, found, inner = self.data, self.marks, level + 1
        low, high = np.searchsorted(found.closers, start), np.searchsorted(found.closers, end - 1)
        if high >= len(found.closers) or found.closers[high] != end - 1 or found.closer_levels[high] != level \
                or OPENERS[data[start]] != data[end - 1] or np.any(found.closer_levels[low:high] < inner):
            raise ValueError("brackets that do not match")
        is_object = data[start] == ord("{")
        bounds = np.concatenate(([start], self._between(found.commas, found.comma_levels, start, end, inner),
                                 [end - 1]))
        if len(bounds) == 2 and _skip_blanks(data, start + 1, end - 1) == end - 1:
            return {} if is_object else []
        sizes = np.diff(bounds) - 1
        big = np.flatnonzero(sizes > self.piece)
        ticks = np.flatnonzero(np.diff(bounds // self.piece) > 0) + 1
        cuts = np.unique(np.concatenate(([0, len(bounds) - 1], big, big + 1, ticks)))
        result: dict | list = {} if is_object else []
        for first, last in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):
            a, b = int(bounds[first]) + 1, int(bounds[last])
            if last == first + 1 and sizes[first] > self.piece:
                if isinstance(result, list):                # not is_object
                    result.append(self.value(a, b, inner))
                    continue
                colons = self._between(found.colons, found.colon_levels, a, b, inner)
                key = json.loads(data[a:int(colons[0])]) if len(colons) else None
                if not isinstance(key, str):
                    raise ValueError("an object member without a string key")
                result[key] = self.value(int(colons[0]) + 1, b, inner)
            else:
                if _skip_blanks(data, a, b) == b:          # an empty item alone in its run: "[1, ]" or "[1, , 2]"
                    raise ValueError("Expecting value")
                parsed = json.loads(b"{" + data[a:b] + b"}" if is_object else b"[" + data[a:b] + b"]")
                result.update(parsed) if is_object else result.extend(parsed)
        return result


def _skip_blanks(data: bytes, start: int, end: int) -> int:
    """The first byte of data[start:end] that is not JSON's whitespace (end if none), in time linear in the run."""
    window = 64
    while start < end:
        chunk = data[start:min(end, start + window)]
        kept = len(chunk) - len(chunk.lstrip(BLANKS))
        start += kept
        if kept < len(chunk):
            break
        window *= 2
    return start


def _before_blanks(data: bytes, start: int, end: int) -> int:
    """Past the last byte of data[start:end] that is not JSON's whitespace (start if none)."""
    window = 64
    while end > start:
        chunk = data[max(start, end - window):end]
        kept = len(chunk) - len(chunk.rstrip(BLANKS))
        end -= kept
        if kept < len(chunk):
            break
        window *= 2
    return end


# --- frames: what crosses the sandbox boundary ----------------------------------------------------------

HEADER = struct.Struct("<IQ")       # skeleton bytes, array bytes
MAX_SKELETON_BYTES = 16 * 2**20     # the JSON part of one frame; arrays travel outside it
MAX_ARRAYS = 100_000                # arrays in one frame
MAX_DIMENSIONS = 32                 # numpy's own limit
ITEM_BYTES = 8                      # float64, little-endian: the wire's array type, and its alignment
FLOAT32 = "f4"                      # the other: a float32 array crosses as it is, its shape entry {"f4": shape}, its
                                    # bytes padded to 8 (the trusted side reads a precision from the array itself)
WIRE_DTYPES: dict[str | None, np.dtype] = {None: np.dtype("<f8"), FLOAT32: np.dtype("<f4")}


def frame(value) -> bytes:
    """One frame: header, skeleton (the value with arrays replaced by their index, and the arrays' shapes),
    then every array's bytes as they are in memory (little-endian float64, no base64)."""
    return b"".join(frame_parts(value))


def frame_parts(value) -> list:
    """A frame as the buffers it is made of, in order: header and skeleton, then each array's own memory
    (C-contiguous "<f8", or "<f4" and padding), not copied: what the sandbox's channel writes with gathering writes."""
    arrays: list = []
    body = _encode(value, arrays)
    shapes = [{FLOAT32: list(a.shape)} if a.dtype == np.float32 else list(a.shape) for a in arrays]
    skeleton = json.dumps([shapes, body], allow_nan=False).encode()
    skeleton += b" " * (-len(skeleton) % ITEM_BYTES)        # JSON's own blanks: the arrays start 8-byte aligned
    parts = []
    for array in arrays:
        parts.append(array)
        if array.nbytes % ITEM_BYTES:
            parts.append(bytes(ITEM_BYTES - array.nbytes % ITEM_BYTES))    # the next array 8-byte aligned too
    return [HEADER.pack(len(skeleton), sum(p.nbytes if isinstance(p, np.ndarray) else len(p) for p in parts))
            + skeleton, *parts]


def _padded(shape, dtype: np.dtype) -> int:
    """The bytes an array of this shape and wire type takes in a frame, its padding included."""
    size = math.prod(shape) * dtype.itemsize
    return size + -size % ITEM_BYTES


def frame_skeleton(data: bytes) -> str:
    """The skeleton text of a frame this side made itself (the task): its structure without array bytes."""
    size, _ = HEADER.unpack_from(data)
    return data[HEADER.size:HEADER.size + size].decode()


def decode_frame(data: bytes, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH, writable: bool = True,
                 piece: int = PIECE_BYTES):
    """One whole frame (bytes) back to its value; raises ValueError (TooLarge) on anything malformed. writable=False:
    its arrays are read-only views of `data` itself (no copy). piece: loads_in_pieces' (a reader no other thread
    waits on may take a larger one)."""
    reader = FrameReader(len(data), max_nodes, max_depth, writable, piece)
    frames = reader.feed(data)
    if len(frames) != 1 or reader.pending or frames[0] is REFUSED:
        raise ValueError("not exactly one well-formed frame")
    return frames[0]


def read_frame(stream, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH, to_end: bool = True):
    """The one frame a binary stream holds to its end (to_end=False: the frame at its start, the rest left unread),
    decoded as decode_frame decodes it (ValueError, TooLarge), read into a buffer of its announced size placed so that
    its arrays start 8-byte aligned: they are writable views of it, with no copy (the sandbox's task, which the
    grader writes on the job's standard input)."""
    header = stream.read(HEADER.size)
    if len(header) != HEADER.size:
        raise ValueError("not exactly one well-formed frame")
    skeleton_bytes, array_bytes = HEADER.unpack(header)
    if skeleton_bytes > MAX_SKELETON_BYTES:
        raise TooLarge("a skeleton over the cap")
    size = skeleton_bytes + array_bytes
    buffer = frame_buffer(size + ITEM_BYTES)
    start = -(_address(buffer) + skeleton_bytes) % ITEM_BYTES
    body = buffer[start:start + size]
    if stream.readinto(body) != size or (to_end and stream.read(1)):
        raise ValueError("not exactly one well-formed frame")
    value = FrameReader(HEADER.size + size, max_nodes, max_depth)._decode(body, skeleton_bytes, array_bytes, True)
    if value is REFUSED:
        raise ValueError("not exactly one well-formed frame")
    return value


HUGE_PAGE_BYTES = 2 << 20             # a transparent huge page (x86-64, arm64 with 4 kB pages)


def frame_buffer(size: int) -> memoryview:
    """A zeroed, writable buffer of `size` bytes. One of a quarter of a huge page or more is memory of its own,
    starting on a huge page boundary, that the kernel may back with huge pages (where it gives them on request): a
    job's task of ~1.7 MB is then one page fault, not ~430 (each a few microseconds), as it is read in. A smaller
    one is a bytearray."""
    if size < HUGE_PAGE_BYTES // 4:
        return memoryview(bytearray(size))
    whole = -(-size // HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES + HUGE_PAGE_BYTES      # room to start on a boundary
    mapped = mmap.mmap(-1, whole, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)    # private: shared memory is not THP's
    with contextlib.suppress(AttributeError, OSError):          # no such advice here: small pages, as a bytearray's
        mapped.madvise(mmap.MADV_HUGEPAGE)
    view = memoryview(mapped)
    start = -_address(view) % HUGE_PAGE_BYTES
    return view[start:start + size]


REFUSED = object()                   # what FrameReader.feed yields for a frame it dropped
TOO_LARGE, MALFORMED = "too_large", "malformed"    # why: over a cap (its header said so), or not the frame format


class FrameReader:
    """Splits a byte stream into frames and decodes each once, within caps checked before any allocation:
    a frame's total size against `max_frame_bytes` from its header alone, its skeleton's values counted on its
    bytes (a skeleton of fewer bytes than `max_nodes` cannot hold more values: it is parsed as it is), its depth as
    it is decoded (nothing past the cap is handed on), every array's shape against the bytes announced. A frame over
    a cap is skipped without being kept; a malformed one is dropped; both yield REFUSED, and `refusal` keeps why the
    first was (TOO_LARGE or MALFORMED) and `announced` the size its header gave.

    A frame's pieces are kept as they arrive and joined once when it is whole. writable=False (the trusted side,
    which only reads what it is sent): its arrays are read-only views of those joined bytes, with no further copy;
    else each frame's arrays get one writable copy (the sandbox side hands its inputs to student code)."""

    def __init__(self, max_frame_bytes: int, max_nodes: int = MAX_NODES, max_depth: int = MAX_DEPTH,
                 writable: bool = True, piece: int = PIECE_BYTES):
        self.max_frame_bytes, self.max_nodes, self.max_depth = max_frame_bytes, max_nodes, max_depth
        self.writable, self.piece = writable, piece
        self.header, self.pieces, self.kept, self.needed, self.skipping = bytearray(), [], 0, 0, 0
        self.refusal: str | None = None
        self.announced = self.skipped_frame = 0        # bytes of the first frame refused; of the last one skipped

    def _refused(self, why: str, announced: int):
        if self.refusal is None:
            self.refusal, self.announced = why, announced
        return REFUSED

    @property
    def pending(self) -> int:
        return len(self.header) + self.kept + self.skipping

    def feed(self, data) -> list:
        frames = []
        view = memoryview(data)
        while len(view):
            if self.skipping:                        # the rest of an oversized frame, counted, never kept
                dropped = min(self.skipping, len(view))
                self.skipping -= dropped
                view = view[dropped:]
                continue
            if not self.needed:                      # between frames: the header first
                need = HEADER.size - len(self.header)
                self.header += view[:need]
                view = view[need:]
                if len(self.header) < HEADER.size:
                    break
                skeleton_bytes, array_bytes = HEADER.unpack_from(self.header)
                self.header.clear()
                if skeleton_bytes > MAX_SKELETON_BYTES or HEADER.size + skeleton_bytes + array_bytes \
                        > self.max_frame_bytes:
                    self.skipping = skeleton_bytes + array_bytes
                    self.skipped_frame = HEADER.size + skeleton_bytes + array_bytes
                    frames.append(self._refused(TOO_LARGE, self.skipped_frame))
                    continue
                self.sizes, self.needed = (skeleton_bytes, array_bytes), skeleton_bytes + array_bytes
                if not self.needed:                  # nothing after the header: malformed (a skeleton is never empty)
                    frames.append(self._refused(MALFORMED, HEADER.size))
                    continue
            piece = view[:self.needed - self.kept]
            whole = type(data) is bytes and len(piece) == len(data)
            self.pieces.append(data if whole else bytes(piece))    # kept as it arrived until the frame is whole
            self.kept += len(piece)
            view = view[len(piece):]
            if self.kept < self.needed:
                break
            body = self.pieces[0] if len(self.pieces) == 1 else b"".join(self.pieces)
            self.pieces, self.kept, self.needed = [], 0, 0
            frames.append(self._decode(body, *self.sizes))
        return frames

    def _decode(self, body, skeleton_bytes: int, array_bytes: int, own: bool = False):
        """own: `body` is a writable buffer handed over (read_frame's), whose arrays may be writable views of it."""
        try:
            # Counted and parsed a piece at a time (a short skeleton at once: fewer bytes, fewer values), so that
            # no skeleton holds the interpreter from the threads serving others for longer than one piece.
            shapes, skeleton = _skeleton(loads_in_pieces(bytes(body[:skeleton_bytes]), self.max_nodes, self.max_depth,
                                                         self.piece))
            if sum(_padded(shape, dtype) for shape, dtype in shapes) != array_bytes:
                return self._refused(MALFORMED, HEADER.size + len(body))
            # In place only when read-only or handed over, and aligned (frame() pads the skeleton; numpy is slow on
            # unaligned floats)
            in_place = (own or not self.writable) and (_address(body) + skeleton_bytes) % ITEM_BYTES == 0
            payload = body if in_place else bytearray(memoryview(body)[skeleton_bytes:])      # else one copy
            arrays, offset = [], skeleton_bytes if in_place else 0
            for shape, dtype in shapes:
                array = np.frombuffer(payload, dtype=dtype, count=math.prod(shape), offset=offset).reshape(shape)
                array.flags.writeable = self.writable
                arrays.append(array)
                offset += _padded(shape, dtype)
            return _decode(skeleton, arrays, inline=False, levels=self.max_depth - 1)   # the skeleton's list is one
        except (TooLarge, RecursionError):
            return self._refused(TOO_LARGE, HEADER.size + len(body))
        except (ValueError, TypeError, UnicodeDecodeError):
            return self._refused(MALFORMED, HEADER.size + len(body))


def _address(data: bytes | bytearray | memoryview) -> int:
    return np.frombuffer(data, dtype=np.uint8, count=0).__array_interface__["data"][0] if data else 0


def _skeleton(parsed) -> tuple[list[tuple[tuple[int, ...], np.dtype]], object]:
    """([(shape, wire dtype), ...], body) from a parsed skeleton; ValueError unless every shape is a short list of
    non-negative integers (float64), or one under the key FLOAT32 alone."""
    if not (isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], list)
            and len(parsed[0]) <= MAX_ARRAYS):
        raise ValueError("not a frame skeleton")
    shapes = []
    for shape in parsed[0]:
        kind = None
        if isinstance(shape, dict) and set(shape) == {FLOAT32}:
            kind, shape = FLOAT32, shape[FLOAT32]
        if not (isinstance(shape, list) and len(shape) <= MAX_DIMENSIONS
                and all(type(n) is int and n >= 0 for n in shape)):
            raise ValueError("not an array shape")
        shapes.append((tuple(shape), WIRE_DTYPES[kind]))
    return shapes, parsed[1]
