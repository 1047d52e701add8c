"""Sandboxed jobs forked from a warm interpreter (the zygote, sandbox/zygote.py) instead of a fresh bubblewrap.

A job under bubblewrap starts a new Python, then imports numpy, IPython and the probes and makes its IPython
shell: 0.18 CPU-s before its first cell. The zygote pays that once. It is started here as `python -I` in its own
session, holds only numpy, IPython, the shipped probes and a shell made once that never runs a cell (never the
grader package, never a submission) and stays single-threaded; each job is a fork of it that builds, before
it reads a byte of the submission, what bubblewrap builds (user, PID, mount, network, IPC, UTS and cgroup
namespaces, the same read-only root and /proc masks, its own /tmp and /dev/shm, every capability dropped,
no_new_privs, the same seccomp filter, rlimits, a clean environment) and reseeds its random state.

The grader side (this module) keeps one zygote per set of probe sources: a change of the probes (the
part of the grader fingerprint the zygote holds) starts a new one. A job whose zygote dies while it runs
is reported as lost (`WarmJob.lost`), which the supervisor retries without charging the student. Where the
zygote cannot start or cannot build a sandbox (no user namespaces, say), `zygote_for` returns None and
grading falls back to bubblewrap; `status()` says which path is in use and why.
"""
from __future__ import annotations

import atexit
import dataclasses
import hashlib
import io
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence

from posenc_autograder.sandbox import layout
from posenc_autograder.sandbox.seccomp import filter_program
from posenc_autograder.settings import Limits

SOURCE = pathlib.Path(__file__).with_name("zygote.py")
START_SECONDS = 60
REPLY_SECONDS = 30
STATUS_BYTES = 4096
LEARN_BYTES = 256 * 1024       # release cells sent with one request, at most: its message stays under the zygote's cap
# glibc's malloc asks the kernel for transparent huge pages for the heap it grows (madvise), where the kernel gives them
# only on request: a job's records and arrays of a few MB are then faulted 2 MB at a time, not 4 kB (~1,500 page faults
# a job fewer). Read by glibc as the zygote starts, so its jobs inherit the heap; each job's environment is set anew
# (zygote.enter), without it.
HEAP_TUNABLES = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


class ZygoteLost(RuntimeError):
    """The zygote ended or stopped answering: the jobs it had in flight are lost, not the students' fault."""


def root_layout() -> dict:
    """The sandbox root as bubblewrap builds it (from layout.py's lists, as bubblewrap.py), as data for the zygote.
    Binds are [source, target] with the source's links resolved here, as bubblewrap resolves them on the host."""
    targets, symlinks = ["/usr"], []
    for name in layout.ROOT_LINKS:
        path = pathlib.Path("/") / name
        if path.is_symlink():
            symlinks.append([os.readlink(path), str(path)])
        elif path.is_dir():
            targets.append(str(path))
    targets += [f"/etc/{name}" for name in layout.ETC_FILES if (pathlib.Path("/etc") / name).exists()]
    python = layout.python_locations()
    targets += [str(folder) for folder in python]
    return {"binds": [[os.path.realpath(target), target] for target in targets], "symlinks": symlinks,
            "proc_masks": list(layout.PROC_MASKS),
            "hidden": [str(folder) for folder in layout.hidden_package_dirs(python)]}


def configuration(probe_files: dict[str, str]) -> dict:
    return {"probe_files": probe_files, "probe_package": layout.PROBE_PACKAGE,
            "probe_modules": sorted(name[:-3] for name in probe_files if name != "__init__.py"),
            "layout": root_layout(), "seccomp": filter_program().hex(), "sandbox_uid": layout.SANDBOX_UID,
            "header_length_bytes": layout.HEADER_LENGTH_BYTES,
            "environment": layout.sandbox_environment(3, layout.WORK_DIR, layout.HOME_DIR)}


ONE_JOB = "job"          # zygote.py's argument for one job in a fresh interpreter (its ONE_JOB)


def one_job_command(python: str, seccomp_fd: int | None = None, inner: list[str] | None = None) -> list[str]:
    """A job in a fresh interpreter (under bubblewrap, or without a sandbox): zygote.py run for that one job, so it
    reads its payload and loads the shipped probes with the zygote's own code. Under bubblewrap it installs the
    seccomp filter read from `seccomp_fd` itself; `inner` replaces the runner (the privilege tests' shell probes)."""
    return [python, "-I", "-c", SOURCE.read_text(), ONE_JOB,
            json.dumps({"probe_package": layout.PROBE_PACKAGE, "header_length_bytes": layout.HEADER_LENGTH_BYTES,
                        "seccomp_fd": seccomp_fd, "inner": inner})]


def fingerprint(probe_files: dict[str, str]) -> str:
    """What a zygote holds: its own program, the interpreter and the probe sources."""
    digest = hashlib.sha256(SOURCE.read_bytes() + sys.executable.encode())
    for name in sorted(probe_files):
        digest.update(name.encode() + b"\0" + probe_files[name].encode() + b"\0")
    return digest.hexdigest()


def _runner_limits(limits: Limits) -> dict:
    return {"tmp_bytes": limits.tmp_bytes, "shm_bytes": limits.shm_bytes, "memory_bytes": limits.memory_bytes,
            "notebook_seconds": limits.notebook_seconds, "max_file_bytes": limits.max_file_bytes}


@dataclasses.dataclass
class WarmJob:
    """One job forked by the zygote: its pidfd (to kill it without a pid-reuse race) and the pipe on which the
    zygote reports its end. `stdin` is the write end of the job's standard input, `log` the read end of its
    stdout and stderr."""
    pid: int
    pidfd: int
    status_fd: int
    stdin: io.FileIO
    log: io.FileIO
    record: dict | None = None
    ended: bool = False
    holds_probes = True       # its zygote imported them: its payload carries no probe source

    @property
    def lost(self) -> bool:
        """Ended without the zygote's report: the zygote died, taking the job with it."""
        return self.ended and self.record is None

    def exited(self) -> bool:
        """Whether the zygote has reaped the job (or died): a non-blocking look at the status pipe."""
        if not self.ended:
            try:
                data = os.read(self.status_fd, STATUS_BYTES)
            except BlockingIOError:
                return False
            self.ended = True
            if data:
                try:
                    self.record = json.loads(data)
                except ValueError:
                    self.record = None
        return True

    def kill(self) -> None:
        try:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
        except OSError:
            pass                           # already ended

    def wait(self, seconds: float = 10.0) -> float:
        """Wait for the zygote's report; the CPU the job's processes used as the kernel counted it (0 if lost)."""
        until = time.monotonic() + seconds
        while not self.exited() and time.monotonic() < until:
            time.sleep(0.01)
        return float(self.record.get("cpu", 0.0)) if isinstance(self.record, dict) else 0.0

    def close(self) -> None:
        for stream in (self.stdin, self.log):
            try:
                stream.close()
            except OSError:
                pass
        for fd in (self.pidfd, self.status_fd):
            os.close(fd)


class Zygote:
    """A running zygote and the socket to it. Requests are serialised; a dead zygote raises ZygoteLost."""

    def __init__(self, probe_files: dict[str, str]):
        self.fingerprint = fingerprint(probe_files)
        self.sent: set[str] = set()                  # release cells sent to this zygote to learn
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.lock = threading.Lock()
        self.errors = tempfile.TemporaryFile()      # a file, not a pipe: a zygote never blocks on what it prints
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", SOURCE.read_text(), str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errors,
                pass_fds=(theirs.fileno(),), start_new_session=True, cwd="/",
                env=layout.sandbox_environment(-1, layout.WORK_DIR, layout.HOME_DIR) | HEAP_TUNABLES)
        finally:
            theirs.close()
        self.socket = ours
        ours.settimeout(START_SECONDS)
        try:
            ours.sendall(json.dumps(configuration(probe_files)).encode())
            reply = json.loads(ours.recv(STATUS_BYTES) or b"{}")
        except (OSError, ValueError) as exc:
            raise ZygoteLost(f"the zygote did not start ({exc}): {self._stop_with_errors()}") from exc
        if "ready" not in reply:
            raise ZygoteLost(f"the zygote did not start: {self._stop_with_errors()}")
        if reply.get("threads") != 1:
            self._stop_with_errors()
            raise ZygoteLost(f"the zygote runs {reply.get('threads')} threads: it must run one to fork sandboxes")
        ours.settimeout(REPLY_SECONDS)

    def _stop_with_errors(self) -> str:
        """Stop the zygote; the last line it printed (why it did not start)."""
        self.process.kill()
        self.process.wait()
        self.errors.seek(0)
        printed = self.errors.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
        self.stop()
        return printed[-1] if printed else "it printed nothing"

    def _unsent(self, cells: Sequence[str]) -> list[str]:
        """The cells not sent yet, as many as a request carries (the zygote bounds what it keeps itself)."""
        unsent, size = [], 0
        for cell in dict.fromkeys(cells):
            if cell not in self.sent:
                size += len(json.dumps(cell))
                if size > LEARN_BYTES:
                    break
                unsent.append(cell)
        return unsent

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, limits: Limits, channel_w: int, cgroups, inner: list[str] | None = None,
              release_cells: Sequence[str] = ()) -> WarmJob:
        """Fork a job: put it into `cgroups` before it makes its namespaces, then let it go. release_cells: cells of
        the release (never a student's) for the zygote to compile first, if it has not been sent them yet."""
        stdin_r, stdin_w = os.pipe()
        log_r, log_w = os.pipe()
        sync_r, sync_w = os.pipe()
        status_r, status_w = os.pipe2(os.O_NONBLOCK)
        learn = self._unsent(release_cells)
        request = json.dumps({"limits": _runner_limits(limits), "inner": inner, "learn": learn}).encode()
        try:
            with self.lock:
                try:
                    socket.send_fds(self.socket, [request], [stdin_r, channel_w, log_w, sync_r, status_w])
                    reply, fds, _, _ = socket.recv_fds(self.socket, STATUS_BYTES, 1)
                except OSError as exc:
                    self.process.kill()         # a late answer would be read as the next job's: start afresh
                    raise ZygoteLost(f"the zygote stopped answering ({exc})") from exc
            if not reply:
                raise ZygoteLost("the zygote ended")
            self.sent.update(learn)
            answer = json.loads(reply)
            if "pid" not in answer or len(fds) != 1:
                for fd in fds:
                    os.close(fd)
                raise ZygoteLost(f"the zygote refused the job: {answer.get('error')}")
        except BaseException:
            for fd in (stdin_w, log_r, sync_w, status_r):
                os.close(fd)
            raise
        finally:
            for fd in (stdin_r, log_w, sync_r, status_w):
                os.close(fd)
        job = WarmJob(answer["pid"], fds[0], status_r, os.fdopen(stdin_w, "wb", buffering=0),
                      os.fdopen(log_r, "rb", buffering=0))
        try:
            for group in cgroups:
                (group / "cgroup.procs").write_text(str(job.pid))
            os.write(sync_w, b"1")
        except OSError:
            job.kill()                      # never let a job run outside its cgroups
        finally:
            os.close(sync_w)
        return job

    def stop(self) -> None:
        try:
            self.socket.close()
        except (OSError, AttributeError):
            pass
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.errors.close()


# --- one zygote per process ------------------------------------------------------------------------

SWITCH = "POSENC_WARM_SANDBOX"          # "0": bubblewrap for every job (make bench's before/after, a suspicious host)


def enabled() -> bool:
    return os.environ.get(SWITCH, "1") != "0"


_current: Zygote | None = None
_unavailable: str | None = None
_lost = 0                                  # zygotes found dead while in use (their jobs were rerun)
_lock = threading.Lock()


def zygote_for(probe_files: dict[str, str]) -> Zygote | None:
    """The running zygote for these probe sources (started, or restarted when they changed or it died);
    None when the warm path cannot work here (the reason in status())."""
    global _current, _unavailable, _lost
    with _lock:
        if _unavailable is not None:
            return None
        if _current is not None and not _current.alive:
            _lost += 1
        if _current is not None and (_current.fingerprint != fingerprint(probe_files) or not _current.alive):
            _current.stop()
            _current = None
        if _current is None:
            try:
                _current = Zygote(probe_files)
                _self_check(_current)
            except (ZygoteLost, OSError) as exc:
                if _current is not None:
                    _current.stop()
                    _current = None
                _unavailable = str(exc)
                print(f"warning: {status()}", file=sys.stderr)
                return None
        return _current


_starting: threading.Thread | None = None


def start_early(probe_files: dict[str, str]) -> None:
    """Start the zygote for these probe sources in a thread of its own, for a run that will surely ask for it: its
    start (~1.5 CPU-s, in its own process) overlaps what the run does before its first job, instead of holding that
    job up. A job that asks for it meanwhile waits for it (zygote_for's lock)."""
    global _starting
    if enabled() and (_starting is None or not _starting.is_alive()):
        _starting = threading.Thread(target=_start, args=(probe_files,), name="zygote-start", daemon=True)
        _starting.start()


def _start(probe_files: dict[str, str]) -> None:
    try:
        zygote_for(probe_files)
    except Exception as exc:  # noqa: BLE001 - the first job meets the same fault, and says it, as without this start
        print(f"warning: the warm sandbox did not start early ({type(exc).__name__}: {exc})", file=sys.stderr)


def wait_for_start() -> None:
    """The early start finished (a process forked now copies no thread in the middle of it)."""
    global _starting
    if _starting is not None:
        _starting.join()
        _starting = None


def _self_check(zygote: Zygote) -> None:
    """One job that only builds its sandbox and exits: if that fails here, every job would."""
    channel = os.open(os.devnull, os.O_WRONLY)
    try:
        job = zygote.spawn(Limits(), channel, [], inner=["/bin/true"])
    finally:
        os.close(channel)
    try:
        job.wait(START_SECONDS)
        log = job.log.read(4000).decode("utf-8", "replace").strip()
    finally:
        job.kill()
        job.close()
    if job.record is None or job.record.get("status") != 0:
        raise ZygoteLost(f"the zygote cannot build a sandbox here: {log or job.record}")


def zygote_cpu_seconds() -> float:
    """CPU seconds the running zygote has used itself (starting, then forking and reaping jobs): no job's account
    holds them. 0 when none runs."""
    zygote = _current
    if zygote is None or not zygote.alive:
        return 0.0
    try:    # /proc/<pid>/stat: utime and stime are the 12th and 13th fields after the command's closing parenthesis
        fields = pathlib.Path(f"/proc/{zygote.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def losses() -> int:
    """How many zygotes this process found dead while in use."""
    return _lost


def status() -> str:
    """Which sandbox grading uses, for the run's report."""
    if not enabled():
        return f"bubblewrap, one fresh interpreter per job ({SWITCH}=0)"
    if _unavailable is not None:
        return f"bubblewrap, one fresh interpreter per job (the warm interpreter is unavailable: {_unavailable})"
    return "a warm interpreter (zygote) forking one sandbox per job"


@atexit.register
def shutdown() -> None:
    global _current
    with _lock:
        if _current is not None:
            _current.stop()
            _current = None
