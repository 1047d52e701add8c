"""What a regrade keeps of a run is bounded whatever the notebook sends: answers over the per-test cap are not kept,
a record that would pass the notebook's cap keeps its outcomes only, one still over it is not kept at all; a kept file
that is not well formed is refused field by field (the notebook then runs again)."""
import numpy as np
import pytest

from posenc_autograder.checks import REGISTRY
from posenc_autograder.grading.execute import Execution
from posenc_autograder.grading.regrade import JobDigests
from posenc_autograder.probes import codec
from posenc_autograder.records import kept_records
from posenc_autograder.results import Problem

TESTS = [REGISTRY["hidden_pe_values"], REGISTRY["hidden_pe_shapes"]]
DIGESTS = JobDigests("run", {t.id: f"inputs of {t.id}" for t in TESTS}, "judge")


def kept(answers: dict, problems_text: str = "wrong") -> dict | None:
    execution = Execution(("ann", "a", "n"), answers, [], {}, 1.0)
    judged = {t.id: ([Problem(problems_text)], 0, 3) for t in TESTS}
    data = kept_records.encoded(DIGESTS, execution, judged, TESTS)
    if data is None:
        return None
    assert len(data) <= kept_records.MAX_KEPT_BYTES
    value = codec.decode_frame(data)
    kept_records.well_formed(value)
    return value


def test_small_answers_are_kept_large_ones_are_not_and_the_cap_holds():
    small = {"observations": {"x": np.zeros(10)}}
    large = {"observations": {"x": np.zeros(kept_records.MAX_ANSWER_BYTES // 8 + 1)}}
    value = kept({"hidden_pe_values": small, "hidden_pe_shapes": large})
    assert "answers" in value["tests"]["hidden_pe_values"] and "answers" not in value["tests"]["hidden_pe_shapes"]

    several = {t.id: {"observations": {"x": np.zeros(kept_records.MAX_ANSWER_BYTES // 8 - 64)}} for t in TESTS}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kept_records, "MAX_KEPT_BYTES", kept_records.MAX_ANSWER_BYTES + 2**12)
        value = kept(several)                       # both fit the per-test cap, not the notebook's together
        assert value is not None and all("answers" not in entry for entry in value["tests"].values())
    assert kept({}, "x" * kept_records.MAX_KEPT_BYTES) is None          # outcomes alone over the cap: nothing kept


@pytest.mark.parametrize("forge", [
    lambda v: v.update(format=2),
    lambda v: v["tests"]["hidden_pe_values"].update(passed=4),            # more cases passed than judged
    lambda v: v["tests"]["hidden_pe_values"].update(passed=True),
    lambda v: v["tests"]["hidden_pe_values"]["problems"].append({"text": "x", "kind": "no such kind"}),
    lambda v: v["errors"].append(["0", "NameError", "x"]),
    lambda v: v.update(events={"not": "a list"}),
])
def test_a_malformed_kept_record_is_refused(forge):
    value = kept({})
    forge(value)
    with pytest.raises((ValueError, TypeError)):
        kept_records.well_formed(value)


def _recalled_up_to_its_run(tmp_path, data: bytes) -> str:
    """recall of a kept file written for ann, read as far as its run digest (another run's: MustRun says so)."""
    import hashlib
    import types

    course = types.SimpleNamespace(autograded=tmp_path)
    key = ("ann", "a", "n")
    kept_records.path(course, key).parent.mkdir(parents=True, exist_ok=True)
    kept_records.path(course, key).write_bytes(data)
    with pytest.raises(kept_records.MustRun) as refused:
        kept_records.recall(course, key, None, JobDigests("another run", {}, "judge"), hashlib.sha256(data).hexdigest())
    return str(refused.value)


def test_a_kept_skeleton_is_parsed_whole_within_its_caps_and_counted_first_past_them(tmp_path, monkeypatch):
    """recall parses a kept file's skeleton at once when it has fewer bytes than the values and lists a kept file may
    hold (an honest one's is ~50 KiB, three times as dear in the codec's 16 KiB pieces), and counts a longer one
    first, as the codec counts what the sandbox sends. (The old code cut every skeleton over 16 KiB into pieces.)"""
    within = codec.frame(kept({}, "x" * 20_000))         # two tests: a 40 KiB skeleton
    past = codec.frame(kept({}, "x" * 40_000))
    counted = []
    real = codec.marks
    monkeypatch.setattr(codec, "marks", lambda data, *args: counted.append(len(data)) or real(data, *args))
    assert _recalled_up_to_its_run(tmp_path, within).startswith("what runs changed") and counted == []
    assert _recalled_up_to_its_run(tmp_path, past).startswith("what runs changed") and len(counted) == 1
