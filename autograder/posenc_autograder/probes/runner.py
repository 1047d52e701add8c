"""What a probe cell calls inside the sandbox: `run("cell_id", globals())`.

The task (per hidden cell: probe module, probe name, inputs) reaches the runner through its
standard input, never a file; the observations leave as a `result` frame on the channel.
"""
from __future__ import annotations

import importlib

from . import channel, guard

TASK: dict = {}          # cell id -> task entry, filled (in place) by shell_runner before any cell runs


def record(entry: dict, namespace: dict) -> dict:
    """Call one probe on the student's namespace: {'observations': ...} or {'missing': why}."""
    guard.restore()                   # the probes' own functions, numpy and builtins, whatever a cell replaced
    probe = getattr(importlib.import_module(f"{__package__}.{entry['module']}"), entry["probe"])
    try:
        return {"observations": probe(namespace, entry["data"])}
    except NameError as exc:
        return {"missing": str(exc)}
    finally:
        guard.restore()


def run(cell_id: str, namespace: dict) -> None:
    channel.send({"result": cell_id, "record": record(TASK[cell_id], namespace)})     # arrays as raw bytes
    print(f"{cell_id}: answers recorded for grading")
