"""The grader package type-checks: mypy with mypy.ini, as `make typecheck` runs it. A test, so that `make test`
schedules it beside the others on a worker (from a fresh clone it is ~16 CPU-s of mypy alone, which a run's
waiting workers leave room for) instead of before the first test starts."""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_grader_package_type_checks():
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, f"mypy (mypy.ini) found:\n{run.stdout}{run.stderr}"
