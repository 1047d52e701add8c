"""What the integrity report needs from each graded submission, kept beside the grading work files.

Per submission, compact (Evidence): the variant it was graded on, rounded digests of its answers on the
shared set (described where the test failed), digests of its own answers, the records of tests it fails
on its own varied inputs, and the code the student wrote. Git-ignored (.work/).
"""
from __future__ import annotations

import collections
import dataclasses
import hashlib
import itertools
import pathlib
import struct
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from posenc_autograder import settings
from posenc_autograder.checks import REGISTRY, variants
from posenc_autograder.course import Course, nbgrader_meta
from posenc_autograder.grading.pipeline import released, submitted_notebook
from posenc_autograder.grading.shared_probes import SHARED_CELL, varies  # noqa: F401 - the report reads them here
from posenc_autograder.probes import codec
from posenc_autograder.results import STUB_ERROR, NotebookResult

if TYPE_CHECKING:
    from nbformat import NotebookNode

    from posenc_autograder.checks.hidden import HiddenTest
    from posenc_autograder.grading.execute import Execution
    from posenc_autograder.intake.submissions import Submission

MAX_CODE_CHARACTERS = 200_000              # a student's code beyond this is not compared
SUFFIX = ".npz"                            # a JSON skeleton plus its float64 arrays, no pickles
MAX_EVIDENCE_BYTES = 64 * 2**20            # a flood of failing answers beyond this is not kept (and reported)
# Bounds checked while a record is walked, never after it is built: past one, the record is summarised (its first
# answers digested, the test named in Evidence.cut) and the walk stops. An honest record holds at most ~110 answers.
MAX_ANSWERS = 4096                         # answers (leaves) of one test's record compared one by one
MAX_ANSWER_ITEMS = 200_000                 # containers and items walked one by one in one record (arrays, and lists
                                           # of floats, are digested whole: a table returned as lists stays cheap)
SAMPLE_ANSWERS = 64                        # a summarised record: digests of its first answers, in their order
MAX_KEPT_RECORD_BYTES = 8 * 2**20          # a failing record kept whole for the leak check (arrays and items)
Digests = list["hashlib._Hash"]           # one running digest per rounding grid
DIGEST_CHUNK = 1 << 15                     # array entries rounded and digested at a time: 256 KiB, so the rounding's
                                           # passes and both digests read the chunk from cache (1 << 20 went to memory
                                           # each pass: digests ~20 % slower); the bytes fed do not depend on it
TOO_LARGE_TO_COMPARE = "too large to compare"


class EvidenceTooLarge(ValueError):
    pass


class TooLargeToCompare(ValueError):
    """A record (or one answer of it) past the bounds above: summarised instead of compared."""


@dataclasses.dataclass
class StudentRecord:
    student: str
    assignment: str
    notebook: str
    variant: int | None
    own: dict[str, dict[str, Any]]       # cell id -> probe record on the student's own inputs
    shared: dict[str, dict[str, Any]]    # cell id -> probe record on the course-wide inputs
    code: str            # what the student wrote, starter code included
    failed: dict[str, bool] | None = None    # cell id -> the judge's verdict on `own` (failed), when it ran


def folder(course: Course, assignment: str, notebook: str) -> pathlib.Path:
    return course.work / "integrity" / assignment / notebook


# --- evidence not kept yet: the portal keeps it after the student's result (portal.worker.Deferred) -----------

PENDING = "pending"                        # course.work/integrity/pending/: a marker per graded attempt waiting
PENDING_PREFIX = "attempt-"


def pending_path(course: Course, attempt_id: int) -> pathlib.Path:
    """The marker of a portal attempt graded whose evidence is not kept yet."""
    return course.work / "integrity" / PENDING / f"{PENDING_PREFIX}{attempt_id}"


def pending_markers(course: Course) -> list[pathlib.Path]:
    """Every marker still on disk: the integrity report reads no evidence while one is left."""
    return sorted((course.work / "integrity" / PENDING).glob(f"{PENDING_PREFIX}*"))


def pending_attempt(marker: pathlib.Path) -> int | None:
    """The attempt a marker names (None: a file of another shape, left alone)."""
    number = marker.name.removeprefix(PENDING_PREFIX)
    return int(number) if number.isdigit() else None


def student_code(submitted_nb: NotebookNode, release_nb: NotebookNode) -> str:
    """The student's answer cells and added code cells (read-only cells are the release's, never theirs)."""
    locked = {nbgrader_meta(c).get("grade_id") for c in release_nb.cells
              if nbgrader_meta(c).get("grade_id") and not nbgrader_meta(c).get("solution")}
    parts = [str(c.get("source", "")) if isinstance(c.get("source", ""), str) else "".join(c["source"])
             for c in submitted_nb.cells
             if c.get("cell_type") == "code" and nbgrader_meta(c).get("grade_id") not in locked]
    return "\n\n".join(parts)[:MAX_CODE_CHARACTERS]


# --- compact evidence: what the report needs, a few kilobytes a student ----------------------------------

NOT_EVIDENCE = (STUB_ERROR, "NameError")     # unfinished stubs and missing functions
KEPT_BITS = 24          # answers compare rounded to 24 significant bits (float32's), on two grids half a step
                        # apart: a shift of a few ulps (x * (1 - 2**-53)) keeps at least one key in common
DROPPED = 52 - (KEPT_BITS - 1)          # of a float64's 52 stored mantissa bits
HALF_STEP = np.uint64(1 << (DROPPED - 1))
KEPT = np.uint64(~((1 << DROPPED) - 1) & (2**64 - 1))
MAGNITUDE = np.uint64(2**63 - 1)
TINY = np.float64(1e-300).view(np.uint64)
INFINITY = np.float64(np.inf).view(np.uint64)
KEY_FORMAT = "sha256-80, 24 bits nearest and cell middle"      # how answer_keys digests (stored with the keys)
BLAKE2B_KEY_FORMAT = "blake2b-80, 24 bits rint"                # evidence written before: keys never compared with these


@dataclasses.dataclass
class Answer:
    """One answer on the shared probe set, as the report compares it."""
    test: str
    where: str                  # its path inside the test's observations
    keys: list[str]             # rounded digests (see answer_keys)
    failed: bool                # the student fails this test on the shared set
    description: str = ""       # kept for failed tests only: the report shows those


@dataclasses.dataclass
class Evidence:
    student: str
    assignment: str
    notebook: str
    variant: int | None
    code: str                                   # what the student wrote (answer cells and added cells)
    answers: list[Answer]                       # every answer of their own on the shared set
    own_keys: dict[str, list[str]]              # test (inputs vary) -> digests of the values on their own inputs
    own_failing: dict[str, dict[str, Any]]      # test (inputs vary) failed on their own inputs -> its record
    key_format: str = KEY_FORMAT                # how its keys were digested: only keys of one format are compared
    cut: dict[str, str] = dataclasses.field(default_factory=dict)   # test (or "*": all) -> why it was summarised


def leaves(value: object, path: str = "") -> Iterator[tuple[str, object]]:
    """The answers inside a probe's observations: attempt records and bare values, with their paths (a dict's keys in
    order; one too large to compare anyway in its own order, not sorted first)."""
    if isinstance(value, dict) and "value" not in value and "error" not in value:
        for key in sorted(value, key=str) if len(value) <= MAX_ANSWERS else value:
            yield from leaves(value[key], f"{path}/{key}")
    elif isinstance(value, list) and value and all(isinstance(v, (dict, list)) for v in value):
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path or "/", value


def unfinished(answer: object) -> bool:
    return isinstance(answer, dict) and str(answer.get("error", "")).startswith(NOT_EVIDENCE)


def _rounded(array: np.ndarray) -> list[np.ndarray]:
    """Every float, flattened, as the bits of its two roundings to KEPT_BITS significant bits: to the nearest (ties
    away from zero) and to the middle of the step it lies in (grids half a step apart, whose edges alternate, so
    two floats less than half a step apart share one of them). Integer work on the floats' bits, no float split:
    the sign and exponent stay, a carry out of the mantissa moves to the next power of two as rounding does. Tiny
    values (and -0.0) count as 0; NaN (any payload) and infinities stay as they are in both."""
    array = np.ravel(array)
    bits = np.ascontiguousarray(array).view(np.uint64)
    magnitude = bits & MAGNITUDE                          # the bits without the sign: ordered as the floats' sizes
    if magnitude.min(initial=INFINITY) < TINY:
        array = np.where(magnitude < TINY, 0.0, array)      # an ulp from zero is zero
        bits = array.view(np.uint64)
    nearest = bits + HALF_STEP
    nearest &= KEPT
    middle = bits & KEPT
    middle |= HALF_STEP
    if magnitude.max(initial=0) >= INFINITY:
        odd = magnitude >= INFINITY
        kept = np.where(np.isnan(array), np.nan, array).view(np.uint64)
        nearest[odd] = middle[odd] = kept[odd]
    return [nearest, middle]


class _Walk:
    """What one record's walk may still visit (TooLargeToCompare past it), and the array bytes it met."""

    def __init__(self, items: int = MAX_ANSWER_ITEMS):
        self.items, self.array_bytes = items, 0

    def step(self, count: int = 1) -> None:
        self.items -= count
        if self.items < 0:
            raise TooLargeToCompare(TOO_LARGE_TO_COMPARE)


def _digest(digests: Digests, value: object, walk: _Walk) -> None:
    """Feed an answer to one digest per grid: its structure, its plain values and its floats' rounded bits,
    each tagged with its kind and length so that no two different answers feed the same bytes. A container is
    counted against the walk before it is entered; an array is digested a chunk at a time."""
    walk.step()
    if isinstance(value, dict):
        walk.step(len(value))
        _update(digests, b"{%d;" % len(value))
        for key in sorted(value, key=str):
            _text(digests, str(key))
            _digest(digests, value[key], walk)
    elif isinstance(value, (list, tuple)):
        _update(digests, b"[%d;" % len(value))
        if len(value) > FLOAT_RUN and all(type(item) is float for item in value):
            _float_run(digests, value, walk)
            return
        walk.step(len(value))
        for item in value:
            _digest(digests, item, walk)
    elif isinstance(value, float):          # one float (np.float64 too): what the array path feeds for it, 0-d
        walk.array_bytes += FLOAT_BYTES.size
        for digest, word in zip(digests, _rounded_float(value), strict=True):
            digest.update(b"a;" + WORD.pack(word))
    elif isinstance(value, np.ndarray):
        array = np.asarray(value, dtype=np.float64)
        walk.array_bytes += array.nbytes
        _update(digests, b"a%s;" % ",".join(map(str, array.shape)).encode())
        flat = np.ravel(array)
        for start in range(0, max(flat.size, 1), DIGEST_CHUNK):      # the digests are the whole array's
            for digest, rounded in zip(digests, _rounded(flat[start:start + DIGEST_CHUNK]), strict=True):
                digest.update(rounded.astype("<u8", copy=False).data)
    else:
        _text(digests, f"{type(value).__name__}:{value!r}"[:MAX_ANSWER_ITEMS])


FLOAT_BYTES, WORD = struct.Struct("<d"), struct.Struct("<Q")      # a float64, and its bits as one word
NAN_BITS = WORD.unpack(FLOAT_BYTES.pack(np.nan))[0]                # the NaN _rounded() writes for any NaN


def _rounded_float(value: float) -> tuple[int, int]:
    """_rounded() of one float, as Python ints: the same two words without a dozen numpy calls on a 0-d array (a
    record's answers hold many single numbers)."""
    bits = WORD.unpack(FLOAT_BYTES.pack(value))[0]
    magnitude = bits & _MAGNITUDE
    if magnitude >= _INFINITY:
        kept = NAN_BITS if magnitude > _INFINITY else bits
        return kept, kept
    if magnitude < _TINY:
        bits = 0                                              # an ulp from zero is +0.0
    return (bits + _HALF_STEP) & _KEPT, (bits & _KEPT) | _HALF_STEP


_MAGNITUDE, _INFINITY, _TINY, _HALF_STEP, _KEPT = map(int, (MAGNITUDE, INFINITY, TINY, HALF_STEP, KEPT))


FLOAT_RUN = 16                   # a list of more floats than this is digested as one array, to the same bytes
SCALAR_FLOAT = np.dtype([("tag", "S2"), ("bits", "<u8")])     # what _digest feeds for one float: b"a;" and its bits


def _float_run(digests: Digests, floats: Sequence[float], walk: _Walk) -> None:
    """The bytes _digest feeds for each float of a list, one after another, fed a chunk at a time without a call
    per float: b"a;" (a scalar's empty shape) and its rounded bits, on each grid."""
    for start in range(0, len(floats), DIGEST_CHUNK):
        array = np.array(floats[start:start + DIGEST_CHUNK], dtype=np.float64)
        walk.array_bytes += array.nbytes
        for digest, rounded in zip(digests, _rounded(array), strict=True):
            run = np.empty(array.size, dtype=SCALAR_FLOAT)
            run["tag"], run["bits"] = b"a;", rounded
            digest.update(run.tobytes())


def _update(digests: Digests, data: bytes) -> None:
    for digest in digests:
        digest.update(data)


def _text(digests: Digests, text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    _update(digests, b"s%d;" % len(data) + data)


KEY_CHARACTERS = 20     # 80 bits of each digest


def answer_keys(answer: object, walk: _Walk | None = None) -> list[str]:
    """Two digests of an answer (KEY_FORMAT), one per rounding grid: answers a few ulps apart share at least one.
    SHA-256 rather than BLAKE2b: twice as fast on CPUs with SHA extensions, and most of the evidence's cost.
    TooLargeToCompare for an answer past MAX_ANSWER_ITEMS (or the walk given). A large answer equal, bit for bit, to
    one digested before in this process takes that one's keys (SEEN)."""
    walk = walk or _Walk()
    seen = SEEN.find(answer)
    if seen is not None:
        keys, items, array_bytes = seen
        walk.step(items)                     # what its walk took: past a bound exactly when digesting it would be
        walk.array_bytes += array_bytes
        return list(keys)
    items, array_bytes = walk.items, walk.array_bytes
    digests = [hashlib.sha256(), hashlib.sha256()]
    _digest(digests, answer, walk)
    keys = [digest.hexdigest()[:KEY_CHARACTERS] for digest in digests]
    SEEN.keep(answer, keys, items - walk.items, walk.array_bytes - array_bytes)
    return keys


# Answers digested before, kept to give the same keys to an equal answer without digesting it again: a class's
# correct notebooks return the same tables on the course-wide inputs (most of an honest notebook's ~8 MB of answers:
# two SHA-256 streams and their rounding, ~25 ms of a job). Only answers of a few arrays in small containers, which
# compare in one pass of memory; compared exactly (types, keys in order, each float's and array's bits), never by a
# digest, so no answer ever takes another's keys.
SEEN_MIN_BYTES = 4 * 2**10               # smaller answers digest about as fast as they compare
SEEN_BYTES = 16 * 2**20                  # kept copies, per process (an honest notebook's large answers: ~7 MB)
SEEN_PER_OUTLINE = 4                     # answers kept of one outline (the tests that return one shape)
SEEN_CONTAINER_ITEMS = FLOAT_RUN         # items of a dict or list inside a kept answer, at most
SEEN_DEPTH = 4
KEPT_SCALARS = (str, int, bool, type(None))


def _outline(value: Any, depth: int = 0, deepest: int = SEEN_DEPTH,
             room: list[int] | None = None) -> tuple[Any, ...] | str | None:
    """What an answer looks like without reading its arrays' entries (types, keys, shapes): the answers that may equal
    it share it. None for an answer not kept: deeper or wider than `deepest` levels and SEEN_CONTAINER_ITEMS, with more
    items in all than `room` holds (counted down as it goes; None: not counted), an array not of float64, or a value of
    another type."""
    kind = type(value)
    if kind is np.ndarray:
        return ("a", value.shape) if value.dtype == np.float64 else None
    if depth >= deepest:
        return None
    if kind is dict or kind is list or kind is tuple:
        if len(value) > SEEN_CONTAINER_ITEMS:
            return None
        if room is not None:
            room[0] -= len(value)
            if room[0] < 0:
                return None
        items = value.items() if kind is dict else enumerate(value)
        inner = []
        for key, item in items:
            shape = _outline(item, depth + 1, deepest, room)
            if shape is None or (kind is dict and type(key) is not str):
                return None
            inner.append((key, shape))
        return (kind.__name__, tuple(inner))
    return kind.__name__ if kind is float or kind in KEPT_SCALARS else None


# A whole probe record (or its observations), as the records kept by test (SHARED_VERDICTS, SHARED_KEYS) outline it:
# {"observations": ...} around a test's groups, cases and calls nests deeper than one answer (the contracts record:
# call, kind, shape, 5 levels), so deeper than SEEN_DEPTH, and the walk is bounded by its items in all instead.
RECORD_DEPTH = 8
RECORD_ITEMS = 1024            # a solved notebook's largest record on the course-wide inputs (contracts): ~150 items


def _record_outline(record: Any) -> tuple[Any, ...] | str | None:
    return _outline(record, deepest=RECORD_DEPTH, room=[RECORD_ITEMS])


def _same(a: Any, b: Any) -> bool:
    """Equal bit for bit, as _digest reads them (the two have one _outline: types, keys and shapes already agree)."""
    if type(a) is np.ndarray:
        return bool(np.array_equal(np.ascontiguousarray(a).view(np.uint64), np.ascontiguousarray(b).view(np.uint64)))
    if type(a) is dict:
        return all(_same(a[key], b[key]) for key in a)
    if type(a) is list or type(a) is tuple:
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if type(a) is float:
        return FLOAT_BYTES.pack(a) == FLOAT_BYTES.pack(b)
    return bool(a == b)


def _copy(value: Any) -> Any:
    """An answer's copy for SEEN, its arrays read-only: what a job does with its records later cannot change it."""
    if type(value) is np.ndarray:
        copy = np.array(value)
        copy.flags.writeable = False
        return copy
    if type(value) is dict:
        return {key: _copy(item) for key, item in value.items()}
    if type(value) is list or type(value) is tuple:
        return type(value)(_copy(item) for item in value)
    return value


class _KeptRecords:
    """Records kept with what was worked out from them, found again only by a record equal bit for bit (_same): at
    most `per_key` a key, `limit` bytes of their arrays in all (the least recently used key's first out)."""

    def __init__(self, limit: int, per_key: int):
        self.limit, self.per_key, self.held, self.lock = limit, per_key, 0, threading.Lock()
        self.kept: collections.OrderedDict[Any, list[tuple[Any, Any, int]]] = collections.OrderedDict()

    def found(self, key: Any, record: Any) -> tuple[Any, Any, int] | None:
        """The kept (copy, what was worked out, array bytes) of a record equal to this one, or None."""
        with self.lock:
            candidates = list(self.kept.get(key, ()))
        for entry in candidates:
            if _same(record, entry[0]):
                with self.lock:
                    if key in self.kept:
                        self.kept.move_to_end(key)
                return entry
        return None

    def add(self, key: Any, record: Any, worked_out: Any, array_bytes: int) -> None:
        entry = (_copy(record), worked_out, array_bytes)
        with self.lock:
            entries = self.kept.setdefault(key, [])
            entries.insert(0, entry)
            self.held += array_bytes
            while len(entries) > self.per_key:
                self.held -= entries.pop()[2]
            self.kept.move_to_end(key)
            while self.held > self.limit:
                _, dropped = self.kept.popitem(last=False)
                self.held -= sum(entry[2] for entry in dropped)


class _SeenAnswers(_KeptRecords):
    """SEEN: answers of at least SEEN_MIN_BYTES of arrays and their keys, SEEN_BYTES at most, with what their walk
    took (items, array bytes)."""

    def __init__(self, limit: int = SEEN_BYTES):
        super().__init__(limit, SEEN_PER_OUTLINE)

    def find(self, answer: object) -> tuple[list[str], int, int] | None:
        outline = _outline(answer)
        entry = self.found(outline, answer) if isinstance(outline, tuple) else None
        if entry is None:
            return None
        keys, items = entry[1]
        return keys, items, entry[2]

    def keep(self, answer: object, keys: list[str], items: int, array_bytes: int) -> None:
        if array_bytes < SEEN_MIN_BYTES or array_bytes > self.limit // 2:
            return
        outline = _outline(answer)
        if isinstance(outline, tuple):
            self.add(outline, answer, (list(keys), items), array_bytes)


SEEN = _SeenAnswers()

# Verdicts on the course-wide inputs (the shared probe set, which the student's own judge never sees) of records
# judged before in this process: a class's correct notebooks often send the same records there (judging them again was
# ~5 of a solved job's ~8 ms of these verdicts). A record takes a kept verdict only when equal to the record it was
# judged on, compared exactly as SEEN compares (types, keys in order, every float's and array's bits): a judge's
# verdict on course-wide inputs is a function of the record alone. Records of small outlines only (_record_outline).
VERDICTS_BYTES = 4 * 2**20                # kept records, per process: their arrays, strings and a few words an item
VERDICTS_PER_OUTLINE = 4


class _SharedVerdicts(_KeptRecords):
    """Whether each test fails a record on the course-wide inputs, kept for records judged before (least recently
    used out past VERDICTS_BYTES)."""

    def __init__(self, limit: int = VERDICTS_BYTES):
        super().__init__(limit, VERDICTS_PER_OUTLINE)

    def failed(self, check: HiddenTest, probe_record: dict[str, Any]) -> bool:
        outline = _record_outline(probe_record)
        if not isinstance(outline, tuple):
            return bool(check.verdict(probe_record, None))
        key = (check.id, outline)
        entry = self.found(key, probe_record)
        if entry is not None:
            return bool(entry[1])
        failed = bool(check.verdict(probe_record, None))
        size = _held_bytes(probe_record)
        if size <= self.limit // 2:
            self.add(key, probe_record, failed, size)
        return failed


SHARED_VERDICTS = _SharedVerdicts()

# The keys of every answer of a record on the course-wide inputs (the shared probe set's), kept for records digested
# before in this process, per test: a class's notebooks send the same records there, most of their answers smaller
# than SEEN keeps (a solved notebook's ~33 answers there cost ~4 ms of digests a job, and one comparison of the whole
# record less than that). Found again only by a record equal bit for bit (_same), of small outlines (_record_outline).
SHARED_KEYS_BYTES = 8 * 2**20             # kept records, per process: their arrays, strings and a few words an item
SHARED_KEYS_PER_OUTLINE = 4


def _held_bytes(value: Any) -> int:
    """What a value of a _record_outline holds, roughly: its arrays' and strings' bytes and a few words an item (bounded
    by the outline: at most RECORD_ITEMS items)."""
    if type(value) is np.ndarray:
        return value.nbytes
    if type(value) is dict:
        return sum(64 + len(key) + _held_bytes(item) for key, item in value.items())
    if type(value) is list or type(value) is tuple:
        return sum(64 + _held_bytes(item) for item in value)
    return 64 + len(value) if type(value) is str else 64


class _SharedKeys(_KeptRecords):
    """compared_answers() of a test's records on the course-wide inputs, each answer's keys taken from an equal record
    met before (its answers are equal bit for bit, so their keys are the ones digesting gives)."""

    def __init__(self, limit: int = SHARED_KEYS_BYTES):
        super().__init__(limit, SHARED_KEYS_PER_OUTLINE)

    def compared(self, test: str, observations: object) -> list[tuple[str, object, list[str]]]:
        outline = _record_outline(observations)
        if not isinstance(outline, tuple):
            return compared_answers(observations)
        key = (test, outline)
        entry = self.found(key, observations)
        if entry is not None:                       # the same leaves, in the same order, as the record kept
            return [(where, answer, list(keys))
                    for (where, answer), keys in zip(leaves(observations), entry[1], strict=True)]
        found = compared_answers(observations)      # TooLargeToCompare: nothing kept, as for any record past it
        size = _held_bytes(observations)
        if size <= self.limit // 2:
            self.add(key, observations, [list(keys) for _, _, keys in found], size)
        return found


SHARED_KEYS = _SharedKeys()


def compared_answers(observations: object, walk: _Walk | None = None) -> list[tuple[str, object, list[str]]]:
    """(where, answer, keys) for every answer of a record, walked within MAX_ANSWERS answers and MAX_ANSWER_ITEMS
    items in all (what it met counted in `walk`): TooLargeToCompare as soon as a bound is passed."""
    found: list[tuple[str, object, list[str]]] = []
    walk = walk or _Walk()
    for where, answer in itertools.islice(leaves(observations), MAX_ANSWERS + 1):
        if len(found) == MAX_ANSWERS:
            raise TooLargeToCompare(TOO_LARGE_TO_COMPARE)
        found.append((where, answer, answer_keys(answer, walk)))
    return found


def _kept_bytes(walk: _Walk) -> int:
    """What a record walked holds, roughly: its arrays' bytes and a few words per item."""
    return walk.array_bytes + 64 * (MAX_ANSWER_ITEMS - walk.items)


def sample_keys(observations: object) -> list[str]:
    """The digests of a record too large to compare: of its first SAMPLE_ANSWERS answers (in the record's order),
    each within a small walk, so two records that begin alike (a flood sent by two copies) still share them."""
    digests = [hashlib.sha256(), hashlib.sha256()]
    _update(digests, b"sample;")
    for where, answer in itertools.islice(leaves(observations), SAMPLE_ANSWERS):
        _text(digests, where)
        try:
            _digest(digests, answer, _Walk(MAX_ANSWER_ITEMS // SAMPLE_ANSWERS))
        except TooLargeToCompare:
            _update(digests, b"!")             # the answer's beginning is digested: the same for the same answer
    return [digest.hexdigest()[:KEY_CHARACTERS] for digest in digests]


def describe(answer: object) -> str:
    """A short, plain description of an answer (escaped later, where it is shown)."""
    if isinstance(answer, dict) and "error" in answer:
        return f"raised {str(answer['error'])[:160]}"
    return f"returned {_show(answer.get('value') if isinstance(answer, dict) and 'value' in answer else answer)}"[:240]


def _show(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} starting {np.array2string(value.ravel()[:3], precision=17)}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_show(v)}" for k, v in list(value.items())[:6]) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value[:4]) + (", ..." if len(value) > 4 else "") + "]"
    return repr(value)


def _judged(probe_record: object) -> bool:
    return isinstance(probe_record, dict) and "observations" in probe_record


def _failed(record: StudentRecord, check: HiddenTest, probe_record: dict[str, Any], shared: bool) -> bool:
    """Whether the answers in probe_record fail the test: the judge's verdict where it judged these very
    records (the student's own, and the shared set's when it is their own run), else judged here."""
    same_run = not shared or record.variant is None or not varies(check.id)
    if same_run and record.failed is not None and check.id in record.failed:
        return record.failed[check.id]
    if shared:
        return SHARED_VERDICTS.failed(check, probe_record)
    return bool(check.verdict(probe_record, record.variant))


def _too_large(probe_record: object) -> bool:
    """A record the supervisor did not keep: the job sent more than it keeps (grading.execute.TOO_LARGE)."""
    return isinstance(probe_record, dict) and probe_record.get("too_large") is True


def compact(record: StudentRecord) -> Evidence:
    """The report's evidence from a full record: digests of every answer on the shared set (descriptions
    for failed tests), digests of the values on the student's own inputs, and the whole records only of
    tests whose inputs vary and which the student fails on them (the leak check judges those again).
    A record past the bounds (MAX_ANSWERS, MAX_ANSWER_ITEMS, MAX_KEPT_RECORD_BYTES) is summarised as it is found:
    one answer with the digests of its first answers (sample_keys), described as too large to compare, and its
    test named in `cut`, which the report lists: a flood of one's own answers hides nothing."""
    answers, cut = [], {}
    for cell_id, probe_record in sorted(record.shared.items()):
        check = REGISTRY.get(cell_id)
        if check is not None and _too_large(probe_record):
            cut[cell_id] = "the notebook sent more answers than the grader keeps"
        if check is None or not _judged(probe_record):
            continue
        try:
            finished = [(where, answer, keys) for where, answer, keys in SHARED_KEYS.compared(cell_id,
                                                                                         probe_record["observations"])
                        if not unfinished(answer)]
        except TooLargeToCompare:
            cut[cell_id] = TOO_LARGE_TO_COMPARE
            failed = _failed(record, check, probe_record, shared=True)
            answers.append(Answer(cell_id, "/", sample_keys(probe_record["observations"]), failed,
                                  f"{TOO_LARGE_TO_COMPARE}: more than {MAX_ANSWERS} answers, or one too large"))
            continue
        if finished:        # a record of stubs only keeps no answer: its verdict (a judge's run) is not needed
            failed = _failed(record, check, probe_record, shared=True)
            answers += [Answer(cell_id, where, keys, failed, describe(answer) if failed else "")
                        for where, answer, keys in finished]
    own_keys, own_failing = {}, {}
    for cell_id, probe_record in sorted(record.own.items()):
        check = REGISTRY.get(cell_id)
        if check is not None and _too_large(probe_record):
            cut[cell_id] = "the notebook sent more answers than the grader keeps"
        if check is None or not _judged(probe_record) or record.variant is None or not varies(cell_id):
            continue
        walk = _Walk()
        try:
            own_keys[cell_id] = sorted({key for _, answer, keys in compared_answers(probe_record["observations"], walk)
                                        if not (isinstance(answer, dict) and "error" in answer) for key in keys})
        except TooLargeToCompare:
            cut[cell_id] = TOO_LARGE_TO_COMPARE
            own_keys[cell_id] = sample_keys(probe_record["observations"])
            continue
        if _failed(record, check, probe_record, shared=False):
            if _kept_bytes(walk) <= MAX_KEPT_RECORD_BYTES:
                own_failing[cell_id] = probe_record
            else:
                cut[cell_id] = f"{TOO_LARGE_TO_COMPARE} on the student's own inputs (not kept for the leak check)"
    return Evidence(record.student, record.assignment, record.notebook, record.variant, record.code, answers,
                    own_keys, own_failing, cut=cut)


def path(course: Course, assignment: str, notebook: str, student: str) -> pathlib.Path:
    """Where the integrity report reads the evidence of the student's submission that counts."""
    return folder(course, assignment, notebook) / f"{student}{SUFFIX}"


def save(course: Course, submission: Submission, execution: Execution, variant: int | None,
         submitted_nb: NotebookNode | None, release: NotebookNode,
         target: pathlib.Path | None = None, failed: dict[str, bool] | None = None) -> None:
    """Keep one graded submission's evidence (the shared set's records are its own when variants are off; `failed`:
    the judge's verdicts on the student's own records, failed_tests)."""
    observations = dict(execution.observations)
    shared = observations.pop(SHARED_CELL, None)
    shared = shared.get("observations") if isinstance(shared, dict) else None
    shared = shared if isinstance(shared, dict) else {}          # forged or malformed: no shared evidence
    if variant is None:              # the student's own inputs are the course-wide ones
        shared = observations
    else:                            # tests whose inputs do not vary were not run again: their own run counts
        shared = {cell_id: shared[cell_id] if varies(cell_id) else own
                  for cell_id, own in observations.items() if not varies(cell_id) or cell_id in shared}
    record = StudentRecord(submission.student, submission.assignment, submission.notebook, variant, observations,
                           shared, student_code(submitted_nb, release) if submitted_nb is not None else "", failed)
    write(target or path(course, submission.assignment, submission.notebook, submission.student), compact(record))


def write(target: pathlib.Path, evidence: Evidence) -> None:
    # Field by field rather than dataclasses.asdict, which deep-copies every record kept only to be encoded here.
    payload = {field.name: getattr(evidence, field.name) for field in dataclasses.fields(evidence)}
    payload["answers"] = [dict(vars(answer)) for answer in evidence.answers]
    payload["variant"] = None if evidence.variant is None else str(evidence.variant)   # JSON loses 64-bit ints
    arrays: list[np.ndarray] = []
    skeleton = codec.dumps(payload, arrays)
    size = len(skeleton) + sum(a.nbytes for a in arrays)
    if size > MAX_EVIDENCE_BYTES:
        raise EvidenceTooLarge(f"{size / 2**20:.0f} MiB of answers, over the {MAX_EVIDENCE_BYTES / 2**20:.0f} MiB kept")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as handle:       # arrays as raw float64 (no base64), no pickles
        np.savez(handle, allow_pickle=False, skeleton=np.frombuffer(skeleton.encode(), dtype=np.uint8),
                 **{f"a{i}": a for i, a in enumerate(arrays)})


def read(path: pathlib.Path) -> Evidence:
    """One student's stored evidence; anything malformed raises (the report skips it with a note)."""
    with np.load(path, allow_pickle=False) as stored:
        arrays = {int(name[1:]): stored[name] for name in stored.files if name != "skeleton"}
        payload = codec.loads(stored["skeleton"].tobytes().decode(), arrays)
    payload["variant"] = None if payload["variant"] is None else int(payload["variant"])
    payload["answers"] = [Answer(**a) for a in payload["answers"]]
    payload.setdefault("key_format", BLAKE2B_KEY_FORMAT)      # written before keys said how they were digested
    evidence = Evidence(**payload)
    if not (isinstance(evidence.code, str) and isinstance(evidence.key_format, str)
            and isinstance(evidence.own_keys, dict) and isinstance(evidence.cut, dict)
            and isinstance(evidence.own_failing, dict) and all(isinstance(k, str) for a in evidence.answers
                                                               for k in a.keys)):
        raise ValueError("malformed evidence")
    return evidence


def load_class(course: Course, assignment: str, notebook: str,
               skipped: list[tuple[str, str, str, str]] | None = None) -> list[Evidence]:
    """Every student's evidence; a file that cannot be read is left out and named in `skipped`."""
    found = []
    for path in sorted(folder(course, assignment, notebook).glob(f"*{SUFFIX}")):
        try:
            found.append(read(path))
        except Exception as exc:  # noqa: BLE001 - a corrupt or hostile file costs its own student only
            if skipped is not None:
                skipped.append((assignment, notebook, path.stem, type(exc).__name__))
    return found


def notebooks_stored(course: Course) -> list[tuple[str, str]]:
    base = course.work / "integrity"
    return sorted((p.parent.name, p.name) for p in base.glob("*/*") if p.is_dir()) if base.exists() else []


def keep_graded(course: Course, submission: Submission, execution: Execution, target: pathlib.Path | None = None, *,
                judged: NotebookResult | None = None) -> None:
    """keep() for an execution just judged: the student's variant and the released notebook it ran, and the verdicts
    of `judged`, the judge's result (the same records are not judged again). By default where the report reads it
    (make grade: the submission is the one that counts); the portal keeps every attempt's at its own `target` and
    copies the counting attempt's to path()."""
    keep(course, submission, execution, variants.student_variant(course, submission.student),
         released(course, submission.assignment, submission.notebook), target, failed=failed_tests(judged))


def keep_reprobed(course: Course, submission: Submission, execution: Execution, probed: list[str],
                  judged: NotebookResult) -> None:
    """The evidence of a notebook whose `probed` tests were judged on answers again (`execution` holds them: new
    answers of the tests whose probes ran again, kept ones of the tests judged again): what compact() makes of each
    test is the test's own, so theirs replace the last run's and every other test's stands (its verdict did not
    move: the caller checks). Answers on the course-wide inputs come from the shared probe set, not run again: a
    varied test keeps the last run's. Raises when the last run's evidence cannot be read or was cut as a whole
    (the caller runs the notebook again)."""
    target = path(course, submission.assignment, submission.notebook, submission.student)
    before = read(target)
    if "*" in before.cut:
        raise ValueError("the last run's evidence was not kept")
    variant = variants.student_variant(course, submission.student)
    release = released(course, submission.assignment, submission.notebook)
    submitted = submitted_notebook(submission.path, settings.load(course).caps) if submission.path else None
    own = {cell_id: record for cell_id, record in execution.observations.items() if cell_id in probed}
    shared = {cell_id: record for cell_id, record in own.items() if variant is None or not varies(cell_id)}
    fresh = compact(StudentRecord(submission.student, submission.assignment, submission.notebook, variant, own, shared,
                                  student_code(submitted, release) if submitted is not None else "",
                                  failed_tests(judged)))
    answers = [a for a in before.answers if a.test not in shared] + fresh.answers
    answers.sort(key=lambda answer: answer.test)           # stable: each test's answers in their order, as compact()

    def merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted({**{k: v for k, v in old.items() if k not in probed}, **new}.items()))

    write(target, dataclasses.replace(fresh, answers=answers, own_keys=merged(before.own_keys, fresh.own_keys),
                                      own_failing=merged(before.own_failing, fresh.own_failing),
                                      cut=merged(before.cut, fresh.cut)))


def failed_tests(judged: NotebookResult | None) -> dict[str, bool] | None:
    """Hidden test id -> failed on the student's own inputs, as the judge's result says; None when there is no
    verdict to take (no result, or a notebook the judge could not grade): the evidence judges the records itself."""
    if judged is None or not judged.graded:
        return None
    return {test.cell_id: not test.passed for test in judged.tests if test.hidden}


def keep(course: Course, submission: Submission, execution: Execution, variant: int | None, release: NotebookNode,
         target: pathlib.Path | None = None, failed: dict[str, bool] | None = None) -> None:
    """save(), never failing grading: integrity evidence is a side product, and its loss is only reported."""
    submitted = None
    try:
        submitted = (submitted_notebook(submission.path, settings.load(course).caps)
                     if submission.path is not None else None)
        save(course, submission, execution, variant, submitted, release, target, failed)
    except Exception as exc:  # noqa: BLE001 - a grade never depends on the integrity report
        why = str(exc) if isinstance(exc, EvidenceTooLarge) else type(exc).__name__    # never student text
        print(f"integrity evidence not kept for {submission.student}: {why}", file=sys.stderr)
        _keep_cut(course, submission, variant, submitted, release, target, why)


def _keep_cut(course: Course, submission: Submission, variant: int | None, submitted_nb: NotebookNode | None,
              release: NotebookNode, target: pathlib.Path | None, why: str) -> None:
    """Evidence whose answers could not be kept still names its student (as cut, with why) and keeps the code, which
    the report compares: the report lists everyone whose evidence was cut, and a copy is still found by its code."""
    try:
        code = student_code(submitted_nb, release) if submitted_nb is not None else ""
        write(target or path(course, submission.assignment, submission.notebook, submission.student),
              Evidence(submission.student, submission.assignment, submission.notebook, variant, code, [], {}, {},
                       cut={"*": f"no answers kept: {why}"}))
    except Exception as exc:  # noqa: BLE001 - the disk itself failing: said, and the report names the student
        print(f"integrity evidence not kept for {submission.student}: {type(exc).__name__}", file=sys.stderr)
