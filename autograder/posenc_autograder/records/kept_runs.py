"""A sandbox job's raw outputs, kept beside the result record so that a regrade re-judges instead of running again.

What decides whether a job must run again is stated once, in `job_digest`: the digest of everything the sandbox side
receives (the cells it runs, the hidden tests' probe inputs, the shipped probes, the limits, the isolation). Points,
judges and diagnoses live on the trusted side only, so changing them leaves the digest as it was: the kept outputs are
judged again, now, against the trusted side's own references, and no job runs. A hidden test's inputs are in the
task frame, so changing them changes the digest and the notebook runs again (the regrade note says which was done).

A kept run was written from what the sandbox sent: it is as untrusted as the notebook. It is kept as one codec frame
(the channel's own bounded, linear decoder reads it back), within MAX_KEPT_RUN_BYTES per notebook, and earns nothing
by itself: only the judge's checks against its references do.
"""
from __future__ import annotations

import hashlib
import json
import pathlib

from posenc_autograder.course import Course
from posenc_autograder.grading.execute import Execution, GradingTask
from posenc_autograder.probes import codec
from posenc_autograder.records import results_store

SUFFIX = ".run.frame"
MAX_KEPT_RUN_BYTES = 32 * 2**20       # one notebook's kept run on disk (an honest core notebook's is ~0.1 MiB)
FIELDS = ("observations", "events", "cell_errors", "seconds", "failure", "executed_notebook")


def job_digest(task: GradingTask) -> str:
    """What the sandbox side is given, without the submission's key: the same digest means the same job."""
    digest = hashlib.sha256()
    cells = [(c.get("cell_type"), c.get("source")) for c in json.loads(task.notebook_json)["cells"]]
    for part in (json.dumps(cells), task.task_frame, json.dumps(task.task_ids), json.dumps(task.probe_files,
                 sort_keys=True), json.dumps(task.limits, sort_keys=True), str(task.isolate)):
        digest.update(part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def path(course: Course, key: tuple[str, str, str]) -> pathlib.Path:
    return results_store.path(course, *key).with_name(f"{key[2]}{SUFFIX}")


def keep(course: Course, key: tuple[str, str, str], digest: str, execution: Execution) -> bool:
    """Keep a finished job's outputs for the next regrade (not a failed job's: that one runs again). False when
    not kept (too large, or not encodable): the next regrade runs the notebook again."""
    target = path(course, key)
    target.unlink(missing_ok=True)
    if execution.failure is not None:
        return False
    try:
        data = codec.frame({"digest": digest, **{name: getattr(execution, name) for name in FIELDS}})
    except (TypeError, ValueError):
        return False
    if len(data) > MAX_KEPT_RUN_BYTES:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    partial.replace(target)
    return True


def recall(course: Course, key: tuple[str, str, str], digest: str) -> Execution | None:
    """The kept outputs of this very job, or None (none kept, another job, or not a well-formed kept run)."""
    source = path(course, key)
    try:
        if source.stat().st_size > MAX_KEPT_RUN_BYTES:
            return None
        value = codec.decode_frame(source.read_bytes())
    except (OSError, ValueError):
        return None
    if not (isinstance(value, dict) and value.get("digest") == digest and _well_formed(value)):
        return None
    return Execution(key, value["observations"], value["events"], value["cell_errors"],
                     float(value["seconds"]), None, value["executed_notebook"])


def _well_formed(value: dict) -> bool:
    return (isinstance(value.get("observations"), dict) and isinstance(value.get("events"), list)
            and all(isinstance(e, dict) for e in value["events"]) and isinstance(value.get("cell_errors"), dict)
            and all(isinstance(e, dict) for e in value["cell_errors"].values())
            and isinstance(value.get("seconds"), (int, float)) and value.get("failure") is None
            and isinstance(value.get("executed_notebook"), (str, type(None))))


def forget(course: Course, key: tuple[str, str, str]) -> None:
    path(course, key).unlink(missing_ok=True)
