"""A fresh checkout's bytecode, made once before the workers of a test run start instead of by each of them.

Every pytest-xdist worker collects every test module: in a checkout without bytecode, each rewrites every test
module's asserts (pytest's assertion rewriting: ~4 CPU-s a process for tests/) and compiles the grader package, both
workers at the same moment, the same work twice. The run's main process, which collects nothing, finds what has no
valid bytecode yet and has it made first by as many forked children as there are workers, each a share, with
pytest's own rewriting and compileall; the workers then read it as they read any bytecode of an earlier run.
Only a speed-up: what a child did not write (a failure, a file it could not read) a worker makes as it always did.
"""
from __future__ import annotations

import compileall
import fnmatch
import importlib.util
import os
import pathlib
import sys

# pytest's own rewriting, private: a pytest without one of them leaves the rewriting to the workers
PYTEST_USED = ("_rewrite_test", "_write_pyc", "get_cache_dir", "try_makedirs", "PYC_TAIL", "assertstate_key")

def test_modules(config, folders: list[pathlib.Path], skip_folders: set[str]) -> list[pathlib.Path]:
    """The files under folders that pytest collects as test modules (python_files), outside the folders it does not
    enter (norecursedirs) and those named in skip_folders."""
    patterns, skipped = config.getini("python_files"), config.getini("norecursedirs")
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).parts[:-1]
            if any(part in skip_folders or any(fnmatch.fnmatch(part, p) for p in skipped) for part in parts):
                continue
            if any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns):
                found.append(path)
    return found


def rewritten_pyc(path: pathlib.Path) -> pathlib.Path:
    from _pytest.assertion import rewrite
    return rewrite.get_cache_dir(path) / (path.name[:-3] + rewrite.PYC_TAIL)


def rewrite_is_stale(path: pathlib.Path) -> bool:
    """No rewritten bytecode of this source yet (pytest keys it by the source's hash, not its time)."""
    try:
        head = rewritten_pyc(path).read_bytes()[:16]
        return head[8:16] != importlib.util.source_hash(path.read_bytes())[:8]
    except OSError:
        return True


def compile_is_stale(path: pathlib.Path) -> bool:
    try:
        return os.stat(importlib.util.cache_from_source(str(path))).st_mtime < path.stat().st_mtime
    except OSError:
        return True


def rewrite_test_module(config, path: pathlib.Path) -> None:
    """What pytest's import hook does to a test module with no bytecode: rewrite its asserts and keep the result."""
    from _pytest.assertion import rewrite
    if rewrite.try_makedirs(rewrite.get_cache_dir(path)):
        source_hash, code = rewrite._rewrite_test(path, config)
        rewrite._write_pyc(config.stash[rewrite.assertstate_key], code, source_hash, rewritten_pyc(path))


def precompile(config, tests: list[pathlib.Path], modules: list[pathlib.Path], processes: int) -> int:
    """Make the missing bytecode of the test modules (rewritten) and of the plain modules, shared among `processes`
    forked children; returns how many files had none. Nothing when bytecode is not written (PYTHONDONTWRITEBYTECODE)
    or pytest's rewriting is not there to reuse."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    if not all(hasattr(rewrite, name) for name in PYTEST_USED) or sys.dont_write_bytecode \
            or rewrite.assertstate_key not in config.stash:
        return 0
    work = [(True, path) for path in tests if rewrite_is_stale(path)]
    work += [(False, path) for path in modules if compile_is_stale(path)]
    if not work:
        return 0
    children = []
    for share in range(max(1, min(processes, len(work)))):
        pid = os.fork()
        if pid == 0:                                      # the child: its share, then out without pytest's exit
            try:
                for is_test, path in work[share::processes]:
                    try:
                        rewrite_test_module(config, path) if is_test else compileall.compile_file(path, quiet=2)
                    except Exception:                     # noqa: BLE001  (a worker meets the error as it would have)
                        pass
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        os.waitpid(pid, 0)
    return len(work)
