"""Run an assembled notebook's code cells in an IPython shell: `python -m <package>.shell_runner JOB_DIR`.

Runs inside the sandbox. It records which cell it is in (progress), each cell's output (capped),
and nothing else; the trusted supervisor outside enforces the time limits by watching the progress
file and killing the process, then replays the notebook without the offending cell. No Jupyter
kernel or client is started: the shell runs in this process, which keeps a job's start-up cost to
a fraction of a second.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import pathlib
import sys

from IPython.core.interactiveshell import InteractiveShell


class CappedText(io.TextIOBase):
    """A text stream that keeps at most `limit` characters and remembers whether it dropped any."""

    def __init__(self, limit: int):
        self.limit, self.parts, self.size, self.truncated = limit, [], 0, False

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        room = self.limit - self.size
        if len(text) > room:
            self.truncated = True
            text = text[:max(room, 0)]
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def getvalue(self):
        return "".join(self.parts)


def _outputs(stdout: CappedText, stderr: CappedText, result) -> dict:
    outputs = [{"output_type": "stream", "name": name, "text": stream.getvalue()}
               for name, stream in (("stdout", stdout), ("stderr", stderr)) if stream.getvalue()]
    error = result.error_in_exec or result.error_before_exec
    if error is not None:
        outputs.append({"output_type": "error", "ename": type(error).__name__, "evalue": str(error)[:1000],
                        "traceback": []})
    return {"outputs": outputs, "truncated": stdout.truncated or stderr.truncated}


def main(job_dir: str) -> None:
    job = pathlib.Path(job_dir)
    cells = json.loads((job / "notebook.ipynb").read_text())["cells"]
    limits = json.loads((job / "limits.json").read_text())
    skip = set(json.loads((job / "skip.json").read_text()))
    (job / "outputs").mkdir(exist_ok=True)
    os.chdir(job / "work")
    shell = InteractiveShell.instance()
    progress = open(job / "progress", "a", buffering=1)
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code" or index in skip:
            continue
        progress.write(f"{index}\n")
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        stdout, stderr = CappedText(limits["max_cell_output_bytes"]), CappedText(limits["max_cell_output_bytes"])
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            result = shell.run_cell(source, store_history=True)
        (job / "outputs" / f"{index}.json").write_text(json.dumps(_outputs(stdout, stderr, result)))
    progress.write("done\n")
    progress.flush()
    os._exit(0)   # do not wait for threads the student may have left running


if __name__ == "__main__":
    main(sys.argv[1])
