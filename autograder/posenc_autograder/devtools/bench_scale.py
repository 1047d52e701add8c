"""`make bench-scale N="100 300 1000"`: a generated class of each size graded by `make grade`, then `make integrity`.

The class comes from the mistake catalogue (checks/positional_encoding/catalogue.py): about 60 % correct
with stylistic variations (the catalogue's alternative ways, a helper of their own), 25 % with one of
three common mistakes, 10 % untouched, 5 % verbatim copies of a classmate. Each command runs as the
instructor runs it (a subprocess, 2 jobs); its process tree (grader and sandboxes) is sampled for
memory. Prints, per size: wall time, time per notebook, peak memory of the grading process and of the
whole tree, integrity evidence and results on disk per student, `make integrity`'s time and memory,
and the growth exponents between sizes.
"""
from __future__ import annotations

import math
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

import nbformat

from posenc_autograder.course import Course, grade_id
from posenc_autograder.devtools import figures
from posenc_autograder.devtools.bench import ASSIGNMENT, NOTEBOOK, make_class, solved

SHARES = (("correct", 0.60), ("common mistake", 0.25), ("untouched", 0.10), ("copy", 0.05))
COMMON = 3                     # distinct common mistakes the 25 % share between them
SAMPLE_SECONDS = 0.2


def catalogue(source_root: pathlib.Path):
    from posenc_autograder.checks import REGISTRY
    from posenc_autograder.checks.positional_encoding.catalogue import ALTERNATIVES, MISTAKES
    mistakes = [m for m in MISTAKES if REGISTRY[m.failing_check].assignment == ASSIGNMENT]
    return [ALTERNATIVES[name] for name in sorted(ALTERNATIVES)], mistakes


def _defined_name(code: str) -> str | None:
    found = re.search(r"^(?:def|class) (\w+)", code, re.M)
    return found.group(1) if found else None


def with_code(nb, *overrides: str):
    """The notebook with each override in a cell of its own, right after the answer cell it replaces."""
    nb = nbformat.from_dict(nb)
    for code in overrides:
        name = _defined_name(code)
        index = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code" and name
                      and re.search(rf"^(?:def|class) {name}\b", c.source, re.M)), None)
        if index is not None:
            nb.cells.insert(index + 1, nbformat.v4.new_code_cell(code))
    return nb


def own_helper(rng: random.Random) -> str:
    """A few lines no classmate wrote: real students' code differs beyond the choice of method."""
    numbers = [rng.randrange(10**6, 10**7) for _ in range(6)]
    return (f"def sinusoidal_positional_encoding_check():\n    limits = [{numbers[0]}, {numbers[1]}, {numbers[2]}]\n"
            f"    return sum(limits) - {numbers[3]} * {numbers[4]} // {numbers[5]}\n")


def generate(source_root: pathlib.Path, root: pathlib.Path, students: int, seed: int = 0) -> Course:
    course = make_class(source_root, root, 0)
    alternatives, mistakes = catalogue(source_root)
    common = mistakes[:COMMON]
    good = solved(source_root)
    release = nbformat.read(source_root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    rng = random.Random(seed)
    written: list = []
    for i in range(students):
        kind = rng.choices([k for k, _ in SHARES], [w for _, w in SHARES])[0]
        helper = own_helper(rng)
        if kind == "untouched" or (kind == "copy" and not written):
            nb = release
        elif kind == "copy":
            nb = rng.choice(written)
        elif kind == "common mistake":
            nb = with_code(good, rng.choice(common).code, helper)
        else:
            nb = with_code(good, *rng.sample(alternatives, rng.randint(0, 2)), helper)
        if kind != "untouched":
            written.append(nb)
        folder = course.submitted / f"student{i:04d}" / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    return course


# --- measuring a command ---------------------------------------------------------------------------

def _tree(pid: int) -> list[int]:
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    found, queue = [], [pid]
    while queue:
        current = queue.pop()
        found.append(current)
        queue += children.get(current, [])
    return found


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def measured(command: list[str]) -> dict:
    """Run a command; wall seconds, exit status, peak RSS of its own process and of its whole tree."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peaks = {"own": 0, "tree": 0}

    def sample():
        while process.poll() is None:
            sizes = [_rss(p) for p in _tree(process.pid)]
            peaks["own"] = max(peaks["own"], sizes[0] if sizes else 0)
            peaks["tree"] = max(peaks["tree"], sum(sizes))
            time.sleep(SAMPLE_SECONDS)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    status = process.wait()
    sampler.join()
    return {"seconds": time.perf_counter() - started, "status": status, **peaks}


def _bytes(folder: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0


# The attack suite's notebooks aimed at the grader's memory (tests/support/hostile_notebooks.py).
MEMORY_ATTACKS = ("amplification_frames", "huge_return_value", "memory_and_output_flood", "raw_fd_output_flood",
                  "reserved_codec_keys", "odd_return_values", "forge_channel_frames")


def hostile(source_root: pathlib.Path, root: pathlib.Path, students: int, seed: int = 0) -> Course:
    """The attack suite's notebooks aimed at memory, each as one student, twice, beside `students` honest ones:
    the trusted side's memory with the worst a class can send."""
    course = generate(source_root, root, students, seed)
    sys.path.insert(0, str(source_root / "tests" / "support"))
    from hostile_notebooks import ATTACKS
    release = nbformat.read(source_root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    imports = next(i for i, c in enumerate(release.cells) if grade_id(c) == "imports")
    for name, source in [(f"{name}-{copy}", ATTACKS[name]) for name in MEMORY_ATTACKS for copy in (1, 2)]:
        nb = nbformat.from_dict(release)
        nb.cells.insert(imports + 1, nbformat.v4.new_code_cell(source))
        folder = course.submitted / f"attack-{name.replace('_', '-')}" / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    return course


def run(source_root: pathlib.Path, students: int, jobs: int, build_class=generate) -> dict:
    with tempfile.TemporaryDirectory(prefix="posenc-scale-") as tmp:
        course = build_class(source_root, pathlib.Path(tmp) / "class", students)
        cli = [sys.executable, "-m", "posenc_autograder"]
        grade = measured(cli + ["grade", "--course", str(course.root), "--jobs", str(jobs)])
        integrity = measured(cli + ["integrity", "--course", str(course.root)])
        evidence = _bytes(course.work / "integrity")
        results = _bytes(course.autograded)
    return {"n": students, "grade": grade, "integrity": integrity, "evidence": evidence / students,
            "results": results / students}


def exponent(rows: list[dict], value) -> str:
    """Growth exponent between the smallest and largest class: value ~ N^k."""
    first, last = rows[0], rows[-1]
    if len(rows) < 2 or value(first) <= 0 or value(last) <= 0:
        return "-"
    return f"{math.log(value(last) / value(first)) / math.log(last['n'] / first['n']):.2f}"


NAME = "bench-scale"              # with --hostile: bench-scale-hostile, figures of their own


def table(rows: list[dict], hostile: bool = False) -> str:
    """The figures as a Markdown table, a row per class size and the growth exponents between the smallest and the
    largest, then when and how they were measured (autograder/figures/bench-scale.md and the README's block)."""
    gib, mb = 2**30, 2**20
    columns = [
        ("students", lambda r: r["n"], "{:d}"),
        ("`make grade`", lambda r: r["grade"]["seconds"], "{:.0f} s"),
        ("per notebook", lambda r: r["grade"]["seconds"] / r["n"], "{:.2f} s"),
        ("grader peak", lambda r: r["grade"]["own"] / gib, "{:.2f} GiB"),
        ("grader + sandboxes peak", lambda r: r["grade"]["tree"] / gib, "{:.2f} GiB"),
        ("evidence a student", lambda r: r["evidence"] / mb, "{:.3f} MB"),
        ("results a student", lambda r: r["results"] / mb, "{:.2f} MB"),
        ("`make integrity`", lambda r: r["integrity"]["seconds"], "{:.1f} s"),
        ("its peak", lambda r: r["integrity"]["tree"] / gib, "{:.2f} GiB"),
    ]
    body = [[form.format(value(r)) for _, value, form in columns] for r in rows]
    if len(rows) > 1:
        body.append([f"growth exponent ({rows[0]['n']} → {rows[-1]['n']})"]
                    + [exponent(rows, value) for _, value, _ in columns[1:]])
    return (figures.table([name for name, _, _ in columns], body)
            + ("\nEach class beside the attack suite's memory attacks, twice each (--hostile).\n" if hostile else ""))


def arguments(parser) -> None:
    parser.add_argument("sizes", nargs="*", type=int, default=[100, 300, 1000])
    parser.add_argument("--hostile", action="store_true", help="add the attack suite's memory attacks to each class")
    parser.add_argument("--no-write", action="store_true", help="print only: no figures file, README untouched")
    parser.set_defaults(jobs=2)


def run_command(args) -> int:
    source_root = Course().root
    started, load = time.time(), os.getloadavg()[0]
    name = NAME + "-hostile" if args.hostile else NAME
    rows = []
    for n in args.sizes:
        row = run(source_root, n, args.jobs, hostile if args.hostile else generate)
        rows.append(row)
        bad = [c for c in ("grade", "integrity") if row[c]["status"] not in (0, 1)]
        print(f"N={n}: grade {row['grade']['seconds']:.0f} s (exit {row['grade']['status']}), integrity "
              f"{row['integrity']['seconds']:.1f} s (exit {row['integrity']['status']})"
              + (f"; FAILED: {bad}" if bad else ""), flush=True)
    text = table(rows, args.hostile) + "\n" + figures.provenance(started, load).format(
        name=NAME + (" HOSTILE=1" if args.hostile else "")) + "\n"
    print("\n" + text)
    if not args.no_write:
        print(f"written to {figures.publish(source_root, name, text).relative_to(source_root)} and the README")
    return 0

