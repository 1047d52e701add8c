"""What a job sends is bounded before it is built into more: one job's decoded records hold at most
grading.execute.MAX_KEPT_BYTES on the trusted side, counted as they are walked (a record sent again for its cell
takes the place of the one before), and the integrity evidence walks each record within its own bounds. Three 5 MB
result frames once took the grader to 2.4 GiB; a flood of every test to 6.5 GB. Figures before and after:
`python -m posenc_autograder.devtools.bench_floods`."""
import json
import subprocess
import sys

import numpy as np

from posenc_autograder.devtools import bench_floods
from posenc_autograder.grading.execute import TOO_LARGE, Holding, decode_record

PEAK_MIB = 300          # the trusted side's growth for one job, whatever it sends within its channel's caps


def _answers(count: int) -> dict:
    return {"observations": {"flood": [{"value": 0.5} for _ in range(count)]}}


def test_a_job_keeps_no_more_than_its_holding_and_a_record_sent_again_takes_the_place_of_the_one_before():
    holding = Holding(limit=4 * 2**20)
    modest = {"observations": {"table": [{"value": np.zeros(50_000)}], "error": "ValueError: x\nmore"}}
    for _ in range(20):                       # replays resend their records: 20 x 0.4 MB, one kept per cell
        assert decode_record(dict(modest), holding=holding, cell="hidden_a") is not None
    assert decode_record(_answers(100), holding=holding, cell="hidden_b")["observations"]
    flood = decode_record(_answers(200_000), holding=holding, cell="hidden_c")     # ~50 MB as Python objects
    assert flood[TOO_LARGE] is True and "more answers for this test than it keeps" in flood["missing"]
    assert "observations" not in flood
    again = decode_record(_answers(100), holding=holding, cell="hidden_c")         # room was left for the others
    assert again["observations"] and decode_record(dict(modest), holding=holding, cell="hidden_d") is not None


def test_the_trusted_side_stays_under_its_bound_when_a_job_floods_every_test():
    """Every task's record resent as a 5 MB frame of small answers (17 frames, each within every cap), graded from
    prepare to the integrity evidence in a fresh interpreter: its peak memory grows by less than PEAK_MIB (4.3 GiB
    before), and the student's evidence is still kept."""
    done = subprocess.run([sys.executable, bench_floods.__file__, "--one", "all_tests"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["peak_mib"] - figures["start_mib"] < PEAK_MIB, figures
    assert figures["evidence_kib"] is not None and figures["evidence_kib"] < 1024, figures


def test_a_record_claiming_to_be_too_large_is_not_taken_at_its_word():
    """Only this side marks a record too large (its integrity evidence is then cut): a job's record carrying the mark
    itself is kept without it (with it, main's evidence.keep summarised the student's answers as too large)."""
    for forged in ({"missing": "x", TOO_LARGE: True}, {"observations": {"a": [1.0]}, TOO_LARGE: True}):
        assert TOO_LARGE not in decode_record(forged, holding=Holding())
