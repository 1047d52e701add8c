"""Data that crossed the sandbox boundary is never mistaken for the codec's own structures, and a frame is
counted and its shapes checked before any object is built from it."""
import struct
import tracemalloc

import numpy as np
import pytest

from posenc_autograder.grading.execute import decode_record
from posenc_autograder.probes import codec
from posenc_autograder.sandbox.channel_reader import ChannelReader
from posenc_autograder.settings import Limits


def raw_frame(skeleton: bytes, arrays: bytes = b"") -> bytes:
    """A frame as student code could write it by hand."""
    return codec.HEADER.pack(len(skeleton), len(arrays)) + skeleton + arrays


def read(*chunks: bytes, limit: int = Limits().max_frame_bytes) -> list:
    reader = codec.FrameReader(limit)
    return [f for chunk in chunks for f in reader.feed(chunk)]


@pytest.mark.parametrize("data", [{"__ndarray_index__": 999999}, {"__ndarray_float64__": "AAAA", "shape": [9]},
                                  {"__float__": "nan"}, {"~x": 1, "~~y": [2]}, {"__ndarray_index__": {"~": 3}}])
def test_reserved_keys_in_data_come_back_as_data(data):
    assert codec.loads(codec.dumps({"answer": data})) == {"answer": data}
    arrays = []
    stored = codec.dumps({"answer": data, "table": np.ones(2)}, arrays)       # the integrity store's form
    back = codec.loads(stored, dict(enumerate(arrays)))
    assert back["answer"] == data and back["table"].tolist() == [1.0, 1.0]
    on_the_wire = codec.decode_frame(codec.frame({"answer": data, "table": np.ones(2)}))     # the channel's form
    assert on_the_wire["answer"] == data and on_the_wire["table"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("forged", ['{"__ndarray_index__": 0}', '{"__ndarray_index__": 0, "x": 1}',
                                    '{"__float__": "1e5"}',
                                    '{"__ndarray_float64__": "AAAAAAAA8D8=", "shape": [1], "x": 1}'])
def test_forged_reserved_structures_are_refused(forged):
    with pytest.raises(ValueError):
        codec.loads(forged)


@pytest.mark.parametrize("skeleton, arrays", [
    (b'[[], {"__ndarray_index__": 0}]', b""),                                  # no such array
    (b'[[[1]], {"__ndarray_index__": -1}]', b"\0" * 8),                        # negative index
    (b'[[[1]], {"__ndarray_index__": 1}]', b"\0" * 8),                         # past the table
    (b'[[], {"__ndarray_float64__": "AAAAAAAA8D8=", "shape": [1]}]', b""),      # base64: not on the wire
    (b'[[[1000000000]], 1]', b"\0" * 8),                                       # a shape the bytes do not hold
    (b'[[[2]], 1]', b"\0" * 24),                                               # bytes the shapes do not use
    (b'[[[-1, -8]], 1]', b"\0" * 8),                                           # negative dimensions
    (b'[[[1.5]], 1]', b"\0" * 8), (b'[[["1"]], 1]', b"\0" * 8), (b'[[true], 1]', b"\0" * 8),
    (b"[[" + b"[1]," * 33 + b"[1]], 1]", b"\0" * 8 * 33),                      # 34 arrays, wrong byte count
    (b'[[[' + b"1," * 32 + b'1]], 1]', b"\0" * 8),                             # 33 dimensions
    (b'{"not": "a skeleton"}', b""), (b'[[]]', b""), (b"\xff\xfe", b""), (b"[" * 100 + b"]" * 100, b""),
])
def test_forged_frames_are_refused(skeleton, arrays):
    assert read(raw_frame(skeleton, arrays)) == [codec.REFUSED]
    with pytest.raises(ValueError):
        codec.decode_frame(raw_frame(skeleton, arrays))


def test_a_frame_announcing_more_than_the_cap_is_skipped_without_being_kept():
    big = codec.HEADER.pack(100, 2**40)
    follow = codec.frame({"done": True})
    reader = codec.FrameReader(1000)
    tracemalloc.start()
    try:
        assert reader.feed(big) == [codec.REFUSED]
        assert reader.feed(b"\0" * 2**20) == [] and reader.pending == reader.skipping  # counted down, never kept
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20 + 2**16
    reader.skipping = 0                                                             # as if the rest had come
    assert reader.feed(follow) == [{"done": True}]
    assert read(struct.pack("<IQ", 2**32 - 1, 0)) == [codec.REFUSED]                # skeleton over its own cap


def test_frames_split_anywhere_come_back_whole_and_arrays_writable():
    value = {"result": "a", "record": {"observations": {"t": np.linspace(0, 1, 7).reshape(7, 1), "e": np.zeros(0)}}}
    data = codec.frame(value) + codec.frame({"done": True})
    for cut in (1, 5, 12, 13, len(data) - 1):
        first, second = read(data[:cut], data[cut:])
        table = first["record"]["observations"]["t"]
        assert table.tobytes() == value["record"]["observations"]["t"].tobytes() and table.flags.writeable
        assert second == {"done": True}


def test_structure_counts_values_and_depth_without_building_them():
    assert codec.structure('{"a": "x\\\\\\"y,[", "b": [1, {"c": [2]}]}') == (7, 4)
    assert codec.structure("[" * 50 + "]" * 50) == (51, 50)


def test_an_amplification_record_is_refused_before_it_is_built():
    record = b'{"observations": [' + b",".join([b"[]"] * (codec.MAX_NODES + 1)) + b"]}"
    with pytest.raises(codec.TooLarge):
        codec.loads(record.decode())
    assert read(raw_frame(b'[[], {"result": "a", "record": ' + record + b"}]")) == [codec.REFUSED]
    assert read(raw_frame(b'[[], {"record": ' + b"[" * 100 + b"]" * 100 + b"}]")) == [codec.REFUSED]
    assert decode_record({"observations": [[]] * 1000}) == {"observations": [[]] * 1000}


def test_the_channel_reader_yields_frames_and_drops_what_is_refused():
    reader = ChannelReader(Limits())
    frames = reader.feed(raw_frame(b"[" * 10_000) + codec.frame({"result": "a", "record": {"missing": "x"}})
                         + raw_frame(b'[[], "text"]'))
    assert frames == [{"result": "a", "record": {"missing": "x"}}]


def _random_json(rng, depth=0):
    """A small random JSON value whose strings hold the scanner's hard cases: brackets, commas, colons, escapes."""
    pick = rng.random()
    if depth > 3 or pick < 0.3:
        return rng.choice([1, -2.5, 1e300, "a,b]:", 'q"\\', "é{", True, None, "x" * rng.randint(0, 40)])
    if pick < 0.65:
        return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 10))]
    return {rng.choice(["k", "a,", "}", "é:", ""]) + str(rng.randint(0, 40)): _random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 10))}


def test_loads_in_pieces_reads_what_json_reads_and_refuses_what_it_refuses():
    """Valid texts and texts with one byte changed (a bracket, comma, quote, colon or backslash put in, or one taken
    out), cut into pieces as small as two bytes: the same value, or ValueError both ways."""
    import json
    import random
    rng = random.Random(46)
    for _ in range(150):
        text = json.dumps(_random_json(rng), ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1])).encode()
        if rng.random() < 0.5:
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice([b",", b"]", b"}", b"[", b'"', b"\\", b" ", b":", b""]) + text[at + 1:]
        try:
            expected = json.loads(text)
        except ValueError:
            with pytest.raises(ValueError):
                codec.loads_in_pieces(text, piece=rng.choice([2, 7, 64]))
        else:
            assert codec.loads_in_pieces(text, piece=rng.choice([2, 7, 64])) == expected


HOSTILE_SKELETONS = {      # ~0.5 MiB each (32 pieces), every kind that json.loads is slowest on per byte
    "floats": b"[[], [" + b",".join([b"1.2345678901234567"] * 30_000) + b"]]",
    "an object of many keys": b"[[], {" + b",".join(b'"k%09d":1' % i for i in range(40_000)) + b"}]",
    "small nested lists": b"[[], [" + b",".join([b"[[[1]]]"] * 20_000) + b"]]",       # within MAX_CONTAINERS
    "lists inside long lists": b"[[], [" + b",".join([b"[" + b"0," * 20_000 + b"0]"] * 6) + b"]]",
}


@pytest.mark.parametrize("skeleton", HOSTILE_SKELETONS.values(), ids=HOSTILE_SKELETONS)
def test_a_long_skeleton_is_parsed_a_piece_at_a_time(monkeypatch, skeleton):
    """A frame's skeleton is never given to json.loads whole: at most about two pieces of it at once, so the thread
    decoding it lets the others run between pieces (one json.loads of a 16 MiB skeleton held them 0.6-3.7 s:
    devtools/bench_frame_stalls.py). The frame decodes to what json.loads gives."""
    import json
    longest = []

    def loads(text, *args, **kwargs):
        longest.append(len(text))
        return json.loads(text, *args, **kwargs)
    monkeypatch.setattr(codec, "json", type("Recorder", (), {"loads": staticmethod(loads), "dumps": json.dumps}))
    padded = skeleton + b" " * (-len(skeleton) % 8)
    frames = codec.FrameReader(2 * len(skeleton), writable=False).feed(raw_frame(padded))
    assert len(frames) == 1 and frames[0] == json.loads(skeleton)[1]
    assert max(longest) <= 2 * codec.PIECE_BYTES + 2


def test_a_skeleton_of_more_lists_than_the_cap_is_refused_before_anything_is_built(monkeypatch):
    """1.5 MiB of small nested lists would be 600,000 lists that Python's collector walks, and frees, holding the
    interpreter: past MAX_CONTAINERS the frame is refused while its marks are counted, json.loads never called."""
    import json
    called = []
    monkeypatch.setattr(codec, "json", type("Recorder", (), {"loads": staticmethod(lambda *a, **k: called.append(1)),
                                                            "dumps": json.dumps}))
    items = codec.MAX_CONTAINERS // 3 + 1
    skeleton = b"[[], [" + b",".join([b"[[[1]]]"] * items) + b"]]"
    padded = skeleton + b" " * (-len(skeleton) % 8)
    reader = codec.FrameReader(2 * len(padded), writable=False)
    assert reader.feed(raw_frame(padded)) == [codec.REFUSED] and reader.refusal == codec.TOO_LARGE
    assert not called
    monkeypatch.undo()
    fits = b"[[], [" + b",".join([b"[[[1]]]"] * (items - 2)) + b"]]"
    fits += b" " * (-len(fits) % 8)
    assert len(codec.FrameReader(2 * len(fits), writable=False).feed(raw_frame(fits))[0]) == items - 2
