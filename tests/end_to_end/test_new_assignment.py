"""Adding an assignment touches its own folder (checks/<name>/), its solution notebook and the table of contents:
in a copy of the course and of the grader package, a small fourth assignment is added that way, released with
`make release`, and graded with `make grade` (no sandbox: the notebooks are ours, but the probes and the stand-ins
are shipped to the job as in the sandbox). It brings a kind of stand-in of its own (its stand_ins.py): a student
function judged with the one it calls stood in for keeps its points when that one is wrong. Nothing else is edited:
the package copy differs from the grader only in the new folder."""
import csv
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys

import nbformat
import pytest
from fixture_submissions import make_course
from notebook_tools import ROOT

import posenc_autograder
from posenc_autograder.devtools.bench import solved

NAME = "scaling"
FILES = {
    "__init__.py": "",
    "reference.py": '''"""Trusted reference of the scaling assignment."""
import numpy as np


def scaled_positions(positions, factor):
    return np.asarray(positions, dtype=np.float64) * factor
''',
    "stand_ins.py": '''"""The scaling assignment's own stand-in (numpy only: shipped beside the probes)."""
import numpy as np


def offset(spec):
    """scaled_positions answering positions + a shift the trusted side chose, whatever the factor."""
    shift = float(spec["offset"])

    def stand_in(positions, factor):
        return np.asarray(positions, dtype=np.float64) + shift
    return stand_in


KINDS = {"offset": offset}


def offset_stand_in(shift):
    return {"kind": "scaling.offset", "offset": shift}
''',
    "manifest.py": '''"""The scaling assignment's student functions."""
from posenc_autograder.checks.hidden import call
from posenc_autograder.checks.manifest import ARRAY, StudentFunction
from posenc_autograder.checks.scaling.stand_ins import offset_stand_in

FUNCTIONS = (StudentFunction("scaled_positions", ("positions", "factor"), ARRAY, cell="scaling",
                             contract=lambda: call([0.0, 1.0, 2.0], 2.0)),
             StudentFunction("centred_scaled", ("positions", "factor"), ARRAY, cell="scaling", reference="",
                             contract=lambda: call([0.0, 1.0, 2.0], 2.0),
                             stand_ins=lambda: {"scaled_positions": offset_stand_in(0.5)}))
''',
    "parts.py": '''"""Hidden tests of the scaling assignment."""
from posenc_autograder.checks.comparison import call_label, compare
from posenc_autograder.checks.hidden import HiddenTest, call, calling, each_case
from posenc_autograder.checks.scaling import reference as ref, stand_ins
from posenc_autograder.probes.helpers import call_each

CASES = [call([0.0, 1.0, 2.0], 2.0), call([3.0, 5.0, 7.0, 11.0], 0.5)]
SHIFT = 0.25


def centred_inputs():
    inputs = calling("centred_scaled", values=CASES)
    inputs["stand_ins"] = {"scaled_positions": stand_ins.offset_stand_in(SHIFT)}
    return inputs


def centred(case):
    """What centred_scaled returns when the scaled_positions it calls is the stand-in."""
    scaled = stand_ins.offset(stand_ins.offset_stand_in(SHIFT))(*case["args"])
    return scaled - scaled.mean()


def judge_centred(inputs, obs):
    return each_case(lambda case, record: compare(record, centred(case), call_label("centred_scaled", case), 1e-12),
                     inputs["groups"]["values"], obs["values"])


def judge(inputs, obs):
    return each_case(lambda case, record: compare(record, ref.scaled_positions(*case["args"]),
                                                  call_label("scaled_positions", case), 1e-12),
                     inputs["groups"]["values"], obs["values"])


TESTS = [HiddenTest(id="hidden_scaled_positions", assignment="scaling", title="positions scaled by a factor",
                    points=2, answer_cell="scaling", subjects=("scaled_positions",), partial=True,
                    inputs=lambda: calling("scaled_positions", values=CASES), probe=call_each, judge=judge),
         HiddenTest(id="hidden_centred_scaled", assignment="scaling", title="scaled positions centred on zero",
                    points=1, answer_cell="scaling", subjects=("centred_scaled",), partial=True,
                    inputs=centred_inputs, probe=call_each, judge=judge_centred)]
''',
}
ANSWER = ("def scaled_positions(positions, factor):\n    ### BEGIN SOLUTION\n    {body}\n    ### END SOLUTION\n\n\n"
          "def centred_scaled(positions, factor):\n    ### BEGIN SOLUTION\n"
          "    scaled = scaled_positions(positions, factor)\n    return scaled - scaled.mean()\n    ### END SOLUTION")
RIGHT = "return np.asarray(positions, dtype=np.float64) * factor"


def solution_notebook() -> nbformat.NotebookNode:
    answer = nbformat.v4.new_code_cell(ANSWER.format(body=RIGHT))
    answer.metadata["nbgrader"] = {"grade": False, "grade_id": "scaling", "locked": False, "schema_version": 3,
                                   "solution": True, "task": False}
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Scaling positions"),
                                           nbformat.v4.new_code_cell("import numpy as np"), answer])


def tree_digests(folder: pathlib.Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts}


def run(course: pathlib.Path, package_parent: pathlib.Path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(package_parent), "POSENC_COURSE": str(course)}
    return subprocess.run([sys.executable, "-m", "posenc_autograder", *command, "--course", str(course)],
                          capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.slow
def test_a_fourth_assignment_in_its_own_folder_is_discovered_released_and_graded(tmp_path):
    course = make_course(tmp_path / "course")
    shutil.copy(ROOT / "autograder" / "test_plan.csv", course / "autograder")
    shutil.copy(ROOT / "_toc.yml", course)
    packages = tmp_path / "packages"
    shutil.copytree(pathlib.Path(posenc_autograder.__file__).parent, packages / "posenc_autograder",
                    ignore=shutil.ignore_patterns("__pycache__"))
    folder = packages / "posenc_autograder" / "checks" / NAME           # 1. the assignment's own folder
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    (course / "solutions" / NAME).mkdir()                              # 2. its solution notebook
    nbformat.write(solution_notebook(), course / "solutions" / NAME / f"{NAME}.ipynb")
    with open(course / "_toc.yml", "a") as toc:                        # 3. the table of contents
        toc.write(f"  - file: exercises/{NAME}/{NAME}\n")

    grader = tree_digests(pathlib.Path(posenc_autograder.__file__).parent)
    changed = {name for name, digest in tree_digests(packages / "posenc_autograder").items()
               if grader.get(name) != digest}
    assert changed == {f"checks/{NAME}/{name}" for name in FILES}          # nothing of the grader was edited
    released = run(course, packages, "release")
    assert released.returncode == 0, released.stderr
    assert "hidden_scaled_positions" in (course / "exercises" / NAME / f"{NAME}.ipynb").read_text()
    good = solved(course, NAME)
    for student, body in (("alice", RIGHT), ("bob", "return np.asarray(positions, dtype=np.float64) + factor")):
        notebook = good if student == "alice" else solved(course, NAME)
        for cell in notebook.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "scaling":
                cell.source = ANSWER.format(body=body)
        (course / "autograder" / "submitted" / student / NAME).mkdir(parents=True)
        nbformat.write(notebook, course / "autograder" / "submitted" / student / NAME / f"{NAME}.ipynb")

    graded = run(course, packages, "grade", "--no-sandbox", "--jobs", "1", "--assignment", NAME)
    assert graded.returncode == 0, graded.stderr
    rows = {r["student"]: r for r in csv.DictReader(open(course / "autograder" / "reports" / "grades.csv"))
            if r["assignment"] == NAME}
    # bob's scaled_positions is wrong; his centred_scaled, judged with the stand-in in its place, keeps its point
    assert {s: (r["score"], r["max_score"]) for s, r in rows.items()} == {"alice": ("3", "3"), "bob": ("1", "3")}
