"""The README's performance figures are the benchmarks' own: each `<!-- figures: name -->` block of the README is
what the benchmark wrote to autograder/figures/<name>.md, so a figure typed in by hand fails here."""
import argparse
import pathlib

from posenc_autograder.devtools import figures

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / figures.README).read_text()


def test_every_figures_block_of_the_readme_is_its_benchmarks_file():
    written = figures.written_figures(ROOT)
    in_readme = figures.blocks(README)
    assert set(in_readme) == set(written), "a README block without its file, or a file the README leaves out"
    for name, body in in_readme.items():
        assert body == written[name], f"the README's {name} figures differ from {figures.FIGURES_DIRECTORY}/{name}.md"


def test_publishing_replaces_only_its_own_block(tmp_path):
    text = ("intro 1.0 s\n<!-- figures: one -->\n| old | 9 s |\n<!-- end figures -->\nmiddle\n"
            "<!-- figures: two -->\nkept\n<!-- end figures -->\n")
    (tmp_path / figures.README).write_text(text)
    figures.publish(tmp_path, "one", "| new | 2 s |\n")
    assert (tmp_path / figures.README).read_text() == text.replace("| old | 9 s |", "| new | 2 s |")
    assert figures.written_figures(tmp_path) == {"one": "| new | 2 s |\n"}


def test_every_benchmark_writes_a_block_the_readme_has():
    from posenc_autograder.devtools import bench, bench_scale, bench_waits, portal_load
    names = {bench.NAME, bench_scale.NAME, bench_scale.NAME + "-hostile", portal_load.NAME, bench_waits.NAME}
    assert names == set(figures.blocks(README))


def test_bench_writes_its_ratios_and_phases_from_the_measurements():
    from posenc_autograder.devtools import bench
    text = bench.ClassFigures(students=10, jobs=2, stock_wall=90.0, stock_cpu=20.0, ours_wall=6.0, ours_cpu=4.0,
                              idle_cpu=0.3).text()
    assert "| stock `nbgrader autograde`, sequential | 90.0 s | 2.000 s |" in text
    assert "15.0× faster than stock in wall time" in text and "5.0× in CPU" in text
    phases = ({phase: 0.1 for phase in bench.costs.PHASES}, 1.2, 5.0, 2)         # CPU per phase, all, wall, notebooks
    rows = bench.phase_rows({"a": phases}, {"a": phases}, 0.02, 0.17, {"a": 0.01})
    table = bench.per_notebook_text(rows, ["a"], 2, 2)
    assert "| **total** | **0.600** |" in table and f"| {bench.EMPTY_CELL} | 0.170 |" in table


def test_bench_scale_writes_units_and_growth_exponents():
    from posenc_autograder.devtools import bench_scale

    def row(n, seconds):
        run = {"seconds": seconds, "status": 0, "own": 2**29, "tree": 2**30}
        return {"n": n, "grade": run, "integrity": run, "evidence": 30_000 * n, "results": 80_000}
    text = bench_scale.table([row(100, 100.0), row(400, 200.0)])
    assert "| 100 | 100 s | 1.00 s | 0.50 GiB | 1.00 GiB |" in text
    assert "| growth exponent (100 → 400) | 0.50 | -0.50 |" in text


def test_bench_portal_writes_each_rush_and_the_hostile_ratio():
    from posenc_autograder.devtools import portal_load

    def rush(p95, attacks):
        return {"students": 20, "graded": 20, "errors": 0, "wall": 30.0, "p50": 0.5, "p95": p95, "idle_seconds": 0.4,
                "parts": {"queue": (0.1, 0.3, 0.5)}, "portal_cpu": 4.0, "own_mb": 200.0, "total_mb": 400.0,
                "attacks": attacks, "hostile_jobs": {}}
    text = portal_load.figures_text([("SQLite, honest", rush(1.0, {})),
                                     ("SQLite, with 2 hostile", rush(1.5, {"flooder refused": 7}))], 20, 60, 2)
    assert "| SQLite, honest | 20 of 20 | 30 s | 0.5 s / 1.0 s | 0.3 s | 0.4 s |" in text
    assert "SQLite, with 2 hostile: honest p95 1.50 times the honest rush's" in text and "flooder refused x7" in text


def test_bench_waits_lists_the_slowest_tests_with_their_reason_or_says_there_is_none():
    from posenc_autograder.devtools import bench_waits
    record = {"started": "2026-11-28 12:00 UTC", "load_at_start": 0.5, "load_at_end": 1.5, "slowest": [
        {"test": "tests/book/test_book.py::test_book_builds_without_warnings", "seconds": 150.0, "setup": 100.0,
         "why": "the book's build"},
        {"test": "tests/x.py::test_y[a|b]", "seconds": 61.0, "setup": 0.0, "why": None}]}
    text = bench_waits.slowest_tests(record)
    assert "The 2 slowest tests of that `make test` (2026-11-28 12:00 UTC, load 0.5-1.5" in text
    built = "| `tests/book/test_book.py::test_book_builds_without_warnings` | 2 min 30 s | 100.0 s | the book's build |"
    assert built in text
    assert f"| `tests/x.py::test_y[a\\|b]` | 61.0 s | 0.0 s | {bench_waits.NO_REASON} |" in text
    assert bench_waits.slowest_tests({"started": "-"}) == ""


def test_bench_waits_writes_minutes_and_seconds_that_carry():
    from posenc_autograder.devtools import bench_waits
    assert bench_waits.seconds(119.94) == "119.9 s"
    assert bench_waits.seconds(150.0) == "2 min 30 s"
    assert bench_waits.seconds(539.6) == "9 min 0 s"
    assert bench_waits.seconds(479.4) == "7 min 59 s"


def test_bench_waits_times_each_row_on_the_commit_before_just_before_it_times_it_now(tmp_path, monkeypatch, capsys):
    from posenc_autograder.devtools import bench_waits
    before, order, heads = tmp_path / "before-course", [], ["abc1234"]

    def release(source_root, scratch):
        order.append(source_root)
        heads.append("def5678")                 # main moves on while the rows run: they measured abc1234
        return ("1.0 s" if source_root == before else "2.0 s"), f"in {scratch.name}"

    def grade(source_root, scratch):
        return release(source_root, scratch)
    monkeypatch.setattr(bench_waits, "ROWS", [bench_waits.Row("release", "<= 3 s", release),
                                              bench_waits.Row("grade", "<= 9 s", grade)])
    monkeypatch.setattr(bench_waits, "before_course", lambda source_root, commit, folder: before)
    monkeypatch.setattr(bench_waits, "commit", lambda root: heads[-1])
    args = argparse.Namespace(quick=False, only=[], no_write=True, before="7d5152a")
    assert bench_waits.run_command(args) == 0
    now = bench_waits.Course().root
    assert order == [before, now, before, now]
    text = capsys.readouterr().out
    assert "| step | before (7d5152a) | now (abc1234) | goal | how |" in text      # as it was when the run began
    assert "| release | 1.0 s | 2.0 s | <= 3 s | in release; before: in release |" in text
    assert "`make bench-waits BEFORE=7d5152a`" in text


def test_a_clone_with_the_courses_venv_linked_is_seen_up_to_date_by_make(tmp_path):
    """bench-waits' test-fast row runs in a fresh clone sharing this venv: make must not try to build the venv again
    (it did once the stamp gained a prerequisite beside requirements.txt: the row read 0.1 s for a run of no test)."""
    import subprocess

    from posenc_autograder.devtools import bench_waits
    clone = bench_waits.clone(ROOT, tmp_path / "clone")
    (clone / ".venv").symlink_to((ROOT / ".venv").resolve())
    bench_waits.keep_times(ROOT, clone)
    planned = subprocess.run(["make", "-n", "test-fast"], cwd=clone, capture_output=True, text=True, check=True).stdout
    assert "-m venv" not in planned and "pip install" not in planned
    assert "pytest" in planned
