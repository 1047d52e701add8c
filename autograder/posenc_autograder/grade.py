"""`make grade`: every submission under autograder/submitted → gradebook, feedback, grades.csv, report.

    python -m posenc_autograder.grade [--jobs N] [--assignment A] [--student S] [--force]
                                      [--no-sandbox] [--scheduler tcp://host:8786] [--db-url URL]

Exit status: 0 when every submission was graded (possibly with problems worth reporting),
1 when something could not be graded (missing or unreadable notebook, sandbox failure),
2 when grading could not start (no sandbox on this machine).
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import pathlib
import sys
import time

from . import feedback, gradebook, report
from .course import RELEASE_DIRECTORY, Course
from .executors import default_jobs, run_dask, run_local
from .pipeline import GradingTask, NotebookResult, GradedTest, judge, prepare
from .sandbox import Limits, SandboxUnavailable, check_sandbox, process_limit_enforced
from .submissions import Submission, discover, sha256


def grader_fingerprint(course: Course) -> str:
    """Changes whenever the checks or the released notebooks change, so cached results are redone."""
    digest = hashlib.sha256()
    package = pathlib.Path(__file__).parent
    for path in sorted(package.rglob("*.py")) + sorted(course.path(RELEASE_DIRECTORY).rglob("*.ipynb")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _sidecar(course: Course, sub: Submission) -> pathlib.Path:
    return course.autograded / sub.student / sub.assignment / f"{sub.notebook}.result.json"


def _load_previous(course: Course, sub: Submission) -> dict | None:
    path = _sidecar(course, sub)
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except ValueError:
        return None


def _result_from_json(data: dict) -> NotebookResult:
    tests = [GradedTest(**t) for t in data["tests"]]
    return NotebookResult(**{**data, "tests": tests})


def keep_higher_scores(result: NotebookResult, previous: dict | None, digest: str | None) -> NotebookResult:
    """Re-grading the same file never lowers a test's score (a loaded machine can time out a good answer)."""
    if previous is None or digest is None or previous.get("sha256") != digest:
        return result
    before = {t["cell_id"]: t for t in previous["result"]["tests"]}
    kept = []
    for test in result.tests:
        old = before.get(test.cell_id)
        if old and old["points"] > test.points and old["max_points"] == test.max_points:
            kept.append(test.cell_id)
            test.points, test.problems = old["points"], old["problems"]
    if kept:
        result.notes.append(f"this run scored lower on {', '.join(kept)} for an unchanged file; the earlier, "
                            f"higher scores were kept")
    return result


class Progress:
    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.done, self.stream, self.started = total, 0, stream, time.monotonic()

    def step(self, label: str) -> None:
        self.done += 1
        if self.stream is None:
            return
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        elapsed = time.monotonic() - self.started
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {elapsed:5.0f}s {label[:40]}"
        if self.stream.isatty():
            self.stream.write("\r" + line.ljust(100) + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def finish(course: Course, gb, sub: Submission, result: NotebookResult, digest: str | None, fingerprint: str,
           executed_notebook: str | None = None) -> NotebookResult:
    result = keep_higher_scores(result, _load_previous(course, sub), digest)
    gradebook.record_scores(gb, sub.student, sub.assignment, sub.notebook, {t.cell_id: t.points for t in result.tests})
    feedback.write(result, course.feedback)
    sidecar = _sidecar(course, sub)
    sidecar.parent.mkdir(parents=True, exist_ok=True)
    if executed_notebook:
        (sidecar.parent / f"{sub.notebook}.ipynb").write_text(executed_notebook)
    sidecar.write_text(json.dumps({"sha256": digest, "fingerprint": fingerprint,
                                   "result": dataclasses.asdict(result)}, indent=1))
    return result


def grade_all(course: Course, *, jobs: int, isolate: bool = True, force: bool = False,
              assignments: list[str] | None = None, students: list[str] | None = None,
              scheduler: str | None = None, limits: Limits = Limits(), quiet: bool = False) -> list[NotebookResult]:
    submissions = discover(course, assignments, students)
    for assignment in sorted({s.assignment for s in submissions}):
        gradebook.register(course, assignment, course.work / "release")
    fingerprint = grader_fingerprint(course)
    with gradebook.open_gradebook(course) as gb:
        return _grade_submissions(course, gb, submissions, fingerprint, jobs=jobs, isolate=isolate, force=force,
                                  scheduler=scheduler, limits=limits, quiet=quiet)


def _grade_submissions(course, gb, submissions, fingerprint, *, jobs, isolate, force, scheduler, limits, quiet):
    progress = Progress(len(submissions), stream=None if quiet else sys.stderr)
    results: list[NotebookResult] = []
    pending: dict[tuple, tuple[Submission, str | None]] = {}
    tasks: list[GradingTask] = []
    for sub in submissions:
        digest = sha256(sub.path) if sub.path else None
        previous = _load_previous(course, sub)
        if (not force and previous and digest and previous.get("sha256") == digest
                and previous.get("fingerprint") == fingerprint):
            results.append(_result_from_json(previous["result"]))     # unchanged file, unchanged grader
            progress.step(f"{sub.student} (unchanged)")
            continue
        prepared = prepare(course, sub, limits, isolate)
        if isinstance(prepared, NotebookResult):
            results.append(finish(course, gb, sub, prepared, digest, fingerprint))
            progress.step(sub.student)
        else:
            pending[prepared.key] = (sub, digest)
            tasks.append(prepared)
    executions = run_dask(tasks, scheduler) if scheduler else run_local(tasks, jobs, course.root)
    for execution in executions:
        sub, digest = pending[execution.key]
        results.append(finish(course, gb, sub, judge(course, sub, execution, limits), digest, fingerprint,
                              execution.executed_notebook))
        progress.step(sub.student)
    results.sort(key=lambda r: (r.student, r.assignment, r.notebook))
    report.write_all(course, gb, results)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make grade", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=0, help="parallel sandboxes (default: every core)")
    parser.add_argument("--assignment", action="append", help="grade only this assignment (repeatable)")
    parser.add_argument("--student", action="append", help="grade only this student (repeatable)")
    parser.add_argument("--force", action="store_true", help="regrade unchanged submissions too")
    parser.add_argument("--no-sandbox", action="store_true", help="run student code without isolation (unsafe)")
    parser.add_argument("--scheduler", help="address of a Dask scheduler to run the jobs on")
    parser.add_argument("--db-url", help="gradebook database URL (default: SQLite in autograder/)")
    parser.add_argument("--root", type=pathlib.Path, default=None, help="course root (default: this repository)")
    args = parser.parse_args(argv)
    course = Course(args.root.resolve(), args.db_url) if args.root else Course(db_url=args.db_url)
    if not args.no_sandbox:
        try:
            check_sandbox(course.root)
        except SandboxUnavailable as exc:
            print(f"Cannot grade safely: {exc}", file=sys.stderr)
            return 2
        if not process_limit_enforced():
            print("Warning: no writable cgroup pids controller here, so the number of processes a "
                  "submission starts is not capped; a fork bomb is stopped only at the notebook time limit. "
                  "Grade as root on a host with cgroups (v1 or v2) to cap it.", file=sys.stderr)
    results = grade_all(course, jobs=args.jobs or default_jobs(), isolate=not args.no_sandbox, force=args.force,
                        assignments=args.assignment, students=args.student, scheduler=args.scheduler)
    print(report.summary(course, results))
    return 0 if all(r.graded for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
