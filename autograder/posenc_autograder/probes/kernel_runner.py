"""Execute an assembled notebook inside the sandbox: `python -m <package>.kernel_runner JOB_DIR`.

Runs cell by cell with a per-cell timeout, a whole-notebook deadline and an output cap. A cell
that kills the kernel or runs past its timeout is skipped and the notebook replayed from the start
without it, so one bad cell costs the tests that depend on it and nothing else. What happened is
written to JOB_DIR/execution.json for the trusted side to report.
"""
from __future__ import annotations

import json
import pathlib
import sys
import time

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

MAX_REPLAYS = 3


class LimitedClient(NotebookClient):
    """A notebook client that stops recording a cell's output beyond a byte budget."""

    def __init__(self, nb, max_cell_output_bytes: int, **kwargs):
        super().__init__(nb, **kwargs)
        self.max_cell_output_bytes = max_cell_output_bytes
        self.output_bytes: dict[int, int] = {}
        self.truncated: set[int] = set()

    def output(self, outs, msg, display_id, cell_index):
        size = len(json.dumps(msg.get("content", {}), default=str))
        used = self.output_bytes.get(cell_index, 0) + size
        self.output_bytes[cell_index] = used
        if used > self.max_cell_output_bytes:
            if cell_index not in self.truncated:
                self.truncated.add(cell_index)
                outs.append(nbformat.v4.new_output(
                    "stream", name="stderr", text=f"[output truncated after {self.max_cell_output_bytes} bytes]\n"))
            return None
        return super().output(outs, msg, display_id, cell_index)


def execute(nb, limits: dict, workdir: pathlib.Path) -> list[dict]:
    """Execute nb in place; return the events worth reporting."""
    events: list[dict] = []
    skipped: set[int] = set()
    deadline = time.monotonic() + limits["notebook_seconds"]
    for _ in range(MAX_REPLAYS + 1):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and index not in skipped:
                cell.outputs, cell.execution_count = [], None
        client = LimitedClient(nb, limits["max_cell_output_bytes"], timeout=limits["cell_seconds"],
                               kernel_name="python3", allow_errors=True, interrupt_on_timeout=False,
                               resources={"metadata": {"path": str(workdir)}}, startup_timeout=120)
        interrupted_at = None
        try:
            with client.setup_kernel():
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type != "code" or index in skipped:
                        continue
                    remaining = deadline - time.monotonic()
                    if remaining <= 1:
                        events.append({"event": "notebook_time_limit", "cell": index})
                        return _finish(events, client)
                    client.timeout = max(1, int(min(limits["cell_seconds"], remaining)))
                    try:
                        client.execute_cell(cell, index)
                    except CellTimeoutError:
                        kind = "cell_timeout" if client.timeout >= limits["cell_seconds"] else "notebook_time_limit"
                        events.append({"event": kind, "cell": index, "seconds": client.timeout})
                        if kind == "notebook_time_limit":
                            return _finish(events, client)
                        interrupted_at = index
                        break
                    except DeadKernelError:
                        events.append({"event": "kernel_died", "cell": index})
                        interrupted_at = index
                        break
        except DeadKernelError:
            events.append({"event": "kernel_died", "cell": interrupted_at})
        except Exception as exc:  # noqa: BLE001 - report, never crash the grading run
            events.append({"event": "runner_error", "detail": f"{type(exc).__name__}: {exc}"[:300]})
            return _finish(events, client)
        if interrupted_at is None:
            return _finish(events, client)
        skipped.add(interrupted_at)
        nb.cells[interrupted_at].outputs = [nbformat.v4.new_output(
            "stream", name="stderr", text="[skipped by the grader: this cell stopped the kernel or ran too long]\n")]
    events.append({"event": "too_many_replays"})
    return events


def _finish(events, client):
    events.extend({"event": "output_truncated", "cell": i} for i in sorted(client.truncated))
    return events


def cell_label(nb, index) -> str:
    """How the student can find a cell: its nbgrader id, or its position for cells they added."""
    if index is None or not 0 <= index < len(nb.cells):
        return "a cell"
    grade_id = nb.cells[index].get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return f"cell '{grade_id}'" if grade_id else f"the cell you added at position {index + 1}"


def main(job_dir: str) -> int:
    job = pathlib.Path(job_dir)
    limits = json.loads((job / "limits.json").read_text())
    nb = nbformat.read(job / "notebook.ipynb", as_version=4)
    workdir = job / "work"
    workdir.mkdir(exist_ok=True)
    events = execute(nb, limits, workdir)
    for event in events:
        event["where"] = cell_label(nb, event.get("cell"))
    nbformat.write(nb, job / "executed.ipynb")
    (job / "execution.json").write_text(json.dumps(events))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
