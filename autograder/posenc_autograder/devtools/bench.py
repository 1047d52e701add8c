"""`make bench`: the same class graded by stock sequential `nbgrader autograde` and by `make grade`.

Prints wall times, time per notebook, their ratio, and the time of the hidden tests alone.
"""
from __future__ import annotations

import pathlib
import shutil
import tempfile
import time

import nbformat

from posenc_autograder.records import gradebook
from posenc_autograder.checks import hidden_tests
from posenc_autograder.course import RELEASE_DIRECTORY, SOURCE_DIRECTORY, Course, grade_id, nbgrader_meta, run_nbgrader
from posenc_autograder.grading.executors import default_jobs
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.notebook import run_check
from posenc_autograder.sandbox.bubblewrap import Limits

ASSIGNMENT = NOTEBOOK = "positional_encoding"


def solved(course_root: pathlib.Path, assignment: str = ASSIGNMENT) -> nbformat.NotebookNode:
    """The released notebook with every answer cell filled in from the solution (one per assignment)."""
    release = nbformat.read(course_root / RELEASE_DIRECTORY / assignment / f"{assignment}.ipynb", as_version=4)
    solution = nbformat.read(course_root / SOURCE_DIRECTORY / assignment / f"{assignment}.ipynb", as_version=4)
    answers = {grade_id(c): c.source for c in solution.cells if nbgrader_meta(c).get("solution")}
    for cell in release.cells:
        cell.source = answers.get(grade_id(cell), cell.source)
    return release


def make_class(source_root: pathlib.Path, root: pathlib.Path, students: int) -> Course:
    for folder in (SOURCE_DIRECTORY, RELEASE_DIRECTORY):
        shutil.copytree(source_root / folder, root / folder)
    (root / "autograder").mkdir()
    shutil.copy(source_root / "autograder" / "nbgrader_config.py", root / "autograder")
    course = Course(root)
    good = solved(source_root)
    stub = nbformat.read(source_root / RELEASE_DIRECTORY / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    for i in range(students):
        folder = course.submitted / f"student{i:03d}" / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(good if i % 3 else stub, folder / f"{NOTEBOOK}.ipynb")
    return course


def time_stock(course: Course) -> float:
    run_nbgrader(course.root, "generate_assignment", ASSIGNMENT, "--force", "--log-level=ERROR",
                 f"--CourseDirectory.release_directory={course.root / 'stock-release'}", home=course.root,
                 check=True, capture_output=True)
    started = time.perf_counter()
    run_nbgrader(course.root, "autograde", ASSIGNMENT, "--force", "--log-level=ERROR", home=course.root,
                 check=True, capture_output=True)
    return time.perf_counter() - started


def time_hidden_tests(source_root: pathlib.Path, repeats: int = 3) -> float:
    """Seconds to run every hidden check of one notebook in-process on a correct answer."""
    namespace: dict = {}
    for cell in solved(source_root).cells:
        if cell.cell_type == "code" and not nbgrader_meta(cell).get("grade"):
            exec(compile(cell.source, "<solution>", "exec"), namespace)  # noqa: S102 - the course's own solution
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for test in hidden_tests(ASSIGNMENT):
            assert run_check(test.id, namespace) == [], test.id
        best = min(best, time.perf_counter() - started)
    return best


def arguments(parser) -> None:
    parser.add_argument("--students", type=int, default=60)


def run_command(args) -> int:
    source_root = Course().root
    jobs = args.jobs or default_jobs()
    with tempfile.TemporaryDirectory(prefix="posenc-bench-") as tmp:
        stock_course = make_class(source_root, pathlib.Path(tmp) / "stock", args.students)
        ours_course = make_class(source_root, pathlib.Path(tmp) / "ours", args.students)
        bare_course = make_class(source_root, pathlib.Path(tmp) / "bare", args.students)
        stock = time_stock(stock_course)
        # Stock's clock starts after generate_assignment has registered the assignment; so does ours.
        started = time.perf_counter()
        for course in (ours_course, bare_course):
            gradebook.register(course, ASSIGNMENT, course.work / "release")
        register = (time.perf_counter() - started) / 2
        started = time.perf_counter()
        results = grade_all(ours_course, jobs=jobs, limits=Limits(), quiet=True)
        ours = time.perf_counter() - started
        started = time.perf_counter()
        grade_all(Course(ours_course.root), jobs=jobs, limits=Limits(), quiet=True, force=False)
        cached = time.perf_counter() - started
        # The same run without bubblewrap and limits: what the isolation costs.
        started = time.perf_counter()
        grade_all(bare_course, jobs=jobs, isolate=False, limits=Limits(), quiet=True)
        bare = time.perf_counter() - started
    hidden = time_hidden_tests(source_root)
    n = args.students
    print(f"notebooks graded:                       {n} ({sum(r.score > 0 for r in results)} with points)")
    print(f"stock nbgrader autograde, sequential:   {stock:7.1f} s  ({stock / n:.2f} s per notebook)")
    print(f"make grade, sandboxed, {jobs} parallel jobs: {ours:7.1f} s  ({ours / n:.2f} s per notebook)")
    print(f"speed-up over stock:                    {stock / ours:7.2f}x")
    print(f"make grade without the sandbox:         {bare:7.1f} s  ({bare / n:.2f} s per notebook;"
          f" sandbox overhead {100 * (ours - bare) / bare:+.0f}%)")
    print(f"make grade again, nothing changed:      {cached:7.1f} s")
    print(f"registering the assignment, once a term: {register:6.1f} s  (before either clock, as for stock)")
    print(f"hidden tests alone, per notebook:       {hidden:7.3f} s")
    return 0

