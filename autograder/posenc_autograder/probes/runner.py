"""What a probe cell calls inside the sandboxed kernel: `run("cell_id", globals())`.

The task file (written by the trusted side) names each cell's probe and carries its inputs.
Observations go to results/<cell_id>.json; the trusted side reads and judges them.
"""
from __future__ import annotations

import importlib
import os
import pathlib

from . import codec

JOB_DIR = pathlib.Path(os.environ.get("POSENC_JOB_DIR", "/job"))


def run(cell_id: str, namespace: dict) -> None:
    task = codec.loads((JOB_DIR / "task.json").read_text())[cell_id]
    module = importlib.import_module(f"{__package__}.{task['module']}")
    probe = getattr(module, task["probe"])
    try:
        observations = {"observations": probe(namespace, task["data"])}
    except NameError as exc:
        observations = {"missing": str(exc)}
    results = JOB_DIR / "results"
    results.mkdir(exist_ok=True)
    (results / f"{cell_id}.json").write_text(codec.dumps(observations))
    print(f"{cell_id}: answers recorded for grading")
