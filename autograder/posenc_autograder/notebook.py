"""What a hidden test cell of a solution notebook calls: `hidden_test("cell_id", globals())`.

It runs the hidden test in-process the way `make grade` runs it in the sandbox: the same task
entry and the same probes.runner.record, both ways through the codec, and the same verdict.
Tests and the solution notebooks (under nbval) use it; `make grade` replaces these cells with
probe cells that call probes.runner.run inside the sandbox.
"""
from __future__ import annotations

from posenc_autograder.checks import REGISTRY, hidden_tests, stand_ins_in_process
from posenc_autograder.checks.hidden import judge_all
from posenc_autograder.probes import codec
from posenc_autograder.probes.runner import record
from posenc_autograder.results import Problem


class HiddenTestFailure(AssertionError):
    """A hidden test found problems; the message is written for the student."""


def record_in_process(entry: dict, namespace: dict) -> dict:
    """What the sandbox sends back for one task entry: the entry crosses the codec as the task frame does there
    (decoded with arrays of its own, as shell_runner decodes it), the record as the result frame, and the
    assignments' stand-in modules are found under the names the sandbox gives them."""
    return codec.decode_frame(result_frame_in_process(entry, namespace), writable=False)


def result_frame_in_process(entry: dict, namespace: dict) -> bytes:
    """The result frame record_in_process decodes: the bytes the trusted side reads for the task entry."""
    stand_ins_in_process()
    task = codec.decode_frame(codec.frame(entry))
    return codec.frame(record(task, namespace))


def graded_in_process(assignment: str, namespace: dict) -> dict[str, tuple[list[Problem], int, int]]:
    """(problems, cases passed, cases judged) of every hidden test of the assignment, as `make grade` judges them."""
    tests = hidden_tests(assignment)
    return judge_all(tests, {t.id: record_in_process(t.task_entry(framed=True), namespace) for t in tests})


def run_check(cell_id: str, namespace: dict) -> list[Problem]:
    """Problems found by the hidden test cell_id against the namespace (with the verdicts of the assignment's
    other tests, for a test that reads them)."""
    test = REGISTRY[cell_id]
    if test.reads_verdicts:
        return graded_in_process(test.assignment, namespace)[cell_id][0]
    return test.verdict(record_in_process(test.task_entry(framed=True), namespace))


def hidden_test(cell_id: str, namespace: dict) -> None:
    problems = run_check(cell_id, namespace)
    if problems:
        raise HiddenTestFailure("\n".join(f"- {p}" for p in problems))
    print(f"{cell_id}: passed")
