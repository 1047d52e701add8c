"""What a hidden test cell of a solution notebook calls: `hidden_test("cell_id", globals())`.

It runs the hidden test in-process the way `make grade` runs it in the sandbox: the task entry and
the observations go through the same codec, and the same verdict judges them. Tests and the
solution notebooks (under nbval) use it; `make grade` replaces these cells with probe cells.
"""
from __future__ import annotations

import importlib

from . import probes
from .checks import REGISTRY
from .probes import codec


class HiddenTestFailure(AssertionError):
    """A hidden test found problems; the message is written for the student."""


def record_in_process(entry: dict, namespace: dict) -> dict:
    """What probes/runner.py records for one task entry, without a sandbox."""
    probe = getattr(importlib.import_module(f"{probes.__name__}.{entry['module']}"), entry["probe"])
    try:
        return {"observations": probe(namespace, entry["data"])}
    except NameError as exc:
        return {"missing": str(exc)}


def run_check(cell_id: str, namespace: dict) -> list[str]:
    """Problems found by the hidden test cell_id against the namespace (codec round trips on both ways)."""
    test = REGISTRY[cell_id]
    entry = codec.loads(codec.dumps(test.task_entry()))
    return test.verdict(codec.loads(codec.dumps(record_in_process(entry, namespace))))


def hidden_test(cell_id: str, namespace: dict) -> None:
    problems = run_check(cell_id, namespace)
    if problems:
        raise HiddenTestFailure("\n".join(f"- {p}" for p in problems))
    print(f"{cell_id}: passed")
