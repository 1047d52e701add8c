"""A run of only some tests' probes is merged with the kept record on the trusted side's terms: the answers of a test
not probed again are the kept ones even when the job sends others (a forged result), the probe cells the job did not
run keep the last run's outputs, what a message may not quote is the whole task's text, and a last run with any event
(stopped, interrupted, cut short) is not re-probed but run whole; the job itself runs no probe cell it was not asked
for."""
import json

import pytest

from posenc_autograder.checks import REGISTRY
from posenc_autograder.grading.execute import Execution, GradingTask, grader_quotable
from posenc_autograder.grading.reprobe import probing_only
from posenc_autograder.probes import codec
from posenc_autograder.records import kept_records

VALUES, SHAPES, CONTRACTS = "hidden_pe_values", "hidden_pe_shapes", "hidden_contracts"
TESTS = [REGISTRY[VALUES], REGISTRY[SHAPES], REGISTRY[CONTRACTS]]


def cell(source, cell_id=None, outputs=()):
    meta = {"nbgrader": {"grade_id": cell_id, "grade": True}} if cell_id else {}
    return {"cell_type": "code", "source": source, "metadata": meta, "outputs": list(outputs), "execution_count": None}


def said(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def task():
    cells = [cell("def f(): pass"), *(cell(f"# {t.id}\n_posenc_probe({t.id!r}, globals())", t.id) for t in TESTS)]
    return GradingTask(("ann", "a", "n"), json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                      "nbformat_minor": 5}),
                       codec.frame({t.id: t.task_entry(None, framed=True) for t in TESTS}), [t.id for t in TESTS],
                       {"runner.py": "def run(cell_id, namespace): ..."}, {}, False)


def recalled(events=(), answers=None):
    entries = {t.id: {"inputs": "old", "problems": [], "passed": 1, "total": 1, "verdicts": None, "judge": "j"}
               for t in TESTS}
    kept = answers if answers is not None else {SHAPES: {"observations": {"kept": 1}},
                                                CONTRACTS: {"observations": {"kept": 2}}}
    return kept_records.Recalled(Execution(("ann", "a", "n"), {}, list(events), {}, 1.0), "j", entries, "sha",
                                 [VALUES], kept)


def test_only_the_asked_probes_run_and_the_others_stay_as_kept():
    full = task()
    partial = probing_only(full, [VALUES], None)
    assert partial.task_ids == [VALUES]
    sources = [c["source"] for c in json.loads(partial.notebook_json)["cells"]]
    assert sources[0] == "def f(): pass" and VALUES in sources[1] and sources[2:] == ["", ""]
    assert codec.decode_frame(partial.task_frame).keys() == {VALUES}
    assert grader_quotable(partial) == grader_quotable(full)     # a message quotes no more of the task than in full

    last = {"cells": [cell(c["source"], None, [said(f"last run, cell {i}\n")])
                      for i, c in enumerate(json.loads(full.notebook_json)["cells"])]}
    ran = json.loads(partial.notebook_json)
    for index, c in enumerate(ran["cells"]):
        c["outputs"] = [said(f"new run, cell {index}\n")]
    forged = {VALUES: {"observations": {"new": 1}}, SHAPES: {"observations": {"forged": 1}}}
    execution = Execution(full.key, forged, [], {}, 0.5, None, json.dumps(ran))
    merged = recalled().merged(execution, [VALUES], full, json.dumps(last))
    assert merged.observations == {VALUES: {"observations": {"new": 1}}, SHAPES: {"observations": {"kept": 1}},
                                   CONTRACTS: {"observations": {"kept": 2}}}
    outputs = [c["outputs"][0]["text"] for c in json.loads(merged.executed_notebook)["cells"]]
    assert outputs == ["new run, cell 0\n", "new run, cell 1\n", "last run, cell 2\n", "last run, cell 3\n"]


def test_what_is_probed_again_and_when_the_whole_notebook_runs():
    assert recalled().to_probe(TESTS) == [VALUES]                  # the contracts test's answers were kept
    assert recalled(answers={}).to_probe(TESTS) == [CONTRACTS, VALUES]
    with pytest.raises(kept_records.MustRun, match="stopped, interrupted or cut short"):
        recalled(events=[{"event": "cell_timeout", "cell": 0, "stopped": False}]).to_probe(TESTS)
    with pytest.raises(kept_records.MustRun, match="failed"):
        recalled().merged(Execution(("ann", "a", "n"), {}, [], {}, 0.1, "the job failed"), [VALUES], task(), "{}")
