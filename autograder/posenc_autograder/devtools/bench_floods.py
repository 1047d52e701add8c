"""What a job that floods the trusted side costs it: peak memory and CPU of one notebook graded from prepare to its
integrity evidence, each scenario in a fresh interpreter (its own peak), beside an honest notebook's.

Scenarios: the solved notebook; the same with three of its hidden tests' records resent as ~5 MB frames of small
answers (each within every channel cap); the same with every task's record so resent (17 frames); and a job that
writes to its log (raw stdout) for 25 seconds. Run: `python -m posenc_autograder.devtools.bench_floods` (or the
file itself with PYTHONPATH pointing at another checkout's autograder/, for before and after figures).
"""
from __future__ import annotations

import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

# Each flooding frame within every cap: 32 MiB, 1,000,000 values, 65,536 lists and objects (codec.MAX_CONTAINERS):
# ~30,000 answers of a dict and a list of 30 numbers each, the most Python objects the caps let 5 MB build.
FRAME_BYTES = 5_000_000
ANSWER = '{"value": [' + ", ".join(["0.5"] * 30) + ']}'
THREE = ("hidden_pe_values", "hidden_dot_product", "hidden_encoding_statistics")

# Student code: every result frame the probes send is followed by a forged one for the same cell, full of answers.
FLOOD_CELL = r'''
import os as _os, struct as _struct
_real_writev, _fd = _os.writev, int(_os.environ["POSENC_CHANNEL_FD"])
_TARGETS, _ANSWERS, _SHARED = {targets!r}, {answers!r}, {shared!r}
def _flood(cell):
    answers = "[" + ", ".join([{answer!r}] * _ANSWERS) + "]"
    observations = '{{"flood": ' + answers + '}}'
    if cell == _SHARED:
        observations = '{{"hidden_pe_values": {{"observations": ' + observations + '}}}}'
    skeleton = ('[[], {{"result": "' + cell + '", "record": {{"observations": ' + observations + '}}}}]').encode()
    return _struct.pack("<IQ", len(skeleton), 0) + skeleton
def _writev(fd, parts):
    head = bytes(parts[0][:400])
    cell = next((c for c in _TARGETS if fd == _fd and ('"result": "' + c + '"').encode() in head), None)
    if cell is None:
        return _real_writev(fd, parts)
    data = b"".join(bytes(p) for p in parts) + _flood(cell)
    while data:
        data = data[_os.write(fd, data):]
    return sum(len(p) for p in parts)
_os.writev = _writev
'''

LOG_FLOOD_CELL = r'''
import os, time
_chunk, _until = b"x" * (1 << 16), time.monotonic() + {seconds}
while time.monotonic() < _until:
    os.write(1, _chunk)
'''


def _course(root: pathlib.Path, tmp: pathlib.Path):
    for folder in ("solutions", "exercises"):
        shutil.copytree(root / folder, tmp / folder)
    (tmp / "autograder").mkdir()
    shutil.copy(root / "autograder" / "nbgrader_config.py", tmp / "autograder")
    shutil.copy(root / "nbgrader_config.py", tmp)
    from posenc_autograder.course import Course
    return Course(tmp)


def _notebook(root: pathlib.Path, extra: str | None):
    import nbformat

    from posenc_autograder.devtools import bench
    nb = bench.solved(root)
    if extra:
        index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "imports")
        nb.cells.insert(index + 1, nbformat.v4.new_code_cell(extra))
    return nb


def scenario_source(name: str) -> tuple[str | None, dict]:
    from posenc_autograder.checks import REGISTRY
    from posenc_autograder.grading.shared_probes import SHARED_CELL
    answers = FRAME_BYTES // (len(ANSWER) + 2)
    if name == "honest":
        return None, {}
    if name == "three_frames":
        return FLOOD_CELL.format(targets=list(THREE), answers=answers, shared=SHARED_CELL, answer=ANSWER), {}
    if name == "all_tests":
        targets = [c for c, t in REGISTRY.items() if t.assignment == "positional_encoding"] + [SHARED_CELL]
        return FLOOD_CELL.format(targets=targets, answers=answers, shared=SHARED_CELL, answer=ANSWER), {}
    if name == "log_flood":
        return LOG_FLOOD_CELL.format(seconds=25), {"cell_seconds": 40, "notebook_seconds": 60}
    raise ValueError(name)


def run_one(name: str) -> dict:
    """In this (fresh) interpreter: grade the scenario's notebook once; its peak memory and CPU."""
    import nbformat

    import posenc_autograder
    from posenc_autograder.grading import pipeline
    from posenc_autograder.grading.execute import execute_task
    from posenc_autograder.intake.submissions import discover
    from posenc_autograder.records import evidence
    from posenc_autograder.settings import Limits

    root = pathlib.Path(posenc_autograder.__file__).resolve().parents[2]
    source, limits = scenario_source(name)
    with tempfile.TemporaryDirectory(prefix="posenc-floods-") as tmp:
        course = _course(root, pathlib.Path(tmp))
        folder = course.submitted / "flooder" / "positional_encoding"
        folder.mkdir(parents=True)
        nbformat.write(_notebook(root, source), folder / "positional_encoding.ipynb")
        limits = Limits(**{"cell_seconds": 20, "notebook_seconds": 90, **limits})
        [sub] = discover(course)
        warm_up = pipeline.prepare(course, sub, limits, isolate=True)      # the zygote started, imports done
        del warm_up
        before_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        usage, wall = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
        execution = execute_task(pipeline.prepare(course, sub, limits, isolate=True))
        result = pipeline.judge(course, sub, execution, limits)
        evidence.keep_graded(course, sub, execution, judged=result)
        after = resource.getrusage(resource.RUSAGE_SELF)
        kept = evidence.path(course, "positional_encoding", "positional_encoding", "flooder")
        return {"scenario": name, "score": result.score, "peak_mib": after.ru_maxrss / 1024,
                "start_mib": before_rss / 1024, "grader_cpu_s": after.ru_utime + after.ru_stime
                - usage.ru_utime - usage.ru_stime, "wall_s": time.monotonic() - wall,
                "evidence_kib": kept.stat().st_size / 1024 if kept.exists() else None}


def main(names=("honest", "three_frames", "all_tests", "log_flood")) -> None:
    for name in names:
        done = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
        if done.returncode:
            print(f"{name}: failed\n{done.stderr[-3000:]}")
            continue
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{name:>13}: score {figures['score']:5.1f}  peak {figures['peak_mib']:7.0f} MiB "
              f"(at start {figures['start_mib']:4.0f})  grader CPU {figures['grader_cpu_s']:6.2f} s  "
              f"wall {figures['wall_s']:5.1f} s  evidence {figures['evidence_kib']} KiB", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(run_one(sys.argv[2])))
    else:
        main(tuple(sys.argv[1:]) or ("honest", "three_frames", "all_tests", "log_flood"))
