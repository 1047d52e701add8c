"""How a job's process starts: forked from the warm zygote (warm.py) where one runs, else a fresh bubblewrap
sandbox (bubblewrap.py), or a plain process without isolation; each joins the job's cgroups under rlimits, and is
killed and reaped here."""
from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
from collections.abc import Sequence

from posenc_autograder.sandbox import warm
from posenc_autograder.sandbox.bubblewrap import plain_command, sandbox_command
from posenc_autograder.sandbox.layout import sandbox_environment
from posenc_autograder.sandbox.seccomp import filter_program
from posenc_autograder.settings import Limits


def limited_command(command: list[str], limits: Limits, cgroups: list[pathlib.Path]) -> list[str]:
    """Wrap a command so it joins the job's cgroups and runs under rlimits.

    Done with `sh` and util-linux `prlimit` rather than a preexec_fn, which can deadlock when
    sandboxes are started from several threads at once.
    """
    cpu = limits.notebook_seconds + 30
    join = "".join(f'echo $$ > "{g}/cgroup.procs" 2>/dev/null; ' for g in cgroups)
    prlimit = [shutil.which("prlimit") or "prlimit", f"--as={limits.memory_bytes}", f"--cpu={cpu}:{cpu + 5}",
               f"--fsize={limits.max_file_bytes}", "--core=0", "--nofile=1024", "--"]
    return ["/bin/sh", "-c", join + 'exec "$@"', "sh", *prlimit, *command]


def _exited(process: subprocess.Popen) -> bool:
    """Whether the process has ended, without reaping it: its CPU account is read when _reap does."""
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _reap(process: subprocess.Popen) -> float:
    """Wait for the process; the CPU it and every descendant it waited for used (bwrap waits for the sandbox)."""
    try:
        _, status, usage = os.wait4(process.pid, 0)
    except ChildProcessError:                     # already reaped (by poll): no account left to read
        process.wait()
        return 0.0
    process.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


class ZygoteGone(RuntimeError):
    """The warm sandbox's zygote could not take the job (it died): the attempt is lost, not the student's."""


class FreshProcess:
    """A job started as a new process (bubblewrap, or plain without isolation), watched and reaped here."""
    lost = False
    holds_probes = False      # a fresh interpreter: its payload carries the probe sources

    def __init__(self, command, env, limits: Limits, cgroups, seccomp: bytes | None, channel_w: int):
        """command(seccomp_fd) -> argv; env None: bubblewrap sets it."""
        seccomp_r: int | None = None
        try:
            if seccomp is not None:
                seccomp_r, seccomp_w = os.pipe()
                os.write(seccomp_w, seccomp)          # a few hundred bytes: fits in the pipe buffer
                os.close(seccomp_w)
            self.process = subprocess.Popen(limited_command(command(seccomp_r), limits, cgroups), env=env,
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            pass_fds=tuple(fd for fd in (channel_w, seccomp_r) if fd is not None),
                                            start_new_session=True)
        finally:
            if seccomp_r is not None:
                os.close(seccomp_r)
        self.stdin, self.log = self.process.stdin, self.process.stdout

    def exited(self) -> bool:
        return _exited(self.process)

    def kill(self) -> None:
        if not _exited(self.process):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except OSError:
                pass

    def wait(self) -> float:
        return _reap(self.process)

    def close(self) -> None:
        self.process.stdout.close()


def launcher(limits: Limits, isolate: bool, work: str, home: str, probe_files: dict[str, str] | None = None,
             release_cells: Sequence[str] = ()):
    """channel descriptor, cgroups -> a started job: forked from the warm zygote when one can run here (the
    default for isolated jobs; release_cells: the release's own cells of the notebook, for it to keep compiled),
    else a fresh bubblewrap sandbox, or a plain process without isolation."""
    if not isolate:
        return lambda channel_w, cgroups: FreshProcess(lambda _: plain_command(), sandbox_environment(
            channel_w, work, home), limits, cgroups, None, channel_w)

    def start(channel_w: int, cgroups):
        zygote = warm.zygote_for(probe_files) if probe_files is not None and warm.enabled() else None
        if zygote is None:
            program = filter_program()
            return FreshProcess(lambda seccomp_fd: sandbox_command(limits, seccomp_fd, channel_w), None, limits,
                                cgroups, program, channel_w)
        try:
            return zygote.spawn(limits, channel_w, cgroups, release_cells=release_cells)
        except warm.ZygoteLost as exc:
            raise ZygoteGone(str(exc)) from exc
    return start

