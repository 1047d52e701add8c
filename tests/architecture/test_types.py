"""The grader package type-checks: mypy with mypy.ini, as `make typecheck` runs it. A test, so that `make test`
schedules it beside the others on a worker (from a fresh clone it is ~16 CPU-s of mypy alone, which a run's
waiting workers leave room for) instead of before the first test starts.

A clone without mypy's cache (.mypy_cache) starts from a copy of the last passing run's cache on this machine, kept
in the user's cache folder as pip keeps its downloads: mypy checks each cached module's source against its hash, so
what changed is checked again (the grader package of a fresh clone, ~4 CPU-s), and only what did not (numpy's and the
other libraries' stubs, ~16 CPU-s of the ~21 from nothing) is read from the copy."""
import os
import pathlib
import shutil
import subprocess
import sys

import precompile

ROOT = pathlib.Path(__file__).resolve().parents[2]
CACHE = ROOT / ".mypy_cache"
SEED = precompile.USER_CACHE / "mypy"


def test_the_grader_package_type_checks():
    seeded = not CACHE.exists() and copy_tree(SEED, CACHE)
    run = mypy()
    if run.returncode != 0 and seeded:       # what it found is found again from nothing, not a copy's fault
        shutil.rmtree(CACHE)
        run = mypy()
    assert run.returncode == 0, f"mypy (mypy.ini) found:\n{run.stdout}{run.stderr}"
    keep_seed(CACHE, SEED)


def mypy() -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)


def copy_tree(source: pathlib.Path, target: pathlib.Path) -> bool:
    """Copy source to target; False (and nothing at target) if source is missing or was replaced meanwhile."""
    try:
        shutil.copytree(source, target)
        return True
    except OSError:
        shutil.rmtree(target, ignore_errors=True)
        return False


def keep_seed(cache: pathlib.Path, seed: pathlib.Path) -> None:
    """Replace the seed with this passing run's cache: a copy renamed into place, so that a clone copying the seed
    meanwhile reads the old one whole or fails and starts cold. Best effort: the check passed either way."""
    fresh, old = (seed.with_name(f"mypy-{os.getpid()}{end}") for end in ("", "-old"))
    try:
        seed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(cache, fresh)
        if seed.exists():
            seed.rename(old)
        fresh.rename(seed)
    except OSError:
        pass
    finally:
        for leftover in (fresh, old):
            shutil.rmtree(leftover, ignore_errors=True)
