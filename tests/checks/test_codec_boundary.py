"""Issue 24: data that crossed the sandbox boundary is never mistaken for the codec's own structures, and a
record is counted before any object is built from it."""
import json

import numpy as np
import pytest

from posenc_autograder.grading.execute import decode_record
from posenc_autograder.probes import codec
from posenc_autograder.sandbox.bubblewrap import ChannelReader, Limits, MAX_FRAME_NODES


@pytest.mark.parametrize("data", [{"__ndarray_index__": 999999}, {"__ndarray_float64__": "AAAA", "shape": [9]},
                                  {"__float__": "nan"}, {"~x": 1, "~~y": [2]}, {"__ndarray_index__": {"~": 3}}])
def test_reserved_keys_in_data_come_back_as_data(data):
    assert codec.loads(codec.dumps({"answer": data})) == {"answer": data}
    arrays = []
    stored = codec.dumps({"answer": data, "table": np.ones(2)}, arrays)       # the integrity store's form
    back = codec.loads(stored, dict(enumerate(arrays)))
    assert back["answer"] == data and back["table"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("forged", ['{"__ndarray_index__": 0}', '{"__ndarray_index__": 0, "x": 1}',
                                    '{"__float__": "1e5"}',
                                    '{"__ndarray_float64__": "AAAAAAAA8D8=", "shape": [1], "x": 1}'])
def test_forged_reserved_structures_are_refused(forged):
    with pytest.raises(ValueError):
        codec.loads(forged)


def test_structure_counts_values_and_depth_without_building_them():
    assert codec.structure('{"a": "x\\\\\\"y,[", "b": [1, {"c": [2]}]}') == (7, 4)
    assert codec.structure("[" * 50 + "]" * 50) == (51, 50)


def test_an_amplification_record_is_refused_before_it_is_built():
    record = '{"observations": [' + ",".join(["[]"] * (codec.MAX_NODES + 1)) + "]}"
    with pytest.raises(codec.TooLarge):
        codec.loads(record)
    assert decode_record(record) is None
    assert decode_record('{"observations": ' + "[" * 100 + "]" * 100 + "}") is None
    assert decode_record(codec.dumps({"observations": [[]] * 1000})) == {"observations": [[]] * 1000}


def test_frames_are_counted_before_they_are_parsed():
    reader = ChannelReader(Limits())
    big = json.dumps({"output": 1, "outputs": [{}] * MAX_FRAME_NODES}) + "\n"
    small = json.dumps({"result": "a", "record": "[" * 10_000}) + "\n"        # a record is one string here
    assert reader.feed((big + small).encode()) == [json.loads(small)]
