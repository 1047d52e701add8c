"""`make bench-waits`: where the instructor and the developer wait, each row the real command timed in a scratch copy
of the course, printed with its goal beside it, then written where the README reads it.

Each row is one small function that returns (figure, note). The scratch copy is the course's tracked files (as a
fresh clone has them, modification times kept) with the course's `.venv` linked in, and its own grader package first
on PYTHONPATH, so an edit to a hidden test there is what its commands grade with. The developer's rows are timed as CI
and a newcomer meet them: `make test` in a `git clone` of the course with nothing installed (install, then the run
whose record, counts and load, the root conftest.py leaves in pytest's cache folder), `make test-fast` in a fresh
copy with the course's environment (no bytecode or caches yet), `make book` from nothing in a copy with a virtual
environment of its own (uv's download cache as it is). --quick reads `make test` from its last run's record instead.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

import nbformat

from posenc_autograder.course import RELEASE_DIRECTORY, SUBMITTED_DIRECTORY, Course
from posenc_autograder.devtools import figures
from posenc_autograder.devtools.bench import solved

NAME = "bench-waits"
CLASS = 300                               # the points-change row's class
POINTS_TEST = ("positional_encoding", "sinusoidal.py", "hidden_pe_values")      # 4 points, made 5
RUN_RECORDS = ".pytest_cache/posenc-runs"


@dataclass(frozen=True)
class Row:
    step: str
    goal: str
    measure: Callable[[pathlib.Path, pathlib.Path], tuple[str, str]]   # (source root, scratch folder) -> figure, note
    slow: bool = False                    # minutes of its own: skipped by --quick
    quick: Callable[[pathlib.Path, pathlib.Path], tuple[str, str]] | None = None   # what --quick shows instead


def tracked_files(source_root: pathlib.Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=source_root, capture_output=True, check=True).stdout
    return [name for name in listed.decode().split("\0") if name]


def scratch_course(source_root: pathlib.Path, folder: pathlib.Path, with_venv: bool = True) -> pathlib.Path:
    """A fresh copy of the course: its tracked files, times kept (so make sees the venv as up to date)."""
    for name in tracked_files(source_root):
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if (source_root / name).is_file():
            shutil.copy2(source_root / name, target)
    if with_venv:
        (folder / ".venv").symlink_to((source_root / ".venv").resolve())
    return folder


def clone(source_root: pathlib.Path, folder: pathlib.Path) -> pathlib.Path:
    """A `git clone` of the committed course, as CI and a newcomer get it (some tests read the checkout through git:
    a plain copy of the tracked files failed 25 of them)."""
    subprocess.run(["git", "-c", "advice.detachedHead=false", "clone", "-q", str(source_root), str(folder)], check=True)
    return folder


def keep_times(source_root: pathlib.Path, root: pathlib.Path) -> None:
    """A clone's tracked files given the source's times, so make sees the venv linked from the source as up to date
    (every prerequisite of its stamp, whichever files the Makefile names)."""
    for name in tracked_files(source_root):
        if (source_root / name).is_file() and (root / name).is_file():
            shutil.copystat(source_root / name, root / name)


def make(root: pathlib.Path, *targets: str, check: bool = True, own_venv: bool = False) -> float:
    """Wall seconds of `make <targets>` in the scratch course, its own package first on the path where it shares the
    course's venv (a clone with a venv of its own imports its own package, and some tests check that nothing else
    on PYTHONPATH is seen: a wheel's venv, the book reader's)."""
    environment = {**os.environ, "PYTHONPATH": str(root / "autograder")}
    if own_venv:
        environment.pop("PYTHONPATH")
    started = time.perf_counter()
    done = subprocess.run(["make", "-s", *targets], cwd=root, env=environment, capture_output=True, text=True)
    taken = time.perf_counter() - started
    if check and done.returncode != 0:
        raise RuntimeError(f"make {' '.join(targets)} failed in {root}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return taken


def seconds(value: float) -> str:
    if value < 120:
        return f"{value:.1f} s"
    whole = round(value)                  # rounded before it is split: 539.6 s is 9 min 0 s, not 8 min 60 s
    return f"{whole // 60} min {whole % 60} s"


def submit_class(source_root: pathlib.Path, root: pathlib.Path, students: int, assignment: str) -> None:
    """`students` submissions of one assignment: the solution, every third one the notebook as handed out."""
    good = nbformat.writes(solved(source_root, assignment))
    stub = (source_root / RELEASE_DIRECTORY / assignment / f"{assignment}.ipynb").read_text()
    for i in range(students):
        folder = root / SUBMITTED_DIRECTORY / f"student{i:03d}" / assignment
        folder.mkdir(parents=True)
        (folder / f"{assignment}.ipynb").write_text(stub if i % 3 == 0 else good)


def release_fresh(source_root, scratch):
    root = scratch_course(source_root, scratch / "fresh")
    assignments = len(Course(root).assignments())
    return seconds(make(root, "release")), f"{assignments} assignments registered"


def release_unchanged(source_root, scratch):
    root = scratch_course(source_root, scratch / "unchanged")
    make(root, "release")
    return seconds(make(root, "release")), "the second of two runs"


def points_changed(source_root, scratch):
    """Graded once (untimed); then a hidden test's points 4 -> 5 in the copy's checks, and release + grade timed."""
    root = scratch_course(source_root, scratch / "points")
    assignment, module, test_id = POINTS_TEST
    submit_class(source_root, root, CLASS, assignment)
    make(root, "release", "grade")
    path = root / "autograder" / "posenc_autograder" / "checks" / assignment / module
    source = path.read_text()
    edited, count = re.subn(rf'(id="{test_id}",[^)]*?points=)4\b', r"\g<1>5", source, count=1, flags=re.S)
    if count != 1:
        raise RuntimeError(f"{test_id} is no longer worth 4 points in {module}: choose another test")
    path.write_text(edited)
    release = make(root, "release")
    grade = make(root, "grade")
    return seconds(release + grade), f"release {seconds(release)}, grade {seconds(grade)}"


def first_grade(source_root, scratch):
    """One notebook on a course never released (no gradebook); the same notebook graded again (--force) is what a
    notebook costs, the rest is the fixed cost."""
    root = scratch_course(source_root, scratch / "first")
    submit_class(source_root, root, 2, "positional_encoding")
    first = make(root, "grade")
    again = make(root, "grade", "GRADE_ARGS=--force")
    return seconds(max(first - again, 0.0)), f"first make grade {seconds(first)}, graded again {seconds(again)}"


def last_run(source_root: pathlib.Path, name: str) -> dict | None:
    path = source_root / RUN_RECORDS / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else None


def described(record: dict) -> str:
    return (f"{record['collected']:,} tests and solution cells on {record['workers']} workers, {record['failed']} "
            f"failed (load {record['load_at_start']}-{record['load_at_end']})")


def make_test(source_root, scratch):
    """What CI runs: a clone of the committed course, nothing installed; the install and the rest timed apart. Its
    record becomes the course's last `make test` record (its slowest tests are printed below the table)."""
    root = clone(source_root, scratch / "clone")
    install = make(root, "install", own_venv=True)
    rest = make(root, "test", check=False, own_venv=True)
    record = last_run(root, "test")
    if record is None:            # a course from before make test kept a record (a before column): the wait is known
        return seconds(install + rest), f"install {seconds(install)}, then {seconds(rest)}; no record of its tests"
    kept = source_root / RUN_RECORDS / "test.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(record, indent=1) + "\n")
    return seconds(install + rest), (f"install {seconds(install)}, pytest {seconds(record['seconds'])} (the "
                                     f"type-check a test in it), lint the rest; {described(record)}")


def make_test_record(source_root, scratch):
    record = last_run(source_root, "test")
    if record is None:
        return "no record", "run make test first"
    return seconds(record["seconds"]), f"pytest only, the last run's record, {record['started']}: {described(record)}"


NO_REASON = "**none given**: make it faster, or say why in conftest.py's WHY_SLOW"


def slowest_tests(record: dict) -> str:
    """The slowest tests of a `make test` run, from its record (the root conftest.py writes them with their reason)."""
    rows = [[f"`{test['test']}`".replace("|", "\\|"), seconds(test["seconds"]), seconds(test["setup"]),
             test.get("why") or NO_REASON] for test in record.get("slowest", [])]
    if not rows:
        return ""
    return (f"The {len(rows)} slowest tests of that `make test` ({record['started']}, load {record['load_at_start']}-"
            f"{record['load_at_end']}; a test's seconds count its setup, a group's shared fixtures paid by its first "
            f"test):\n\n" + figures.table(["test", "seconds", "of which setup", "why it stays slow"], rows))


def make_test_fast(source_root, scratch):
    """In a fresh clone with the course's environment linked in: the first run, with no bytecode or cache, is the
    figure."""
    root = clone(source_root, scratch / "fast")
    (root / ".venv").symlink_to((source_root / ".venv").resolve())
    keep_times(source_root, root)
    first = make(root, "test-fast", check=False)
    again = make(root, "test-fast", check=False)
    record = last_run(root, "test-fast")
    if record is None:                    # make stopped before pytest (lint, the venv): no figure of the tests
        raise RuntimeError("make test-fast ran no test in the clone (its run record is missing)")
    return seconds(first), (f"{record['collected']} tests, lint included, {record['failed']} failed; "
                            f"run again {seconds(again)}")


def make_book(source_root, scratch):
    root = scratch_course(source_root, scratch / "book", with_venv=False)
    install = make(root, "install", own_venv=True)
    build = make(root, "book", own_venv=True)
    return seconds(install + build), f"install {seconds(install)} (uv's cache as it was), build {seconds(build)}"


def bench_portal(source_root, scratch):
    record = source_root / figures.FIGURES_DIRECTORY / "bench-portal.md"
    if not record.is_file():
        return "not measured here", "make bench-portal prints it (minutes: run it on its own)"
    return "see bench-portal", str(record.relative_to(source_root))


ROWS = [
    Row("`make release`, fresh copy", "<= 10 s", release_fresh),
    Row("`make release` with nothing changed", "<= 3 s", release_unchanged),
    Row(f"a hidden test's points changed (4 -> 5): `make release` + `make grade`, class of {CLASS}", "<= 10 s",
        points_changed, slow=True),
    Row("the first `make grade` on a course never released: its fixed cost", "<= 3 s", first_grade),
    Row("`make test` from a fresh clone, install included", "<= 8 min idle", make_test, slow=True,
        quick=make_test_record),
    Row("`make test-fast`", "<= 30 s idle", make_test_fast, slow=True),
    Row("`make book` from nothing", "<= 2 min idle", make_book, slow=True),
    Row("`make bench-portal`: 2,000 students in 5 minutes, 10 hostile", "all graded, p95 <= 10 s", bench_portal),
]


def arguments(parser) -> None:
    parser.add_argument("--quick", action="store_true", help="leave out the rows that take minutes of their own")
    parser.add_argument("--only", action="append", default=[], help="a row's function name (repeatable)")
    parser.add_argument("--no-write", action="store_true", help="print only: no figures file, README untouched")
    parser.add_argument("--before", metavar="COMMIT", help="time every row on this commit too, each row on it just "
                        "before the same row now, in the same run: a before column beside the figures")


def before_course(source_root: pathlib.Path, commit: str, folder: pathlib.Path) -> pathlib.Path:
    """The course as it was at `commit`: a clone checked out there, with an environment of its own installed from its
    own requirements (its rows copy and link it as they do the course now)."""
    root = clone(source_root, folder)
    subprocess.run(["git", "checkout", "-q", "--detach", commit], cwd=root, check=True)
    make(root, "install", own_venv=True)
    return root


def commit(root: pathlib.Path) -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


def measured_row(row: Row, source_root: pathlib.Path, scratch: pathlib.Path, quick: bool) -> tuple[str, str]:
    measure = row.quick if quick and row.slow else row.measure
    if measure is None:
        return "not measured", "left out of this run (--quick)"
    scratch.mkdir(parents=True)
    try:
        return measure(source_root, scratch)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        return "failed", str(exc).splitlines()[0]


def run_command(args) -> int:
    source_root = Course().root
    started, load = time.time(), os.getloadavg()[0]
    measuring = commit(source_root)      # what the rows measure: a commit landing during the run is not theirs
    measured = []
    with tempfile.TemporaryDirectory(prefix="posenc-waits-") as tmp:
        before = before_course(source_root, args.before, pathlib.Path(tmp) / "before-course") if args.before else None
        for row in ROWS:
            if args.only and row.measure.__name__ not in args.only:
                continue
            cells = [row.step]
            if before is not None:             # just before the same row now: the two meet the same machine
                was, how = measured_row(row, before, pathlib.Path(tmp) / "before" / row.measure.__name__, args.quick)
                cells.append(was)
            figure, note = measured_row(row, source_root, pathlib.Path(tmp) / row.measure.__name__, args.quick)
            cells += [figure, row.goal, note + (f"; before: {how}" if before is not None else "")]
            print("   ".join(cells), flush=True)
            measured.append(cells)
    header = ["step"] + ([f"before ({args.before})", f"now ({measuring})"] if before is not None
                         else ["measured"]) + ["goal", "how"]
    name = NAME + (" QUICK=1" if args.quick else "") + (f" BEFORE={args.before}" if args.before else "")
    text = figures.table(header, measured) + "\n" + figures.provenance(started, load).format(name=name) + "\n"
    record = last_run(source_root, "test")
    if record and (not args.only or "make_test" in args.only):
        text += "\n" + slowest_tests(record)
    print("\n" + text)
    if not args.no_write and not args.only:
        print(f"written to {figures.publish(source_root, NAME, text).relative_to(source_root)} and the README")
    return 0
