"""The boundaries where student data enters trusted code, unit by unit.

Fast: no sandbox is started. The end-to-end attacks are in test_attacks.py.
"""
import json
import os
import pathlib

import pytest

from posenc_autograder.grading.execute import code_only, decode_record, short_message
from posenc_autograder.intake.submissions import UnreadableNotebook, read_notebook, sha256
from posenc_autograder.probes import codec
from posenc_autograder.sandbox.channel_reader import ChannelReader, sanitise_outputs
from posenc_autograder.settings import Limits

GOOD_CELL = {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "a", "solution": True, "grade": False}},
             "source": ["x = ", "1"], "outputs": [], "execution_count": None, "id": "c1"}


def notebook(**changes):
    return {"cells": [GOOD_CELL], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **changes}


@pytest.fixture
def write(tmp_path):
    def make(content, name="nb.ipynb"):
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
        return path
    return make


def test_a_plain_notebook_is_read_and_normalised(write):
    nb = read_notebook(write(notebook()))
    assert nb.cells[0].source == "x = 1"
    assert nb.cells[0].metadata["nbgrader"] == {"grade_id": "a", "solution": True, "grade": False}


@pytest.mark.parametrize("content, words", [
    (b"{not json", "not valid notebook JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "nests JSON deeper"),
    ([1, 2], "not a Jupyter notebook"),
    (notebook(cells={"a": 1}), "not a Jupyter notebook"),
    (notebook(nbformat=3), "not 4"),
    (notebook(cells=[GOOD_CELL] * 2_001), "more than the 2000 accepted"),
])
def test_unreadable_notebooks_say_why(write, content, words):
    with pytest.raises(UnreadableNotebook, match=words):
        read_notebook(write(content))


def test_oddly_typed_fields_are_dropped_not_trusted(write):
    odd = [{**GOOD_CELL, "metadata": {"nbgrader": "solution"}},
           {**GOOD_CELL, "metadata": {"nbgrader": {"grade_id": ["x"], "points": "9", "grade": "yes"}}},
           {**GOOD_CELL, "source": [1, {"a": "b"}, "kept"]}, {**GOOD_CELL, "id": {"x": 1}},
           {"cell_type": "weird"}, "not a cell", {**GOOD_CELL, "metadata": ["x"]}]
    nb = read_notebook(write(notebook(cells=odd)))
    assert len(nb.cells) == 5
    assert "nbgrader" not in nb.cells[0].metadata
    assert nb.cells[1].metadata["nbgrader"] == {}
    assert nb.cells[2].source == "kept"
    assert nb.cells[3].get("id") != {"x": 1}


def test_links_fifos_and_oversized_files_are_refused_before_reading(tmp_path, write):
    target = write(notebook())
    (tmp_path / "link.ipynb").symlink_to(target)
    os.mkfifo(tmp_path / "fifo.ipynb")
    with open(tmp_path / "sparse.ipynb", "wb") as out:
        out.truncate(3 * 2**30)
    for name, words in (("link", "symbolic link"), ("fifo", "not a regular file"), ("sparse", "more than")):
        with pytest.raises(UnreadableNotebook, match=words):
            read_notebook(tmp_path / f"{name}.ipynb")
        assert sha256(tmp_path / f"{name}.ipynb") is None      # hashing refuses too, without reading


def test_channel_reader_keeps_frames_and_drops_what_is_malformed_or_too_long():
    reader = ChannelReader(Limits(max_frame_bytes=100, channel_bytes=10_000))

    def raw(skeleton: bytes) -> bytes:
        return codec.HEADER.pack(len(skeleton), 0) + skeleton

    data = (codec.frame({"cell": 1}) + raw(b"[" * 50) + raw(b"\xff\xfe") + codec.frame("text")
            + codec.frame({"cell": int("9" * 500)}) + codec.frame({"done": True}))
    frames = [f for chunk in (data[:7], data[7:300], data[300:]) for f in reader.feed(chunk)]
    assert frames == [{"cell": 1}, {"done": True}]
    reader.feed(b"x" * 20_000)
    assert reader.over_budget


def test_outputs_keep_plain_text_only():
    frame = {"outputs": [{"output_type": "display_data", "data": {"text/html": "<script>x</script>"}},
                         {"output_type": "stream", "name": "stdout", "text": "ok\x1b[31m\x00\udcff"},
                         {"output_type": "stream", "name": "/etc/passwd", "text": "x"},
                         {"output_type": "error", "ename": ["x"], "evalue": "E" * 5000},
                         "junk"], "truncated": "yes"}
    clean = sanitise_outputs(frame, limit=100)
    assert clean["truncated"] is False
    assert [o["output_type"] for o in clean["outputs"]] == ["stream", "error"]
    assert clean["outputs"][0]["text"] == "ok[31m?"
    assert clean["outputs"][1]["ename"] == "" and len(clean["outputs"][1]["evalue"]) == 1000
    json.dumps(clean).encode("utf-8")                     # always storable


def test_messages_are_one_short_line_and_never_quote_the_grader():
    grader = "def probe_table(ns, data):\n    return attempt(fn, data['seq_len'], data['d_model'])\n"
    assert short_message("ValueError: bad\nsecond line") == "ValueError: bad"
    assert len(short_message("x" * 10_000)) == 200
    assert "withheld" in short_message("return attempt(fn, data['seq_len'], data['d_model'])", grader)
    assert short_message("d_model must be even", grader) == "d_model must be even"


def test_the_probes_own_messages_pass_but_their_code_does_not():
    grader = code_only('def describe_the_exception(exc, limit):\n'
                       '    return "NotImplementedError: the function is still the template stub"  # a comment here\n')
    assert short_message("NotImplementedError: the function is still the template stub", grader).endswith("stub")
    assert "withheld" in short_message("leak: def describe_the_exception(exc, limit):", grader)
    assert "withheld" not in short_message("def describe(x): is mine, # a comment here", grader)


def test_a_comment_with_an_apostrophe_does_not_turn_the_probes_messages_into_code():
    """probes/helpers.py as shipped: a comment's "a student's" comes before the lookup stand-in. Its own sentence to
    the student ("the grader's stand-in has no answer for 3/8/1", when shaw_output called relative_position_index
    with its lengths swapped) was withheld as quoting the grader's code (fails on the old code); the code around it
    is still the grader's, and withheld."""
    import posenc_autograder.probes.helpers as shipped
    grader = code_only(pathlib.Path(shipped.__file__).read_text())
    said = "LookupError: the grader's stand-in has no answer for 3/8/1"
    assert short_message(said, grader) == said
    assert "withheld" in short_message("key = lookup_key([bound.get(name) for name in names])", grader)
    assert "withheld" in short_message("return np.array(values[key], dtype=np.float64)", grader)
    assert code_only("x = (\n") == "x = (\n"           # what does not tokenize is all code


def test_results_are_decoded_defensively_and_errors_sanitised():
    good = {"observations": {"value": 1.0, "error": "E\nsecret"}}
    results = {"a": good, "b": [[]] * 10, "c": {}, "d": {"missing": 5}, "e": "not a record"}
    decoded = {k: decode_record(record) for k, record in results.items()}
    assert {k for k, v in decoded.items() if v is not None} == {"a"}
    assert decoded["a"] == {"observations": {"value": 1.0, "error": "E"}}
