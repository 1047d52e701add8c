"""A fresh checkout's bytecode, made once before the workers of a test run start instead of by each of them.

Every pytest-xdist worker collects every test module: in a checkout without bytecode, each rewrites every test
module's asserts (pytest's assertion rewriting: ~4 CPU-s a process for tests/) and compiles the grader package, both
workers at the same moment, the same work twice. The run's main process, which collects nothing, finds what has no
valid bytecode yet and has it made first by as many forked children as there are workers, each a share, with
pytest's own rewriting and compileall; the workers then read it as they read any bytecode of an earlier run.
Only a speed-up: what a child did not write (a failure, a file it could not read) a worker makes as it always did.

A rewritten module is also kept in the user's cache folder (SEED), named by the digest of its source: a new checkout
of the same tests (a clone, a work tree) copies it instead of rewriting. pytest's bytecode carries its source's hash,
which pytest checks before it runs any (and it corrects the file name the code was made under), so a copy of another
source, or one cut short, is rewritten again, never run.
"""
from __future__ import annotations

import compileall
import fnmatch
import hashlib
import importlib.util
import os
import pathlib
import shutil
import sys

# pytest's own rewriting, private: a pytest without one of them leaves the rewriting to the workers
# the tests' own folder in the user's cache (as pip keeps its downloads there): what a new checkout need not make again
USER_CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "posenc-course"
SEED = USER_CACHE / "pytest-rewritten"
MAX_SEEDED = 2000                 # rewritten modules kept in SEED (some 2 MB), the least recently used removed
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


def seeded(config, path: pathlib.Path, seed: pathlib.Path) -> pathlib.Path:
    """The name of the test module's rewritten bytecode in seed: its source's digest, what decides the rewriting
    beside it (pytest's version, in PYC_TAIL, and whether its assertion-pass hook is on)."""
    from _pytest.assertion import rewrite
    hook = int(bool(config.getini("enable_assertion_pass_hook")))
    return seed / f"{hashlib.sha256(path.read_bytes()).hexdigest()[:40]}-{hook}{rewrite.PYC_TAIL}"


def recalled(config, path: pathlib.Path, seed: pathlib.Path) -> bool:
    """The module's rewritten bytecode copied from seed, and found valid where pytest looks for it."""
    try:
        kept = seeded(config, path, seed)
        target = rewritten_pyc(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}.{os.getpid()}")
        shutil.copyfile(kept, partial)
        partial.replace(target)               # whole or absent, as pytest writes its own
        os.utime(kept)                        # recently used: the last to be removed
    except OSError:
        return False
    return not rewrite_is_stale(path)


def keep(config, paths: list[pathlib.Path], seed: pathlib.Path, most: int = MAX_SEEDED) -> None:
    """Copy the modules' valid rewritten bytecode into seed; then only the `most` most recently used stay."""
    try:
        seed.mkdir(parents=True, exist_ok=True)
        for path in paths:
            if not rewrite_is_stale(path):
                kept = seeded(config, path, seed)
                partial = kept.with_name(f"{kept.name}.{os.getpid()}")
                shutil.copyfile(rewritten_pyc(path), partial)
                partial.replace(kept)
        entries = sorted(seed.iterdir(), key=lambda entry: entry.stat().st_mtime, reverse=True)
        for old in entries[most:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass                                  # best effort: the next checkout rewrites what is not kept


def precompile(config, tests: list[pathlib.Path], modules: list[pathlib.Path], processes: int,
               seed: pathlib.Path | None = None) -> int:
    """Make the missing bytecode of the test modules (rewritten; copied from seed where kept there, and kept there
    once made) and of the plain modules, shared among `processes` forked children; returns how many files were
    made. Nothing when bytecode is not written (PYTHONDONTWRITEBYTECODE) or pytest's rewriting is not there to
    reuse."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    if not all(hasattr(rewrite, name) for name in PYTEST_USED) or sys.dont_write_bytecode \
            or rewrite.assertstate_key not in config.stash:
        return 0
    stale = [path for path in tests if rewrite_is_stale(path)]
    if seed is not None:
        stale = [path for path in stale if not recalled(config, path, seed)]
    work = [(True, path) for path in stale]
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
    if seed is not None:
        keep(config, stale, seed)
    return len(work)
