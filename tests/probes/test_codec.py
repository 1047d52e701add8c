"""The codec that carries inputs into the sandbox and observations out: exact, and strict on what it reads."""
import io
import json
import mmap
import pathlib
import re

import numpy as np
import pytest

from posenc_autograder.probes import codec


def roundtrip(value):
    return codec.loads(codec.dumps(value))


def test_float_arrays_come_back_bit_for_bit_with_their_shape():
    array = np.random.default_rng(0).normal(size=(3, 4, 5)) * 1e300
    array[0, 0, 0], array[1, 2, 3] = np.nextafter(0, 1), -0.0
    back = roundtrip(array)
    assert back.dtype == np.float64 and back.shape == (3, 4, 5)
    assert back.tobytes() == array.tobytes()


def test_non_finite_values_survive_in_arrays_and_as_numbers():
    table = np.array([[1.0, np.inf], [np.nan, -np.inf]])
    back = roundtrip({"table": table, "x": float("nan"), "y": float("-inf")})
    assert np.array_equal(np.isnan(back["table"]), np.isnan(table))
    assert back["table"][0, 1] == np.inf and back["table"][1, 1] == -np.inf
    assert np.isnan(back["x"]) and back["y"] == -np.inf
    assert "NaN" not in codec.dumps(float("nan")), "the JSON must stay standard (no bare NaN)"


def test_integer_and_boolean_arrays_become_float64():
    back = roundtrip({"ints": np.arange(4), "bools": np.array([True, False])})
    assert back["ints"].dtype == np.float64 and list(back["ints"]) == [0.0, 1.0, 2.0, 3.0]
    assert list(back["bools"]) == [1.0, 0.0]


def test_nested_plain_data_keeps_its_structure():
    value = {"a": [1, 2.5, "text", None, True, {"b": np.zeros((0, 3))}], "c": (4, 5)}
    back = roundtrip(value)
    assert back["a"][:5] == [1, 2.5, "text", None, True]
    assert back["a"][5]["b"].shape == (0, 3)
    assert back["c"] == [4, 5]                 # tuples arrive as lists: probes and judges expect that


def test_keys_become_strings():
    assert roundtrip({1: "x"}) == {"1": "x"}


@pytest.mark.parametrize("forged, error", [
    ('{"__ndarray_float64__": "not base64!", "shape": [1]}', ValueError),
    ('{"__ndarray_float64__": "AAAAAAAA8D8=", "shape": [2]}', ValueError),     # 1 value, shape of 2
    ('{"__ndarray_float64__": "AAAAAAAA8D8=", "shape": ["a"]}', ValueError),
    ('{"__float__": "__import__(\'os\')"}', ValueError),
    ('not json', ValueError),
])
def test_forged_payloads_raise_instead_of_decoding(forged, error):
    with pytest.raises(error):
        codec.loads(forged)


def test_objects_that_are_not_plain_data_are_refused():
    with pytest.raises(TypeError):
        codec.dumps({"f": lambda: None})
    with pytest.raises(TypeError):
        codec.dumps(object())


def test_output_is_plain_json():
    text = codec.dumps({"t": np.eye(2), "n": 3})
    assert json.loads(text)["n"] == 3


def test_arrays_kept_aside_round_trip_bit_exactly_without_base64():
    value = {"table": np.linspace(-1, 1, 12).reshape(3, 4) / 3, "runs": [np.array([np.pi]), {"inf": float("inf")}],
             "n": 3, "text": "x"}
    arrays: list = []
    text = codec.dumps(value, arrays)
    assert codec.ARRAY_KEY not in text and len(arrays) == 2
    back = codec.loads(text, dict(enumerate(np.array(a) for a in arrays)))
    assert back["table"].tobytes() == value["table"].tobytes() and back["runs"][0][0] == np.pi
    assert back["runs"][1]["inf"] == float("inf") and back["n"] == 3 and back["text"] == "x"


def test_an_array_met_twice_is_kept_aside_once():
    table = np.arange(6.0).reshape(2, 3)
    arrays: list = []
    back = codec.loads(codec.dumps({"own": table, "shared": table, "other": table.copy()}, arrays),
                       dict(enumerate(arrays)))
    assert len(arrays) == 2 and all(np.array_equal(back[k], table) for k in ("own", "shared", "other"))


def test_a_frame_of_small_answers_is_decoded_without_a_second_copy_of_its_tree():
    """The skeleton's parsed tree is decoded in place: a 1 MB frame of small answers (as a flooding job sends) peaks at
    what its value holds plus the scan's own arrays, not twice the value (a rebuilt copy beside the parsed one)."""
    import struct
    import tracemalloc
    answer = '{"value": 0.5}'
    skeleton = ('[[], {"result": "x", "record": {"flood": [' + ", ".join([answer] * 64_000) + ']}}]').encode()
    reader = codec.FrameReader(32 * 2**20, writable=False)
    tracemalloc.start()
    try:
        [frame] = reader.feed(struct.pack("<IQ", len(skeleton), 0) + skeleton)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(frame["record"]["flood"]) == 64_000 and frame["record"]["flood"][-1] == {"value": 0.5}
    assert peak < 1.6 * held, (held, peak)


class Float(float):
    """A float subclass: read through its base type, never taken as a plain number."""


ROWS = [[0.5, -0.0, float("nan"), float("inf"), -float("inf"), 1e-310, 3, 2**70, True, "x", None],
        (1.0, 2.0), [], [np.float64(0.25), 1.0], [Float(0.5), 2.0], [[1.0, float("nan")], [2.0]]]


def spelled(value) -> str:
    """The value with every number's type and bits (-0.0 and nan told apart from 0.0 and each other)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{k!r}:{spelled(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return type(value).__name__ + "[" + ",".join(map(spelled, value)) + "]"
    return f"{type(value).__name__}({value!r})"


@pytest.mark.parametrize("row", ROWS, ids=range(len(ROWS)))
def test_a_row_of_plain_numbers_is_read_as_each_of_them_is_read_alone(row):
    """A list of plain numbers, strings and None is taken whole rather than item by item (a table returned as a
    list has a million): whatever is encoded, decoded, made plain or made read-only from it is what the items give
    one at a time."""
    from posenc_autograder.checks.hidden import read_only
    from posenc_autograder.probes.helpers import to_plain

    items = list(row)
    assert spelled(codec._encode(row)) == spelled([codec._encode(item) for item in items])
    assert spelled(to_plain(row)) == spelled([to_plain(item) for item in items])
    assert spelled(read_only(row)) == spelled(type(row)(read_only(item) for item in items))
    assert read_only(row) is not row or isinstance(row, tuple)          # a list copied: the judge may change it
    parsed = json.loads(codec.dumps(row))
    assert spelled(codec._decode(parsed)) == spelled([codec._decode(json.loads(codec.dumps(item))) for item in items])


class Pipe(io.BufferedReader):
    """A pipe's read end as the job sees its standard input: the bytes arrive a few at a time."""

    def __init__(self, data: bytes, step: int = 4093):
        class Raw(io.RawIOBase):
            def readable(self):
                return True

            def readinto(self, buffer):
                taken = data[self.at:self.at + min(step, len(buffer))]
                buffer[:len(taken)] = taken
                self.at += len(taken)
                return len(taken)

        raw = Raw()
        raw.at = 0
        super().__init__(raw)


def _memory(array: np.ndarray):
    """The object whose memory the array is a view of."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array.base.obj if isinstance(array.base, memoryview) else array.base


def test_a_task_read_from_its_stream_is_decoded_into_the_buffer_it_was_read_into():
    """The sandbox reads its task into one buffer and decodes it there: the value is decode_frame's, every array a
    writable, 8-byte aligned view of that one buffer (no copy of the arrays' bytes after the read), whatever the
    skeleton's length and the arrays' types."""
    for pad in range(8):
        value = {"pad": "x" * pad, "table": np.arange(12.0).reshape(3, 4), "f4": np.ones(3, np.float32),
                 "rows": [np.full(5, -0.0), np.array([np.nan, np.inf])], "empty": np.zeros((0, 2)), "n": 1}
        data = codec.frame(value)
        back = codec.read_frame(Pipe(data))
        expected = codec.decode_frame(data)
        assert back.keys() == expected.keys() and back["pad"] == expected["pad"] and back["n"] == 1
        arrays = [back["table"], back["f4"], *back["rows"], back["empty"]]
        wanted = [expected["table"], expected["f4"], *expected["rows"], expected["empty"]]
        for got, want in zip(arrays, wanted, strict=True):
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes() and got.flags.writeable
        assert len({id(_memory(a)) for a in arrays}) == 1 and all(a.ctypes.data % 8 == 0 for a in arrays)


def test_reading_a_task_holds_its_bytes_once():
    """An 8 MB task read and decoded peaks at about its own size: its bytes are not copied after the read (read whole,
    then decoded into a writable copy, it peaked at twice that)."""
    import tracemalloc
    data = codec.frame({"table": np.ones((1000, 1000))})
    tracemalloc.start()
    try:
        value = codec.read_frame(Pipe(data, step=1 << 16))
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert value["table"].sum() == 1e6 and peak < 1.25 * len(data), (held, peak)


@pytest.mark.parametrize("cut", ["short", "longer", "no header"])
def test_a_task_stream_that_is_not_exactly_one_frame_is_refused(cut):
    data = codec.frame({"table": np.ones(4)})
    data = {"short": data[:-1], "longer": data + b" ", "no header": data[:5]}[cut]
    with pytest.raises(ValueError):
        codec.read_frame(Pipe(data))


def _mapping_flags(address: int) -> set[str]:
    """The flags (smaps' VmFlags) of this process's mapping that holds the address."""
    holds = False
    for line in pathlib.Path("/proc/self/smaps").read_text().splitlines():
        found = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if found:
            holds = int(found[1], 16) <= address < int(found[2], 16)
        elif holds and line.startswith("VmFlags:"):
            return set(line.split()[1:])
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not pathlib.Path("/sys/kernel/mm/transparent_hugepage").is_dir(), reason="no huge pages here")
def test_a_large_task_is_read_into_private_memory_on_a_huge_page_boundary_advised_for_huge_pages():
    """A task of a quarter of a huge page or more (a job's is ~1.7 MB) is read into memory of its own that the kernel
    may back with huge pages: one page fault where 4 kB pages took one each. A smaller buffer is a bytearray."""
    buffer = codec.frame_buffer(codec.HUGE_PAGE_BYTES // 4)
    flags = _mapping_flags(codec._address(buffer))
    assert codec._address(buffer) % codec.HUGE_PAGE_BYTES == 0 and "hg" in flags and "sh" not in flags, flags
    assert isinstance(codec.frame_buffer(codec.HUGE_PAGE_BYTES // 4 - 1).obj, bytearray)
    table = codec.read_frame(Pipe(codec.frame({"table": np.arange(100_000.0)})))["table"]      # 800 kB
    assert isinstance(_memory(table), mmap.mmap) and "hg" in _mapping_flags(table.ctypes.data)
    assert table.flags.writeable and table.sum() == 4999950000.0
