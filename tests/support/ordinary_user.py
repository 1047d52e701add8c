"""An ordinary (unprivileged) user for the tests that must also run the sandbox as one: when the tests run as root
(CI), a system user is created once; as an ordinary user already, there is nothing more to check. And the
interpreter, venv and grader package made reachable for that user (reachable_as)."""
import os
import pathlib
import pwd
import shlex
import subprocess

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
    creating the user does: a few milliseconds, where copies of the interpreter and venv took tens of seconds."""
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
