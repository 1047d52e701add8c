"""One submission through the grader: prepare (trusted) → execute (sandboxed, anywhere) → judge (trusted).

`execute_task` needs nothing but its GradingTask, so it can run in a local thread or on a remote
Dask worker without a shared filesystem; only plain data crosses in either direction.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import pathlib
import tempfile
import time

import nbformat

from . import probes as probes_package
from .assemble import assemble
from .checks import REGISTRY
from .course import RELEASE_DIRECTORY, Course
from .probes import codec
from .sandbox import Limits, run_job
from .submissions import Submission, UnreadableNotebook, read_notebook

MAX_RESULT_BYTES = 50_000_000
PROBE_PACKAGE = "posenc_probes"


@dataclasses.dataclass
class GradedTest:
    cell_id: str
    title: str
    hidden: bool
    points: float
    max_points: float
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems


@dataclasses.dataclass
class NotebookResult:
    student: str
    assignment: str
    notebook: str
    graded: bool                      # False: nothing could be run (missing or unreadable file)
    tests: list[GradedTest]
    notes: list[str]                  # what happened, for the student and the run report
    seconds: float = 0.0
    action: str = ""                  # what the student (or instructor) should do about the notes

    @property
    def score(self) -> float:
        return sum(t.points for t in self.tests)

    @property
    def max_score(self) -> float:
        return sum(t.max_points for t in self.tests)


@dataclasses.dataclass
class GradingTask:
    """Everything the sandbox side needs, as plain data."""
    key: tuple[str, str, str]
    notebook_json: str                # the assembled notebook, probe cells in place
    task_json: str                    # per probe cell: probe module, name and inputs
    probe_files: dict[str, str]       # the probes package, file name -> source
    limits: dict
    isolate: bool


@dataclasses.dataclass
class Execution:
    key: tuple[str, str, str]
    observations: dict[str, dict]     # cell id -> what the probe recorded
    events: list[dict]
    cell_errors: dict[str, str]       # visible test cell id -> error name, for cells that raised
    seconds: float
    failure: str | None = None        # the job itself could not run
    executed_notebook: str | None = None


# --- prepare -----------------------------------------------------------------------------------

def test_cells(release_nb) -> list[tuple[int, str, str, float]]:
    """(index, cell id, title, points) of every graded cell of a released notebook."""
    found = []
    for index, cell in enumerate(release_nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            first_line = cell.source.splitlines()[0] if cell.source else meta["grade_id"]
            found.append((index, meta["grade_id"], first_line.lstrip("# ").strip(), float(meta.get("points", 0))))
    return found


def probe_cell_source(cell_id: str, title: str) -> str:
    return (f"# {title}\nfrom {PROBE_PACKAGE}.runner import run as _posenc_probe\n"
            f"_posenc_probe({cell_id!r}, globals())")


def release_notebook(course: Course, assignment: str, notebook: str):
    return nbformat.read(course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb", as_version=4)


def probe_files() -> dict[str, str]:
    folder = pathlib.Path(probes_package.__file__).parent
    return {p.name: p.read_text() for p in sorted(folder.glob("*.py"))}


def prepare(course: Course, submission: Submission, limits: Limits, isolate: bool) -> GradingTask | NotebookResult:
    release = release_notebook(course, submission.assignment, submission.notebook)
    cells = test_cells(release)
    if submission.path is None:
        return not_graded(submission, cells, submission.notes)
    try:
        student_nb = read_notebook(submission.path)
    except UnreadableNotebook as exc:
        return not_graded(submission, cells, submission.notes + [f"the notebook could not be read: {exc}"])
    assembled = assemble(release, student_nb)
    submission.notes.extend(assembled.notes)
    nb = assembled.notebook
    task = {}
    for _, cell_id, title, _ in test_cells(nb):    # positions in the assembled notebook, added cells included
        check = REGISTRY.get(cell_id)
        if check is None:
            continue                                 # a visible self-check: it runs as released
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell_id)
        cell.source = probe_cell_source(cell_id, title)
        task[cell_id] = {"module": check.probe.__module__.rsplit(".", 1)[-1], "probe": check.probe.__name__,
                         "data": check.inputs()}
    return GradingTask(submission.key, nbformat.writes(nb), codec.dumps(task), probe_files(),
                       dataclasses.asdict(limits), isolate)


def not_graded(submission: Submission, cells, notes) -> NotebookResult:
    tests = [GradedTest(cid, title, cid in REGISTRY, 0.0, points, ["not run: the notebook could not be graded"])
             for _, cid, title, points in cells]
    return NotebookResult(*submission.key, graded=False, tests=tests, notes=list(notes),
                          action="student: submit a readable notebook with its original name")


# --- execute (sandbox side; needs only the task) -----------------------------------------------

def execute_task(task: GradingTask, course_root: pathlib.Path | None = None) -> Execution:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="posenc-job-") as tmp:
        job = pathlib.Path(tmp)
        lib = job / "lib" / PROBE_PACKAGE
        lib.mkdir(parents=True)
        for name, text in task.probe_files.items():
            (lib / name).write_text(text)
        for folder in ("work", "home"):
            (job / folder).mkdir()
        (job / "notebook.ipynb").write_text(task.notebook_json)
        (job / "task.json").write_text(task.task_json)
        limits = Limits(**task.limits)
        (job / "limits.json").write_text(json.dumps(limits.for_runner()))
        job.chmod(0o755)
        try:
            outcome = run_job(job, course_root or pathlib.Path.cwd(), limits, isolate=task.isolate)
        except Exception as exc:  # noqa: BLE001 - the sandbox failing is reported, never fatal
            return Execution(task.key, {}, [], {}, time.monotonic() - started, f"{type(exc).__name__}: {exc}")
        nb = nbformat.reads(task.notebook_json, as_version=4)
        _attach_outputs(nb, job / "outputs")
        events = [{**e, "where": cell_label(nb, e.get("cell"))} for e in outcome.events]
        events += [{"event": "output_truncated", "cell": i, "where": cell_label(nb, i)}
                   for i in _truncated_cells(job / "outputs")]
        failure = None
        if not outcome.finished and not events:
            failure = f"the grading sandbox could not run the notebook: {outcome.log_tail[-500:]}"
        elif any(e["event"] == "kernel_died" and e.get("cell") is None for e in events):
            failure = f"the notebook's process died before running any cell: {outcome.log_tail[-500:]}"
        return Execution(task.key, _read_observations(job / "results"), events, _visible_cell_errors(nb),
                         time.monotonic() - started, failure, nbformat.writes(nb))


def cell_label(nb, index) -> str:
    """How the student can find a cell: its nbgrader id, or its position for cells they added."""
    if index is None or not 0 <= index < len(nb.cells):
        return "a cell"
    grade_id = nb.cells[index].get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return f"cell '{grade_id}'" if grade_id else f"the cell you added at position {index + 1}"


def _cell_outputs(folder: pathlib.Path):
    """(cell index, recorded outputs) for every cell the runner finished."""
    if not folder.is_dir() or folder.is_symlink():
        return
    for path in folder.glob("*.json"):
        if path.stem.isdigit():
            record = _read_json(path, default=None)
            if isinstance(record, dict):
                yield int(path.stem), record


def _attach_outputs(nb, folder: pathlib.Path) -> None:
    for index, record in _cell_outputs(folder):
        if 0 <= index < len(nb.cells) and nb.cells[index].cell_type == "code":
            try:
                nb.cells[index].outputs = [nbformat.from_dict(o) for o in record.get("outputs", [])]
            except Exception:  # noqa: BLE001 - malformed output records are dropped
                nb.cells[index].outputs = []


def _truncated_cells(folder: pathlib.Path) -> list[int]:
    return sorted(i for i, record in _cell_outputs(folder) if record.get("truncated"))


def _safe_file(path: pathlib.Path) -> bool:
    return path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_RESULT_BYTES


def _read_json(path: pathlib.Path, default):
    if not _safe_file(path):
        return default
    try:
        return json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return default


def _read_observations(folder: pathlib.Path) -> dict[str, dict]:
    found = {}
    if not folder.is_dir() or folder.is_symlink():
        return found
    for path in folder.glob("*.json"):
        if path.stem in REGISTRY and _safe_file(path):
            try:
                found[path.stem] = codec.loads(path.read_text())
            except Exception:  # noqa: BLE001 - a forged or truncated file is simply no answer
                continue
    return found


def _visible_cell_errors(nb) -> dict[str, str]:
    errors = {}
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if meta.get("grade") and meta.get("grade_id") not in REGISTRY:
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    errors[meta["grade_id"]] = f"{output.get('ename')}: {output.get('evalue', '')}"[:300]
    return errors


# --- judge (trusted side) ----------------------------------------------------------------------

def judge(course: Course, submission: Submission, execution: Execution, limits: Limits) -> NotebookResult:
    release = release_notebook(course, submission.assignment, submission.notebook)
    notes = list(submission.notes) + _describe_events(execution.events)
    if execution.failure:
        notes.append(execution.failure)
    tests = []
    for _, cell_id, title, points in test_cells(release):
        check = REGISTRY.get(cell_id)
        if check is None:
            error = execution.cell_errors.get(cell_id)
            tests.append(GradedTest(cell_id, title, False, 0.0, points, [f"raised {error}"] if error else []))
            continue
        problems = _judge_one(check, execution.observations.get(cell_id), execution.events)
        tests.append(GradedTest(cell_id, title, True, 0.0 if problems else points, points, problems))
    notes += _memory_note(tests, limits)
    if execution.failure:
        action = "instructor: the grader failed, not the student; see the note, fix and run `make grade` again"
    elif notes:
        action = "student: read the notes in the feedback; failed tests say what to fix"
    else:
        action = ""
    return NotebookResult(*submission.key, graded=execution.failure is None, tests=tests, notes=notes,
                          seconds=execution.seconds, action=action)


def _judge_one(check, record, events) -> list[str]:
    if record is None:
        return [_why_no_answer(events)]
    if "missing" in record:
        return [str(record["missing"])]
    try:
        return [str(p) for p in check.judge(copy.deepcopy(record["observations"]))]
    except Exception as exc:  # noqa: BLE001 - malformed observations never crash grading
        return [f"your answers had an unexpected form ({type(exc).__name__}); check return types and shapes"]


def _memory_note(tests: list[GradedTest], limits: Limits) -> list[str]:
    """A MemoryError is the memory limit at work: say so once, naming the cells, so the report shows it."""
    cells = [t.cell_id for t in tests if any("MemoryError" in p for p in t.problems)]
    if not cells:
        return []
    return [f"your code ran out of memory in {', '.join(cells)}: the grader allows each notebook "
            f"{limits.memory_bytes / 2**30:g} GiB; look for an array far larger than the inputs need"]


def _why_no_answer(events) -> str:
    for event in events:
        if event.get("event") == "notebook_time_limit":
            return "not run: the notebook reached its time limit before this test"
    return ("not run: the test produced no answer (the kernel stopped or the cell ran too long; "
            "see the notes above)")


def _describe_events(events) -> list[str]:
    notes = []
    for event in events:
        kind, where = event.get("event"), str(event.get("where", "a cell"))
        if kind == "kernel_died":
            notes.append(f"the notebook's process died while running {where} (os._exit, a crash, a killed "
                         f"process or a resource limit); that cell was skipped and the notebook run again without it")
        elif kind == "cell_timeout":
            notes.append(f"{where} ran longer than {event.get('seconds')} s and was stopped (an infinite loop?); "
                         f"it was skipped and the notebook run again without it")
        elif kind == "notebook_time_limit":
            notes.append("the notebook reached its total time limit; tests that had not run yet score 0")
        elif kind == "output_truncated":
            notes.append(f"{where} printed too much output; the rest was dropped")
        elif kind in ("runner_error", "too_many_replays"):
            notes.append(f"the grader could not finish running the notebook ({event.get('detail', kind)})")
    return notes
