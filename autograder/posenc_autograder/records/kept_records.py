"""What a regrade needs of a graded notebook instead of running it again: compact, bounded, kept beside its result.

Per hidden test, under the digests that decide whether it still holds (grading.regrade.JobDigests):
- its outcome, the judge's problems with the cases passed and judged: enough when only points changed (points weigh an
  outcome, pipeline.judge applies them);
- its answers, the probe's record, when they are small (MAX_ANSWER_BYTES): enough to judge it again when its judge
  changed; a test whose answers were larger runs again with its notebook.
Per notebook, what the judge reads besides the answers: the job's events, the visible checks' failures, its seconds
and the first error of each cell that raised (the cells' sources are the submission's, assembled again by prepare).

It came from the student's run, so it is as untrusted as the notebook: one codec frame within MAX_KEPT_BYTES, read
back by the codec's bounded, linear decoder, validated field by field, and bound to the notebook's result record by
its sha256 (the record names the kept file it was graded with). A cut, edited, oversized or malformed kept file, or one
of another run, is as if nothing were kept: the notebook runs again. It earns nothing by itself: an outcome stands only
for the very run and judge that produced it, and answers are judged again by the trusted side's own judge.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pathlib
from typing import Any, Callable

import nbformat

from posenc_autograder.checks.hidden import HiddenTest, function_verdicts
from posenc_autograder.course import Course, grade_id, write_replacing
from posenc_autograder.grading.execute import Execution, GradingTask
from posenc_autograder.grading.pipeline import Prepared, executed
from posenc_autograder.grading.regrade import JobDigests
from posenc_autograder.grading.shared_probes import SHARED_CELL
from posenc_autograder.probes import codec
from posenc_autograder.records import results_store
from posenc_autograder.results import Problem

SUFFIX = ".kept.frame"
FORMAT = 1
MAX_KEPT_BYTES = 256 * 2**10         # one notebook's kept file (an honest core notebook's: ~50 KiB, small answers in)
MAX_ANSWER_BYTES = 32 * 2**10        # one test's answers kept (framed); larger ones run again when their judge changes
MAX_ERROR_CHARACTERS = 4_000         # an error's name and message as kept (what the notes quote is shorter)
MAX_NODES = 100_000                  # values in a kept file, counted by the decoder before it builds them
MAX_DEPTH = 32
Outcome = tuple[list[Problem], int, int]          # a hidden test's problems, cases passed, cases judged


class MustRun(Exception):
    """What was kept does not decide this notebook: it runs again (the message says why)."""


def path(course: Course, key: tuple[str, str, str]) -> pathlib.Path:
    return results_store.path(course, *key).with_name(f"{key[2]}{SUFFIX}")


def forget(course: Course, key: tuple[str, str, str]) -> None:
    path(course, key).unlink(missing_ok=True)


def verdicts_digest(verdicts: dict[str, Any] | None) -> str | None:
    """What a test that reads the other tests' verdicts (the contracts test) was given."""
    if verdicts is None:
        return None
    plain = sorted((name, dataclasses.astuple(v)) for name, v in verdicts.items())
    return hashlib.sha256(json.dumps(plain).encode()).hexdigest()


def encoded(digests: JobDigests, execution: Execution, judged: dict[str, Outcome],
            tests: list[HiddenTest]) -> bytes | None:
    """The kept file of a finished run just judged (`judged`: each hidden test's outcome, pipeline.judged_tests), or
    None when nothing is kept (a failed run, or over MAX_KEPT_BYTES: the next regrade runs the notebook again)."""
    if execution.failure is not None:
        return None
    verdicts = verdicts_digest(function_verdicts(tests, judged))
    kept_tests = {}
    for test in tests:
        if test.id not in judged or test.id not in digests.tests:
            continue
        problems, passed, total = judged[test.id]
        entry: dict[str, Any] = {"inputs": digests.tests[test.id], "problems": [p.to_json() for p in problems],
                                 "passed": passed, "total": total,
                                 "verdicts": verdicts if test.reads_verdicts else None}
        answers = execution.observations.get(test.id)
        if isinstance(answers, dict) and "observations" in answers:
            try:
                if len(codec.frame(answers)) <= MAX_ANSWER_BYTES:
                    entry["answers"] = answers
            except (TypeError, ValueError):
                pass                                    # not encodable: judged again only by running again
        kept_tests[test.id] = entry
    value = {"format": FORMAT, "run": digests.run, "judge": digests.judge, "inputs": digests.inputs,
             "events": execution.events,
             "cell_errors": execution.cell_errors, "seconds": float(execution.seconds),
             "errors": cell_errors_of(execution.executed_notebook), "tests": kept_tests}
    try:
        data = codec.frame(value)
        if len(data) > MAX_KEPT_BYTES:      # the answers go first: the outcomes alone still re-judge a points change
            for entry in kept_tests.values():
                entry.pop("answers", None)
            data = codec.frame(value)
    except (TypeError, ValueError):
        return None
    return data if len(data) <= MAX_KEPT_BYTES else None


def cell_errors_of(executed_notebook: str | None) -> list[list[Any]]:
    """[cell index, error name, message] of the first error output of each cell that raised: all the judge's readers
    take from a run's outputs (pipeline.answer_cell_errors, own_cell_error_notes)."""
    if not executed_notebook:
        return []
    found: list[list[Any]] = []
    for index, cell in enumerate(executed(executed_notebook).cells):
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is not None:
            found.append([index, _text(error.get("ename")), _text(error.get("evalue"))])
    return found


def _text(value: object) -> str | None:
    return None if value is None else str(value)[:MAX_ERROR_CHARACTERS]


def write(course: Course, key: tuple[str, str, str], data: bytes | None) -> str | None:
    """Put the kept file in place (atomically); returns its sha256 for the result record (None: nothing kept)."""
    target = path(course, key)
    if data is None:
        target.unlink(missing_ok=True)
        return None
    write_replacing(target, data)
    return hashlib.sha256(data).hexdigest()


@dataclasses.dataclass
class Recalled:
    """A kept run, checked against this task: an Execution for the judge (the answers kept of the tests whose judge
    changed, the notebook's cells with each kept error in place), each test's kept outcome where it still holds, the
    tests whose inputs changed since (their probes must run again: to_probe) and every answer kept."""
    execution: Execution
    judge: str
    tests: dict[str, dict[str, Any]]
    sha256: str
    changed: list[str] = dataclasses.field(default_factory=list)
    answers: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)

    def outcome(self, test: HiddenTest, verdicts: dict[str, Any] | None = None) -> Outcome | None:
        """The kept outcome of `test` when its judge and (for the contracts test) the verdicts it reads are the same;
        None when its kept answers are to be judged again; MustRun when neither holds."""
        entry = self.tests.get(test.id)
        if entry is None:
            raise MustRun(f"nothing was kept of {test.id}")
        if entry["judge"] == self.judge and entry["verdicts"] == verdicts_digest(verdicts if test.reads_verdicts
                                                                                  else None):
            return [Problem.from_json(p) for p in entry["problems"]], entry["passed"], entry["total"]
        if test.id in self.execution.observations:
            return None
        raise MustRun(f"the judge of {test.id} changed and its answers were too large to keep")

    def to_probe(self, tests: list[HiddenTest]) -> list[str]:
        """The hidden tests whose probes must run again ([]: what was kept decides the notebook): those whose inputs
        changed, those whose judge changed with no answers kept to judge again, and, when any runs, each test that
        reads the others' verdicts with no answers kept (the verdicts it reads may move). MustRun when some probes
        cannot run apart: something was not kept, or the last run was stopped, interrupted or cut short (where a run
        stops depends on every probe before)."""
        missing = [test.id for test in tests if test.id not in self.tests]
        if missing:
            raise MustRun(f"nothing was kept of {missing[0]}")
        probed = [test.id for test in tests if test.id in self.changed or (
            self.tests[test.id]["judge"] != self.judge and test.id not in self.execution.observations)]
        if not probed:
            return []
        if self.execution.events:
            raise MustRun("its last run was stopped, interrupted or cut short, which a run of only some of its probes "
                          "cannot repeat")
        return sorted({*probed, *(test.id for test in tests if test.reads_verdicts and test.id not in self.answers)})

    def merged(self, execution: Execution, probed: list[str], task: GradingTask, autograded_json: str) -> Execution:
        """What the judge reads of a notebook whose `probed` tests' probes ran again (`execution`, that job's, the task
        reprobe.probing_only made of `task`): their answers from that job, every other test's as kept; the job's
        events, visible checks and seconds; its cells' outputs, but for the probe cells it did not run, which keep the
        outputs of the last run (with_outputs). MustRun when the job failed."""
        if execution.failure is not None or execution.executed_notebook is None:
            raise MustRun("the run of its changed tests' probes failed")
        left = set(task.task_ids) - set(probed)
        nb = with_outputs(task, autograded_json)
        ran = json.loads(execution.executed_notebook)["cells"]
        if len(ran) != len(nb["cells"]):
            raise MustRun("the run of its changed tests' probes is not of its cells")
        for cell, new in zip(nb["cells"], ran, strict=True):
            if cell.get("cell_type") == "code":
                cell["outputs"] = [] if grade_id(cell) == SHARED_CELL else \
                    cell["outputs"] if grade_id(cell) in left else new.get("outputs", [])
        answers = {**{cell_id: a for cell_id, a in self.answers.items() if cell_id not in probed},
                   **{cell_id: a for cell_id, a in execution.observations.items() if cell_id in probed}}
        return dataclasses.replace(
            execution, observations=answers,
            cell_errors={k: e for k, e in execution.cell_errors.items() if k not in left},
            executed_notebook=json.dumps(nb, ensure_ascii=False))

    def outcome_unless(self, probed: list[str], again: set[str]) -> Callable[..., Outcome | None]:
        """outcome(), for judge_all, of the tests not probed again; None for a test to judge on answers (merged's):
        the new ones of a test probed again, the kept ones of a test whose judge or the verdicts it reads changed.
        Each test judged on answers is added to `again`."""
        def kept(test: HiddenTest, verdicts: dict[str, Any] | None = None) -> Outcome | None:
            found = None
            if test.id not in probed:
                try:
                    found = self.outcome(test, verdicts)
                except MustRun:
                    if test.id not in self.answers:
                        raise
            if found is None:
                again.add(test.id)
            return found
        return kept

    @property
    def rejudged(self) -> list[str]:
        """The tests whose kept answers the judge read again (after judging: those it did not take an outcome for)."""
        return sorted(self.execution.observations)


def recall(course: Course, key: tuple[str, str, str], task: GradingTask | Prepared, digests: JobDigests,
           expected_sha256: object) -> Recalled:
    """The kept run of this very job, bound to the result record (`expected_sha256`, the record's "kept"); MustRun
    saying why not."""
    if not isinstance(expected_sha256, str):
        raise MustRun("nothing was kept from its last run")
    try:
        with open(path(course, key), "rb", opener=_no_follow) as handle:
            data = handle.read(MAX_KEPT_BYTES + 1)
    except OSError:
        raise MustRun("its kept record is missing") from None
    if len(data) > MAX_KEPT_BYTES or hashlib.sha256(data).hexdigest() != expected_sha256:
        raise MustRun("its kept record is not the one its result was graded with (cut, edited or replaced)")
    try:
        # Its skeleton parsed whole when it has fewer bytes than the values and lists allowed (an honest one's ~50 KiB:
        # 0.5 ms, against 1.7 ms in 16 KiB pieces): a re-judge is make grade's, where no thread serves a request
        value = codec.decode_frame(data, max_nodes=MAX_NODES, max_depth=MAX_DEPTH, piece=MAX_KEPT_BYTES)
        well_formed(value)
    except (ValueError, TypeError, KeyError) as exc:
        raise MustRun("its kept record is malformed") from exc
    if value["run"] != digests.run:
        raise MustRun("what runs changed (its cells, the probes, the limits or the isolation)")
    if digests.inputs is not None and value.get("inputs") == digests.inputs:
        # made by the same inputs code: each test kept has the inputs it has now (none is built again to be sure)
        changed = sorted(test_id for test_id in digests.tests if test_id not in value["tests"])
    else:
        changed = sorted(test_id for test_id in digests.tests if value["tests"].get(test_id, {}).get("inputs")
                         != digests.tests[test_id])
    tests = {test_id: {**entry, "judge": value["judge"]} for test_id, entry in value["tests"].items()}
    kept = {test_id: entry["answers"] for test_id, entry in value["tests"].items() if "answers" in entry}
    answers = {test_id: found for test_id, found in kept.items()
               if value["judge"] != digests.judge and test_id not in changed}
    return Recalled(Execution(key, answers, value["events"], value["cell_errors"], value["seconds"], None,
                              skeleton(task, value["errors"])),
                    digests.judge, tests, expected_sha256, changed, kept)


def _no_follow(name: str, flags: int) -> int:
    return os.open(name, flags | os.O_NOFOLLOW)


def assembled(task: GradingTask | Prepared) -> nbformat.NotebookNode:
    """The assembled notebook of a task: prepare's own (read only), or a framed task's text parsed."""
    return task.notebook if isinstance(task, Prepared) else nbformat.from_dict(json.loads(task.notebook_json))


def skeleton(task: GradingTask | Prepared, errors: list[list[Any]]) -> str:
    """The notebook as the judge's readers see a run of it: the assembled cells, each kept error as its output (the
    text of a notebook built here: its readers take the notebook itself, pipeline.executed.known)."""
    nb = assembled(task)
    cells = list(nb.cells)
    for index, ename, evalue in errors:
        if 0 <= index < len(cells) and cells[index].get("cell_type") == "code":
            cells[index] = nbformat.NotebookNode({**cells[index], "outputs": [nbformat.NotebookNode(
                output_type="error", ename=ename, evalue=evalue, traceback=[])]})
    return executed.known(nbformat.NotebookNode({**nb, "cells": cells}))


def with_outputs(task: GradingTask | Prepared, autograded_json: str) -> nbformat.NotebookNode:
    """The notebook as a new run would hand it to the autograded notebook's writer (nbgrader_files): the assembled
    cells (their metadata the release's now) with the outputs the last run's autograded notebook kept of each (plain
    text only, which the writer keeps as it is). The cells are the same cells, since the run is the same: one that
    is not (a hand-edited file) runs again. Each cell is a copy: the caller may set its outputs."""
    nb, before = assembled(task), json.loads(autograded_json)
    cells = before.get("cells") if isinstance(before, dict) else None
    same = [c for c in nb.cells if grade_id(c) != SHARED_CELL]
    if not isinstance(cells, list) or len(cells) != len(same):
        raise MustRun("its autograded notebook is not the one of its last run")
    outputs = {}
    for cell, old in zip(same, cells, strict=True):
        if not isinstance(old, dict) or old.get("cell_type") != cell.get("cell_type"):
            raise MustRun("its autograded notebook is not the one of its last run")
        if cell.get("cell_type") == "code":
            kept = old.get("outputs")
            outputs[id(cell)] = kept if isinstance(kept, list) else []
    return nbformat.NotebookNode({**nb, "cells": [
        nbformat.NotebookNode({**cell, "outputs": outputs[id(cell)]} if id(cell) in outputs else {**cell})
        for cell in nb.cells]})


def well_formed(value: object) -> None:
    """Every field of a kept file of its expected type and within its bounds, else ValueError."""
    _check(isinstance(value, dict) and value.get("format") == FORMAT)
    assert isinstance(value, dict)
    _check(isinstance(value.get("run"), str) and isinstance(value.get("judge"), str))
    _check(isinstance(value.get("inputs"), (str, type(None))))      # absent in a record kept before it was kept
    _check(isinstance(value.get("events"), list) and all(isinstance(e, dict) for e in value["events"]))
    _check(isinstance(value.get("cell_errors"), dict)
           and all(isinstance(k, str) and isinstance(e, dict) for k, e in value["cell_errors"].items()))
    _check(isinstance(value.get("seconds"), (int, float)) and not isinstance(value["seconds"], bool))
    _check(isinstance(value.get("errors"), list) and all(
        isinstance(e, list) and len(e) == 3 and type(e[0]) is int and all(isinstance(t, (str, type(None)))
                                                                           for t in e[1:]) for e in value["errors"]))
    tests = value.get("tests")
    _check(isinstance(tests, dict))
    assert isinstance(tests, dict)
    for test_id, entry in tests.items():
        _check(isinstance(test_id, str) and isinstance(entry, dict))
        _check(isinstance(entry.get("inputs"), str) and isinstance(entry.get("verdicts"), (str, type(None))))
        passed, total = entry.get("passed"), entry.get("total")
        _check(type(passed) is int and type(total) is int and 0 <= passed <= total)
        _check(isinstance(entry.get("problems"), list) and all(isinstance(p, dict) and isinstance(p.get("text"), str)
                                                               for p in entry["problems"]))
        for problem in entry["problems"]:
            Problem.from_json(problem)                   # a kind or a call it does not know: ValueError, TypeError
        if "answers" in entry:
            _check(isinstance(entry["answers"], dict) and "observations" in entry["answers"])


def _check(condition: bool) -> None:
    if not condition:
        raise ValueError("a malformed kept record")
