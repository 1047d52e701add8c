"""`make bench`: the same class graded by stock sequential `nbgrader autograde` and by `make grade`, then CPU
seconds per phase per notebook for each assignment beside the floor, all measured in the same run.

Prints wall times and their ratio, CPU per notebook (stock's and ours), the phases (grading/costs.py), the
floor (the hidden checks in a warm process on the solution: the student's code on the spec-sized inputs,
the reference and the comparisons), a sandbox that runs no cell, and `make grade` with nothing to grade.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import nbformat

from posenc_autograder.checks import hidden_tests, stand_ins_in_process
from posenc_autograder.checks.hidden import function_verdicts
from posenc_autograder.course import RELEASE_DIRECTORY, SOURCE_DIRECTORY, Course, grade_id, nbgrader_meta, run_nbgrader
from posenc_autograder.devtools import figures
from posenc_autograder.grading import costs
from posenc_autograder.grading.executors import default_jobs
from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.probes import codec
from posenc_autograder.records import gradebook
from posenc_autograder.sandbox import warm
from posenc_autograder.sandbox.supervisor import run_job
from posenc_autograder.settings import Limits

ASSIGNMENT = NOTEBOOK = "positional_encoding"


def solved(course_root: pathlib.Path, assignment: str = ASSIGNMENT) -> nbformat.NotebookNode:
    """The released notebook with every answer cell filled in from the solution (one per assignment)."""
    release = nbformat.read(course_root / RELEASE_DIRECTORY / assignment / f"{assignment}.ipynb", as_version=4)
    solution = nbformat.read(course_root / SOURCE_DIRECTORY / assignment / f"{assignment}.ipynb", as_version=4)
    answers = {grade_id(c): c.source for c in solution.cells if nbgrader_meta(c).get("solution")}
    for cell in release.cells:
        cell.source = answers.get(grade_id(cell), cell.source)
    return release


def make_class(source_root: pathlib.Path, root: pathlib.Path, students: int, assignment: str = ASSIGNMENT,
               untouched_every: int = 3) -> Course:
    """A course with `students` submissions of one assignment: the solution, and every `untouched_every`-th
    the released notebook as handed out (0: none)."""
    for folder in (SOURCE_DIRECTORY, RELEASE_DIRECTORY):
        shutil.copytree(source_root / folder, root / folder)
    (root / "autograder").mkdir()
    shutil.copy(source_root / "autograder" / "nbgrader_config.py", root / "autograder")
    course = Course(root)
    good = solved(source_root, assignment)
    stub = nbformat.read(source_root / RELEASE_DIRECTORY / assignment / f"{assignment}.ipynb", as_version=4)
    for i in range(students):
        folder = course.submitted / f"student{i:03d}" / assignment
        folder.mkdir(parents=True)
        untouched = untouched_every and i % untouched_every == 0
        nbformat.write(stub if untouched else good, folder / f"{assignment}.ipynb")
    return course


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def time_stock(course: Course) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of stock `nbgrader autograde` (it waits for its kernels: their CPU counts)."""
    run_nbgrader(course.root, "generate_assignment", ASSIGNMENT, "--force", "--log-level=ERROR",
                 f"--CourseDirectory.release_directory={course.root / 'stock-release'}", home=course.root,
                 check=True, capture_output=True)
    started, cpu = time.perf_counter(), children_cpu()
    run_nbgrader(course.root, "autograde", ASSIGNMENT, "--force", "--log-level=ERROR", home=course.root,
                 check=True, capture_output=True)
    return time.perf_counter() - started, children_cpu() - cpu


def floor_cpu(source_root: pathlib.Path, assignment: str = ASSIGNMENT, repeats: int = 3) -> float:
    """The floor: CPU seconds, in a warm process, of every hidden test's probe on the solution (the student's
    code on the spec-sized inputs) and its judge (the reference and the comparisons); inputs built beforehand,
    nothing encoded, no guard. Best of `repeats`."""
    namespace = notebook_namespace(solved(source_root, assignment))
    stand_ins_in_process()                                  # the probes' stand-ins, as the sandbox ships them
    tests = hidden_tests(assignment)
    inputs = {test.id: test.plain_inputs() for test in tests}
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        problems = floor_problems(namespace, tests, inputs)
        best = min(best, time.process_time() - started)
        assert not any(problems.values()), {cid: found for cid, found in problems.items() if found}
    return best


def notebook_namespace(notebook: nbformat.NotebookNode) -> dict:
    """The names a notebook's code cells define, its test cells left out (the course's own notebooks only)."""
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):          # the notebook's own prints
        for cell in notebook.cells:
            if cell.cell_type == "code" and not nbgrader_meta(cell).get("grade"):
                exec(compile(cell.source, "<solution>", "exec"), namespace)  # noqa: S102 - the course's own notebook
    return namespace


def floor_problems(namespace: dict, tests, inputs: dict) -> dict:
    """What the floor times: each hidden test's probe run on `namespace` and its judge, as test id -> problems
    (the contracts' judges last, with the others' verdicts)."""
    problems = {test.id: test.judge(inputs[test.id], test.probe(namespace, inputs[test.id]))
                for test in tests if not test.reads_verdicts}
    verdicts = function_verdicts(tests, {cid: (found, 1, 1) for cid, found in problems.items()})
    problems.update({test.id: test.judge(inputs[test.id], test.probe(namespace, inputs[test.id]),
                                         verdicts=verdicts) for test in tests if test.reads_verdicts})
    return problems


def empty_job_cpu(repeats: int = 5) -> float:
    """CPU seconds of a sandbox that runs one empty cell: its start, the shell (the warm sandbox: a fork of the
    zygote, and the zygote's own work for it; bubblewrap: also the interpreter, numpy, IPython)."""
    run_job([{"cell_type": "code", "source": ""}], codec.frame({}), [], probe_files(), Limits())   # a zygote started
    zygote = warm.zygote_cpu_seconds()
    runs = [run_job([{"cell_type": "code", "source": ""}], codec.frame({}), [], probe_files(), Limits()).cpu_seconds
            for _ in range(repeats)]
    # The zygote's share, averaged: the kernel counts its time in clock ticks, each about as long as a fork takes.
    return statistics.median(runs) + max(warm.zygote_cpu_seconds() - zygote, 0.0) / repeats


@contextlib.contextmanager
def bubblewrap_per_job():
    """Every job in a fresh bubblewrap sandbox, as before the warm sandbox: the same run's comparison."""
    before = os.environ.get(warm.SWITCH)
    os.environ[warm.SWITCH] = "0"
    try:
        yield
    finally:
        os.environ.pop(warm.SWITCH) if before is None else os.environ.__setitem__(warm.SWITCH, before)


def phase_costs(course: Course, jobs: int) -> tuple[dict[str, float], float, float, int]:
    """Grade the class: (CPU seconds per phase, the run's whole CPU (grader and sandboxes), wall seconds,
    notebooks graded). The sandbox phase holds the jobs' CPU and the warm zygote's own (forking and reaping)."""
    costs.reset()
    started, cpu, zygote = time.perf_counter(), own_cpu(), warm.zygote_cpu_seconds()
    results = grade_all(course, jobs=jobs, limits=Limits(), quiet=True)
    wall, spent = time.perf_counter() - started, own_cpu() - cpu
    phases = costs.taken()
    phases["sandbox"] += max(warm.zygote_cpu_seconds() - zygote, 0.0)    # its forks: in no job's account
    return phases, spent + phases["sandbox"], wall, len(results)


def nothing_to_grade_cpu(course: Course) -> float:
    """CPU seconds of the whole `make grade` command when nothing changed (run twice: the first one may check
    the release once and remember it)."""
    command = [sys.executable, "-m", "posenc_autograder", "grade", "--course", str(course.root)]
    for _ in range(2):
        cpu = children_cpu()
        subprocess.run(command, capture_output=True, check=False)
    return children_cpu() - cpu


# --- the figures it writes (devtools/figures.py: autograder/figures/bench.md and the README's block) -----------

NAME = "bench"
WALL_GOAL = 8                   # times faster than stock, in wall time
CPU_GOALS = "0.25 CPU seconds for positional_encoding, 0.10 for the bonus assignments"
PHASE_WORDS = {
    "prepare": "prepare (read, assemble, the task composed from the inputs kept per variant)",
    "sandbox": "sandbox (a fork of the zygote: namespaces, root, the shell, cells, probes, records)",
    "supervise": "supervise (the channel's frames, decoded once into read-only arrays)",
    "judge": "judge (references kept per run, read-only)",
    "store": "store (gradebook, autograded notebook, feedback, result)",
    "evidence": "integrity evidence (SHA-256 of rounded bytes, the judge's verdicts reused)",
}
EMPTY_CELL = "of which a sandbox that runs one empty cell"


@dataclasses.dataclass(frozen=True)
class ClassFigures:
    """The stock comparison: one class graded by stock sequential nbgrader and by `make grade`, in one run."""
    students: int
    jobs: int
    stock_wall: float
    stock_cpu: float
    ours_wall: float
    ours_cpu: float
    idle_cpu: float             # `make grade` with nothing to grade: the whole command

    def text(self) -> str:
        n = self.students
        rows = [["stock `nbgrader autograde`, sequential", f"{self.stock_wall:.1f} s", f"{self.stock_cpu / n:.3f} s"],
                [f"`make grade`, sandboxed (warm), {self.jobs} jobs", f"{self.ours_wall:.1f} s",
                 f"{self.ours_cpu / n:.3f} s"],
                ["`make grade` with nothing to grade (the whole command)", "", f"{self.idle_cpu:.2f} s in all"]]
        return (figures.table([f"the {n}-notebook class", "wall", "CPU a notebook"], rows)
                + f"\n`make grade` was {self.stock_wall / self.ours_wall:.1f}× faster than stock in wall time (goal: "
                f"{WALL_GOAL}×) and {self.stock_cpu / self.ours_cpu:.1f}× in CPU.\n")


def phase_rows(tables: dict, cold: dict, start: float, cold_start: float,
               floors: dict) -> list[tuple[str, dict[str, float]]]:
    """(row label, assignment -> CPU seconds a notebook): the phases (the empty sandbox under its own), the run's own
    share, the total, the same notebooks through bubblewrap per job, and the floor."""
    rows = []
    for phase in costs.PHASES:
        rows.append((PHASE_WORDS.get(phase, phase), {a: t[0][phase] / t[3] for a, t in tables.items()}))
        if phase == "sandbox":
            rows.append((EMPTY_CELL, {a: start for a in tables}))
    rows += [("the run's own share (class files, threads)", {a: (t[1] - sum(t[0].values())) / t[3]
                                                             for a, t in tables.items()}),
             ("**total**", {a: t[1] / t[3] for a, t in tables.items()}),
             ("the same notebooks, bubblewrap per job: sandbox", {a: t[0]["sandbox"] / t[3] for a, t in cold.items()}),
             (EMPTY_CELL, {a: cold_start for a in tables}),
             ("the same notebooks, bubblewrap per job: **total**", {a: t[1] / t[3] for a, t in cold.items()}),
             ("floor: the hidden checks in a warm process (student code on the inputs, reference, comparisons)",
              floors)]
    return rows


def per_notebook_text(rows: list[tuple[str, dict[str, float]]], assignments: list[str], per_assignment: int,
                      jobs: int) -> str:
    def cell(label: str, value: float) -> str:
        return f"**{value:.3f}**" if label.endswith("**total**") else f"{value:.3f}"
    table = figures.table(["CPU seconds"] + assignments,
                          [[label] + [cell(label, values[a]) for a in assignments] for label, values in rows])
    return (f"Per correct notebook ({per_assignment} of each assignment, {jobs} jobs; goals: {CPU_GOALS}):\n\n"
            + table)


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min)"


def arguments(parser) -> None:
    parser.add_argument("--students", type=int, default=60, help="the stock comparison's class")
    parser.add_argument("--per-assignment", type=int, default=12, help="correct notebooks graded per assignment "
                        "for the CPU phases")
    parser.add_argument("--no-write", action="store_true", help="print only: no figures file, README untouched")


def bonus_assignments(course: Course) -> list[str]:
    """Every assignment of the course but the core one, as its solutions/ folder lists them (a new one is timed
    without being named here)."""
    return [assignment for assignment in course.assignments() if assignment != ASSIGNMENT]


def run_command(args) -> int:
    source_root = Course().root
    jobs = args.jobs or default_jobs()
    started_at, load_at_start = time.time(), os.getloadavg()[0]
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, {load()} at the start")
    with tempfile.TemporaryDirectory(prefix="posenc-bench-") as tmp:
        stock_course = make_class(source_root, pathlib.Path(tmp) / "stock", args.students)
        ours_course = make_class(source_root, pathlib.Path(tmp) / "ours", args.students)
        stock, stock_cpu = time_stock(stock_course)
        # Stock's clock starts after generate_assignment has registered the assignment; so does ours.
        started = time.perf_counter()
        gradebook.register(ours_course, ASSIGNMENT)
        register = time.perf_counter() - started
        _, ours_cpu, ours, _ = phase_costs(ours_course, jobs)
        idle = nothing_to_grade_cpu(ours_course)
        tables, cold = {}, {}
        for assignment in (ASSIGNMENT, *bonus_assignments(Course(source_root))):
            course = make_class(source_root, pathlib.Path(tmp) / f"correct-{assignment}", args.per_assignment,
                                assignment, untouched_every=0)
            gradebook.register(course, assignment)
            tables[assignment] = phase_costs(course, jobs)
            course = make_class(source_root, pathlib.Path(tmp) / f"bubblewrap-{assignment}", args.per_assignment,
                                assignment, untouched_every=0)
            gradebook.register(course, assignment)
            with bubblewrap_per_job():
                cold[assignment] = phase_costs(course, jobs)
    start = empty_job_cpu()
    with bubblewrap_per_job():
        cold_start = empty_job_cpu()
    floors = {assignment: floor_cpu(source_root, assignment) for assignment in tables}
    class_figures = ClassFigures(args.students, jobs, stock, stock_cpu, ours, ours_cpu, idle)
    rows = phase_rows(tables, cold, start, cold_start, floors)
    print(f"registering the assignment: {register:.1f} s (once a term, before either clock); grader peak memory "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB (make bench-scale: in class size)")
    text = (class_figures.text() + "\n" + per_notebook_text(rows, list(tables), args.per_assignment, jobs) + "\n"
            + figures.provenance(started_at, load_at_start).format(name=NAME) + "\n")
    print("\n" + text)
    if not args.no_write:
        print(f"written to {figures.publish(source_root, NAME, text).relative_to(source_root)} and the README")
    return 0
