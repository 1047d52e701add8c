"""An ordinary (unprivileged) user for the tests that must also run the sandbox as one: when the tests run as root
(CI), a system user is created once; as an ordinary user already, there is nothing more to check. And the
interpreter, venv and grader package where that user can read them."""
import contextlib
import importlib.util
import os
import pathlib
import pwd
import shlex
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


def reachable_as(user: str, command: list[str], paths: list[str]) -> list[str]:
    """`command` run as `user` in a mount namespace of its own where `paths` (the interpreter, the venv, the grader
    package: as they are, where grading runs them) can be reached. Each folder above them that other users may not
    enter (/root, 0700, holding pyenv's Python) is covered there, and only there, by an enterable tmpfs that holds
    just the way down to them; nothing else of it is visible and nothing changes on the host. Needs root, as
    creating the user does: a few milliseconds where readable_interpreter's copies take tens of seconds."""
    steps = ["set -e"]
    for number, (folder, children) in enumerate(_blocked(paths)):
        stage = f'"$stage/{number}"'
        steps += [f"mkdir {stage}", f"mount --bind {shlex.quote(folder)} {stage}",
                  f"mount -t tmpfs -o mode=0711,size=1m posenc-reachable {shlex.quote(folder)}"]
        for child in children:
            target = shlex.quote(f"{folder.rstrip('/')}/{child}")
            make = "mkdir" if os.path.isdir(os.path.join(folder, child)) else "touch"
            steps += [f"{make} {target}", f"mount --bind {stage}/{shlex.quote(child)} {target}"]
        steps += [f"umount -l {stage}", f"rmdir {stage}"]
    script = "\n".join(['stage=$(mktemp -d /tmp/posenc-reachable-XXXXXX)', *steps, 'rmdir "$stage"',
                        'exec runuser -u "$0" -- "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, user, *command]


def _blocked(paths: list[str]) -> list[tuple[str, list[str]]]:
    """(folder others may not enter, [its entries on the way to `paths`]), the shallowest folders first."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for real in {os.path.abspath(path), os.path.realpath(path)}:
            parts = pathlib.PurePath(real).parts
            for depth in range(1, len(parts)):
                folder = str(pathlib.PurePath(*parts[:depth]))
                if not os.stat(folder).st_mode & 0o001:
                    found.setdefault(folder, set()).add(parts[depth])
    return [(folder, sorted(children)) for folder, children in sorted(found.items(), key=lambda f: f[0].count("/"))]


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
