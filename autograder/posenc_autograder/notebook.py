"""What a hidden test cell calls inside the kernel: `hidden_test("cell_id", globals())`.

Keeping the cell to that one line means the autograded notebook and its feedback show neither
the hidden inputs nor the expected values (nbgrader copies a hidden cell's source into both).
"""
from __future__ import annotations

from .checks import REGISTRY


class HiddenTestFailure(AssertionError):
    """A hidden test found problems; the message is written for the student."""


def run_check(cell_id: str, namespace: dict) -> list[str]:
    """Problems found by the check registered under cell_id, run against namespace."""
    check = REGISTRY[cell_id]
    try:
        observations = check.probe(namespace, check.inputs())
    except NameError as exc:
        return [str(exc)]
    return check.judge(observations)


def hidden_test(cell_id: str, namespace: dict) -> None:
    problems = run_check(cell_id, namespace)
    if problems:
        raise HiddenTestFailure("\n".join(f"- {p}" for p in problems))
    print(f"{cell_id}: passed")
