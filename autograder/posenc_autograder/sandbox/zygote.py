"""The zygote: a warm interpreter that forks one sandboxed job per request. Runs as `python -I -c <this file>`.

This file is the zygote's whole program: it is read as text by sandbox/warm.py and never imported by the
grader, and it imports nothing of the grader package (only the standard library, numpy, IPython and the
shipped probes, which arrive as sources in its configuration). It never reads a submission: a job's notebook
and task go to the job's own standard input, which only the sandboxed job reads.

With the arguments `job <configuration JSON>` it runs one job of its own instead, in a fresh interpreter (under
bubblewrap, or without a sandbox): the same payload reader and loader of the shipped probes, the shell made in
the job. So the probes are loaded by one piece of code whichever way a job starts.

Otherwise its one argument is the descriptor of a SOCK_SEQPACKET socket to the grader. Protocol:
- first message: the configuration (JSON): probe sources, the root to build, the seccomp program, the
  sandbox environment. The zygote imports what it holds, then answers {"ready": pid}.
- each further message: a fork request (JSON limits, optional `inner` argv used by tests, optional `learn`: cells
  of the release to compile before forking, shell_runner.learn) with five
  descriptors by SCM_RIGHTS: the job's stdin, channel, log, a sync pipe and a status pipe. The zygote
  forks the job's init into a new user and PID namespace and answers {"pid": n} with a pidfd of it. The init
  waits for a byte on the sync pipe (the grader has put it into the job's cgroups by then), so everything the
  job starts is counted and capped by them. When the zygote reaps the init (its pidfd readable), it
  writes {"status", "cpu"} on the job's status pipe and closes it: end of file without that record tells
  the grader the zygote itself was lost, not that the student's code crashed.

A job is two processes: an init (the zygote's child, PID 1 of its new PID namespace: makes the other namespaces,
builds the root, drops every privilege, reaps, and exits with the job) and the job itself (PID 2), so a job cannot
signal its own init and everything it leaves running dies with the namespace when the job ends. (Bubblewrap's third
process, outside the namespace, would be one more copy of the zygote a job: its page tables copied, its pages
faulted.)
"""
import ctypes
import errno
import fcntl
import gc
import importlib.abc
import importlib.util
import inspect
import json
import os
import random
import resource
import select
import signal
import socket
import struct
import sys

# What a job's shell imports when it runs its first cells (magics, completer, tracebacks, history): imported here so
# no job pays for them. The shell itself is made here too, before serving (see main), and each job places its copy.
SHELL_MODULES = ("IPython.core.application", "IPython.core.completer", "IPython.core.magics",
                 "IPython.core.magic_arguments", "IPython.core.oinspect", "IPython.core.logger", "sqlite3",
                 "stack_data", "pygments.formatters.terminal256", "bdb")

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
# statvfs's ST_* flag -> mount's MS_* flag, for the per-mount flags a remount must repeat
STATVFS_TO_MOUNT = ((8, 8), (1024, 1024), (2048, 2048), (4096, 1 << 21))   # noexec, noatime, nodiratime, relatime
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_SET_SECCOMP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 22, 47, 4, 2
# Elsewhere the seccomp filter has no table, so no sandbox is built (a job without one still runs this file).
SYS_PIVOT_ROOT, SYS_CAPSET = {"x86_64": (155, 126), "aarch64": (41, 91)}.get(os.uname().machine, (-1, -1))
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_CLONE = {"x86_64": 56, "aarch64": 220}.get(os.uname().machine, -1)
# clone(2) called as os.fork calls fork(): holding the interpreter's lock (PyDLL), with Python's own steps around it.
raw_libc = ctypes.PyDLL(None, use_errno=True)
raw_libc.syscall.restype = ctypes.c_long
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
# Inside the job: 0 stdin, 1 and 2 the log, 3 the channel. The sync pipe sits at 4 until the cgroups are joined.
CHANNEL_FD, SYNC_FD = 3, 4
FAILED_SETUP = 70                        # init's exit code when the sandbox could not be built
MAX_MESSAGE = 1 << 20
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3                 # mallopt's parameters
HEAP_BLOCK_BYTES = 32 << 20                                 # glibc's largest dynamic mmap threshold


class SandboxSetupFailed(OSError):
    pass


# --- building the sandbox (in the job's own processes) -------------------------------------------------------

def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise SandboxSetupFailed(error, f"{what}: {os.strerror(error)}")


def _bytes(value):
    return value.encode() if isinstance(value, str) else value


def _mount(source, target, fstype, flags, data=None) -> None:
    _check(libc.mount(_bytes(source), _bytes(target), _bytes(fstype), flags, _bytes(data)), f"mount {target}")


def _bind(source: str, target: str, readonly: bool = True) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        _touch(target)
    _mount(source, target, None, MS_BIND | MS_REC)
    if readonly:
        _mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _bind_device(source: str, target: str) -> None:
    _mount(source, target, None, MS_BIND)
    _device_read_only(target)


def _device_read_only(target: str) -> None:
    """A host device node's bind made read-only yet usable (no MS_NODEV). The bind shares the host's inode, and a
    grader run as root maps the job's uid to root, the node's owner, who may chmod or touch it with no capability:
    read-only, those fail (EROFS) while reads and writes of the device go on. Flags locked by the host's mount
    (noexec, atime) are kept, as a user namespace may not clear them."""
    kept = os.statvfs(target).f_flag
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID
    flags |= sum(ms for st, ms in STATVFS_TO_MOUNT if kept & st)
    _mount(None, target, None, flags)


def _touch(path: str) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666))


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _namespaces(sandbox_uid: int, kinds: int) -> None:
    """The namespaces unshared, a user namespace among them; the sandbox uid and gid mapped to this process's own (as
    bubblewrap does)."""
    uid, gid = os.geteuid(), os.getegid()
    _check(libc.unshare(kinds), "unshare")
    _map_ids(sandbox_uid, uid, gid)


def _map_ids(sandbox_uid: int, uid: int, gid: int) -> None:
    """In a new user namespace: the sandbox uid and gid mapped to the creator's uid and gid outside it."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{sandbox_uid} {uid} 1")
    _write("/proc/self/gid_map", f"{sandbox_uid} {gid} 1")


def fork_into_namespaces(kinds: int) -> int:
    """os.fork(), the child born in new namespaces (`kinds`: clone's flags; a new PID namespace makes it its PID 1):
    the interpreter's steps before and after a fork are os.fork's, in the same order. Like os.fork, it copies only
    the calling thread (the zygote has no other)."""
    ctypes.pythonapi.PyOS_BeforeFork()
    pid = raw_libc.syscall(SYS_CLONE, kinds | signal.SIGCHLD, 0, 0, 0, 0)
    error = ctypes.get_errno()
    if pid == 0:
        ctypes.pythonapi.PyOS_AfterFork_Child()
    else:
        ctypes.pythonapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(error, f"clone: {os.strerror(error)}")
    return pid


def _root(layout: dict, limits: dict) -> None:
    """bubblewrap's root: built on a tmpfs with the old root beside it, pivoted into, the old root detached."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.mkdir("/tmp/newroot")
    os.mkdir("/tmp/oldroot")
    _check(libc.syscall(SYS_PIVOT_ROOT, b"/tmp", b"/tmp/oldroot"), "pivot_root")
    os.chdir("/")
    new = "/newroot"
    _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
    os.mkdir(f"{new}/tmp")         # first, as bubblewrap: binds below stay visible when the venv lives under /tmp
    _mount("tmpfs", f"{new}/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(limits['tmp_bytes'])},mode=1777")
    for target, path in layout["symlinks"]:
        os.symlink(target, f"{new}{path}")
    for source, target in layout["binds"]:
        if not os.path.ismount(f"{new}{target}"):          # the venv may sit inside a folder already bound
            _bind(f"/oldroot{source}", f"{new}{target}")
    for folder in layout["hidden"]:
        _mount("tmpfs", f"{new}{folder}", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k")
        _mount(None, f"{new}{folder}", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    _dev(new, limits)
    _proc(new, layout["proc_masks"])
    _check(libc.umount2(b"/oldroot", MNT_DETACH), "umount the old root")
    os.chdir(new)
    _check(libc.syscall(SYS_PIVOT_ROOT, b".", b"."), "pivot_root into the new root")
    _check(libc.umount2(b".", MNT_DETACH), "umount the build root")
    os.chdir("/")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _dev(new: str, limits: dict) -> None:
    os.mkdir(f"{new}/dev")
    _mount("tmpfs", f"{new}/dev", "tmpfs", MS_NOSUID, "size=64k,mode=0755")
    for name in DEVICES:
        _touch(f"{new}/dev/{name}")
        _bind_device(f"/oldroot/dev/{name}", f"{new}/dev/{name}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{new}/dev/{name}")
    os.mkdir(f"{new}/dev/shm")
    _mount("tmpfs", f"{new}/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(limits['shm_bytes'])},mode=1777")
    _mount(None, f"{new}/dev", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)


def _proc(new: str, masks) -> None:
    """/proc of this PID namespace, with Docker's masks, read-only."""
    os.mkdir(f"{new}/proc")
    _mount("proc", f"{new}/proc", "proc", MS_NOSUID | MS_NODEV)
    for name in masks:
        path = f"{new}/proc/{name}"
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k")
        elif os.path.exists(path):
            _bind_device(f"{new}/dev/null", path)
    _mount(None, f"{new}/proc", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def _last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap", "rb") as handle:
        return int(handle.read())


def _limits(limits: dict) -> None:
    cpu = int(limits["notebook_seconds"]) + 30
    for kind, value in ((resource.RLIMIT_AS, (int(limits["memory_bytes"]),) * 2), (resource.RLIMIT_CPU, (cpu, cpu + 5)),
                        (resource.RLIMIT_FSIZE, (int(limits["max_file_bytes"]),) * 2), (resource.RLIMIT_CORE, (0, 0)),
                        (resource.RLIMIT_NOFILE, (1024, 1024))):
        resource.setrlimit(kind, value)


def _no_privilege(seccomp_program: bytes, last_capability: int) -> None:
    """Every capability set emptied, no_new_privs, then the seccomp filter (which needs no capability)."""
    for capability in range(last_capability + 1):
        _check(libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0), "drop a bounding capability")
    _check(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear the ambient capabilities")
    _check(libc.syscall(SYS_CAPSET, struct.pack("Ii", LINUX_CAPABILITY_VERSION_3, 0), bytes(24)), "capset")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    program = ctypes.create_string_buffer(seccomp_program)
    fprog = SeccompProgram(len(seccomp_program) // 8, ctypes.cast(program, ctypes.c_void_p))
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")


class SeccompProgram(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _die_with_parent(alive_fd: int) -> None:
    """SIGKILL when the parent ends; the pipe tells whether it ended before the request took effect."""
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PDEATHSIG")
    if select.select([alive_fd], [], [], 0)[0]:          # readable: its write end closed, the parent is gone
        os._exit(FAILED_SETUP)


def heap_kept() -> None:
    """malloc's thresholds set where glibc moves them itself once a block of 32 MB has been freed (blocks under 32 MB
    from the heap, up to 64 MB of free heap kept), from the start: a job's arrays of a few MB then reuse freed heap
    instead of each being mapped afresh, page-faulted and zeroed page by page, then unmapped (glibc raises its
    threshold only to each block freed so far, so arrays that grow are mapped anew every time). Set in the zygote,
    whose jobs inherit it, and in a fresh interpreter's job: the same heap either way."""
    libc.mallopt(M_MMAP_THRESHOLD, HEAP_BLOCK_BYTES)
    libc.mallopt(M_TRIM_THRESHOLD, 2 * HEAP_BLOCK_BYTES)


def reseed() -> None:
    """Fresh random state in the job: a fork copies the zygote's, which every job would otherwise share."""
    import numpy.random  # the zygote's own import (main): nothing is loaded here
    random.seed(os.urandom(32))
    numpy.random.seed(int.from_bytes(os.urandom(4), "little"))


def _init(config: dict, limits: dict, last_capability: int) -> None:
    """PID 1 of the job's namespace: build the root, give up every privilege, start the job (PID 2), reap
    until it ends. Returns in the job only."""
    _root(config["layout"], limits)
    _limits(limits)
    _no_privilege(config["seccomp_program"], last_capability)
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the job may not read this init's memory or files (/proc/1/mem)
    inner_alive_r, inner_alive_w = os.pipe()
    job = os.fork()
    if job == 0:
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the job itself as before: its own /proc/self is its own
        os.close(inner_alive_w)
        _die_with_parent(inner_alive_r)
        os.close(inner_alive_r)
        return
    os.close(inner_alive_r)
    for fd in (0, 1, 2, CHANNEL_FD):
        os.close(fd)                     # only the job holds its stdin, log and channel
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(FAILED_SETUP)
        if pid == job:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


# The zygote's child is born in these (fork_into_namespaces); it makes the others once it is in the job's cgroups.
BORN_IN = CLONE_NEWUSER | CLONE_NEWPID
MADE_BY_INIT = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP


def enter(config: dict, limits: dict) -> None:
    """In the zygote's child, the job's init (PID 1 of its new user and PID namespaces): wait for the cgroup join,
    map the ids, make the other namespaces, and return only in the job itself (PID 2 of its namespace, sandboxed,
    fresh environment and random state)."""
    if len(os.listdir("/proc/self/task")) != 1:    # a fork copies one thread: another's locks would stay held
        raise SandboxSetupFailed(0, "the zygote must be single-threaded to fork a job's init")
    os.setsid()
    if os.read(SYNC_FD, 1) != b"1":                # the grader has put this process into the job's cgroups
        os._exit(FAILED_SETUP)
    os.close(SYNC_FD)
    _map_ids(int(config["sandbox_uid"]), *config["zygote_ids"])
    _check(libc.unshare(MADE_BY_INIT), "unshare")   # owned by the new user namespace, as one unshare of all makes them
    _init(config, limits, config["last_capability"])
    os.environ.clear()
    os.environ.update(config["environment"])
    os.chdir("/tmp")
    os.environ["PWD"] = os.getcwd()          # as bubblewrap's --chdir sets it: the same environment either way
    reseed()


# --- the job ----------------------------------------------------------------------------------------------

class ShippedProbes(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The shipped probe package, importable from its sources in memory (nothing written to disk)."""

    def __init__(self, package: str, files: dict):
        self.package, self.files = package, files

    def find_spec(self, name, path=None, target=None):
        package, _, short = name.partition(".")
        if package == self.package and (short or "__init__") + ".py" in self.files:
            return importlib.util.spec_from_loader(name, self, is_package=not short)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        short = module.__name__.partition(".")[2] or "__init__"
        # The grader's own shipped sources, as the bubblewrap bootstrap runs them: nothing of a student's.
        exec(compile(self.files[short + ".py"], f"{self.package}/{short}.py", "exec"), module.__dict__)  # noqa: S102


SHELL = None          # the shell made before serving (shell_runner.prepared): each job runs its own copy of it
ONE_JOB = "job"       # the argument that runs one job in a fresh interpreter instead of serving


def read_payload(config: dict) -> dict:
    """The job's payload from its standard input: the JSON header's length and the header. The task frame after it is
    the runner's to read (into a buffer its arrays are views of), and it closes standard input."""
    stdin = sys.stdin.buffer
    payload = json.loads(stdin.read(int.from_bytes(stdin.read(config["header_length_bytes"]), "little")))
    sys.argv[1:] = []                          # `python -I -c`, nothing more, whichever way the job started
    return payload


def run_job(config: dict, inner) -> None:
    """In the sandboxed job: the test's command, or the shell runner on the payload from standard input."""
    if inner:
        os.execv(inner[0], inner)
    payload = read_payload(config)            # no probe source: the zygote's own (the grader restarts it on a change)
    sys.modules[f"{config['probe_package']}.shell_runner"].main(payload, sys.stdin.buffer, SHELL)


def one_job(config: dict) -> None:
    """A job in a fresh interpreter: the probes from its payload, the shell made by the runner in this process.
    Under bubblewrap (a seccomp descriptor given) it first gives up what bubblewrap left it for that."""
    if config.get("seccomp_fd") is not None:
        _harden_under_bubblewrap(config["seccomp_fd"])
    if config.get("inner"):
        os.execv(config["inner"][0], config["inner"])
    heap_kept()
    payload = read_payload(config)
    sys.meta_path.insert(0, ShippedProbes(config["probe_package"], payload.pop("probe_files")))
    importlib.import_module(f"{config['probe_package']}.shell_runner").main(payload, sys.stdin.buffer)


def _harden_under_bubblewrap(seccomp_fd: int) -> None:
    """bubblewrap binds host devices only read-write (its read-only binds forbid devices) and leaves /proc writable
    for this: in a user and mount namespace of its own (same uid), this process makes the device nodes and /proc
    read-only, then gives up every capability and installs the seccomp filter, as the zygote's jobs do, before a
    byte of the submission is read."""
    _namespaces(os.geteuid(), CLONE_NEWUSER | CLONE_NEWNS)
    for name in DEVICES:
        _device_read_only(f"/dev/{name}")
    _mount(None, "/proc", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
           | sum(ms for st, ms in STATVFS_TO_MOUNT if os.statvfs("/proc").f_flag & st))
    with os.fdopen(seccomp_fd, "rb") as program:
        seccomp_program = program.read()
    _no_privilege(seccomp_program, _last_capability())


# --- the server -------------------------------------------------------------------------------------------

def receive(server: socket.socket):
    """One request: (JSON, descriptors); (None, []) at end of file."""
    message, fds, _, _ = socket.recv_fds(server, MAX_MESSAGE, 8)
    if not message:
        return None, fds
    return json.loads(message), fds


def child(server: socket.socket, request: dict, fds: list[int], config: dict) -> None:
    """The zygote's child, the job's init: nothing of the zygote's kept, then into the sandbox."""
    try:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PDEATHSIG")
        if select.select([config["zygote_pidfd"]], [], [], 0)[0]:
            os._exit(FAILED_SETUP)               # the zygote died before the request took effect
        server.detach()                           # closed below: its object must not close a reused number later
        stdin, channel, log, sync, _status = fds
        # Copies numbered above any the job keeps first, so the dup2s into 0-4 cannot overwrite one another.
        moved = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in (stdin, log, channel, sync)]
        for target, fd in zip((0, 1, CHANNEL_FD, SYNC_FD), moved, strict=True):
            os.dup2(fd, target)
        os.dup2(1, 2)
        os.closerange(SYNC_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])   # other jobs' pipes, pidfds
        enter(config, request["limits"])
        run_job(config, request.get("inner"))
    except BaseException as exc:  # noqa: BLE001 - whatever happened, this process must not return to the loop
        try:
            os.write(2, f"the sandbox could not be built: {exc}\n".encode()[:2000])
        finally:
            os._exit(FAILED_SETUP)
    os._exit(0)


def learn(config: dict, sources) -> None:
    """The release's cells the grader sent with a request (never a student's), compiled by the zygote's shell before
    it forks the job: every job after it finds them compiled (shell_runner.learn)."""
    runner = sys.modules.get(f"{config['probe_package']}.shell_runner")
    if sources and runner is not None and SHELL is not None:
        runner.learn(SHELL, sources)
        gc.freeze()           # what was learned is kept for good: no job's collector walks it


def serve(server: socket.socket, config: dict) -> None:
    jobs: dict[int, tuple[int, int]] = {}         # pidfd -> (pid, status pipe)
    while True:
        watched: list[socket.socket | int] = [server, *jobs]
        readable, _, _ = select.select(watched, [], [])
        for pidfd in [fd for fd in readable if fd in jobs]:
            pid, status_fd = jobs.pop(pidfd)
            _, status, usage = os.wait4(pid, 0)
            record = {"status": os.waitstatus_to_exitcode(status), "cpu": usage.ru_utime + usage.ru_stime}
            try:
                os.write(status_fd, json.dumps(record).encode())
            except OSError:
                pass                               # the grader stopped watching this job
            os.close(status_fd)
            os.close(pidfd)
        if server not in readable:
            continue
        request, fds = receive(server)
        if request is None:
            return                                 # the grader closed its end: stop
        if len(fds) != 5:
            for fd in fds:
                os.close(fd)
            socket.send_fds(server, [b'{"error": "a fork request carries five descriptors"}'], [])
            continue
        learn(config, request.get("learn"))
        try:
            pid = fork_into_namespaces(BORN_IN)
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            socket.send_fds(server, [json.dumps({"error": str(exc)}).encode()], [])
            continue
        if pid == 0:
            child(server, request, fds, config)
        pidfd = os.pidfd_open(pid)
        for fd in fds[:4]:
            os.close(fd)
        jobs[pidfd] = (pid, fds[4])
        socket.send_fds(server, [json.dumps({"pid": pid}).encode()], [pidfd])


def main() -> None:
    if sys.argv[1] == ONE_JOB:
        one_job(json.loads(sys.argv[2]))
        return
    server = socket.socket(fileno=int(sys.argv[1]))
    message, _, _, _ = socket.recv_fds(server, 64 << 20, 0)
    config = json.loads(message)
    # A child born in a new PID namespace sees no parent (getppid() is 0): it watches the zygote by a pidfd.
    config["zygote_pidfd"] = os.pidfd_open(os.getpid())
    config["zygote_ids"] = [os.geteuid(), os.getegid()]      # a child born in a new user namespace has none yet
    # Read once here for every job: what a job's init runs after the fork touches pages of this
    # process's heap, each a page fault (pathlib and text files touched ~200 a job).
    config["seccomp_program"] = bytes.fromhex(config["seccomp"])
    config["last_capability"] = _last_capability()
    heap_kept()
    sys.meta_path.insert(0, ShippedProbes(config["probe_package"], config.pop("probe_files")))
    # Imported once, here, for every job; not at the top: a one-job run imports what its runner needs, and the
    # check that a sandbox starts at all (one_job with `inner`) must not depend on numpy being reachable.
    for name in ("numpy", "numpy.random", "IPython.core.interactiveshell", *SHELL_MODULES):
        importlib.import_module(name)
    for name in config["probe_modules"]:                 # the shipped probes, imported once for every job
        importlib.import_module(f"{config['probe_package']}.{name}")
    global SHELL
    # The shell made once and never run (it starts no thread and writes nothing), and the guard's snapshot of the
    # probes taken: each job is a copy-on-write fork taken before any cell ran in it, so no job sees another's
    # variables, magics, builtins or imports.
    runner = sys.modules.get(f"{config['probe_package']}.shell_runner")      # none: a zygote for test commands only
    SHELL = runner.prepared() if runner else None
    # IPython's tracebacks ask inspect which module each frame is in, and inspect's first answer resolves the path of
    # every module loaded (a realpath each, ~30 ms a job): asked here once, a job's traceback looks up only what the
    # job imported itself. The answers are the same: the sandbox sees each of those files at the same path.
    inspect.getmodule(sys._getframe())
    gc.freeze()               # what the zygote holds is never collected: a job's collector leaves those pages shared
    threads = len(os.listdir("/proc/self/task"))
    socket.send_fds(server, [json.dumps({"ready": os.getpid(), "threads": threads}).encode()], [])
    try:
        serve(server, config)
    except OSError as exc:
        if exc.errno not in (errno.ECONNRESET, errno.EPIPE):
            raise


if __name__ == "__main__":
    main()
