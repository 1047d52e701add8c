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
