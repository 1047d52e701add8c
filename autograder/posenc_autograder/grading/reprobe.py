"""A job that runs only some hidden tests' probes: a regrade where one test's inputs changed (records/kept_records.py
decides which tests must be probed again; the others' kept outcomes stand).

The student's cells all run, as they must to define their functions; the probe cells of the tests not asked for, and
the shared probe set, stay in place empty (the notebook's cells keep their positions, so the job's events and outputs
name the cells a full run names; an empty cell, like a probe cell, leaves IPython's execution count as it is, so a
traceback's `Cell In[n]` is a full run's), and the task holds only the tests asked for: the job can send answers for
no other test. What a message may not quote is the whole task's text, as in a full run (GradingTask.whole_task).
"""
from __future__ import annotations

import dataclasses
import json

from posenc_autograder.checks import REGISTRY
from posenc_autograder.course import grade_id
from posenc_autograder.grading.execute import GradingTask
from posenc_autograder.probes import codec


def probing_only(task: GradingTask, tests: list[str], variant: int | None) -> GradingTask:
    """`task` (prepare's, every probe in place) with only the probes of `tests` run."""
    asked = sorted(set(tests) & set(task.task_ids))
    nb = json.loads(task.notebook_json)
    for cell in nb["cells"]:
        if grade_id(cell) in task.task_ids and grade_id(cell) not in asked:
            cell["source"] = ""
    frame = codec.frame({cell_id: REGISTRY[cell_id].task_entry(variant, framed=True) for cell_id in asked})
    return dataclasses.replace(task, notebook_json=json.dumps(nb, ensure_ascii=False), task_frame=frame,
                               task_ids=asked, whole_task=codec.frame_skeleton(task.task_frame))
