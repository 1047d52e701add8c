"""An ordinary (unprivileged) user for the tests that must also run the sandbox as one: when the tests run as root
(CI), a system user is created once; as an ordinary user already, there is nothing more to check. And the
interpreter, venv and grader package where that user can read them."""
import contextlib
import importlib.util
import os
import pathlib
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

TEST_USER = "posenc-sandbox-test"


def ordinary_user() -> str:
    """The test user's name (created if missing); skips the test when not root (it runs as an ordinary user)."""
    if os.geteuid() != 0:
        pytest.skip("already an ordinary user: covered by the run as the current user")
    try:
        pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", TEST_USER], check=True)
    return TEST_USER


@contextlib.contextmanager
def readable_interpreter():
    """(python, grader folder): the tests' interpreter, its venv and the grader package, hard-linked (copied if
    on another file system) under /tmp, where an ordinary user can reach them: the originals may live under a
    folder only root may enter (/root's pyenv, a `mktemp -d` clone). The sandbox binds the venv and its base as
    it binds the originals."""
    where = pathlib.Path(tempfile.mkdtemp(prefix="posenc-readable-venv-", dir="/tmp"))
    try:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        base, venv = where / "base", where / "venv"
        _link_tree(pathlib.Path(sys.base_prefix).resolve(), base)
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").symlink_to(base / "bin" / version)
        (venv / "pyvenv.cfg").write_text(f"home = {base / 'bin'}\ninclude-system-site-packages = false\n")
        (venv / "lib").mkdir()
        _link_tree(pathlib.Path(sys.prefix) / "lib" / version, venv / "lib" / version)
        grader = pathlib.Path(importlib.util.find_spec("posenc_autograder").origin).parents[1]
        _link_tree(grader / "posenc_autograder", where / "grader" / "posenc_autograder")
        for path in [where, *where.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        yield venv / "bin" / "python", where / "grader"
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _link_tree(source: pathlib.Path, target: pathlib.Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["cp", "-al", str(source), str(target)], capture_output=True).returncode:
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run(["cp", "-a", str(source), str(target)], check=True)
