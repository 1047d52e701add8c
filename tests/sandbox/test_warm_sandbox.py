"""The warm sandbox (sandbox/zygote.py, started by sandbox/warm.py), the path isolated grading takes.

A job forked from the zygote holds no privilege, and nothing of one job is reachable from another: files,
environment, processes and their memory, signals; what a job leaves running dies with it; each job draws its own
random numbers and holds nothing of the grader package; a zygote that dies costs only the attempts in flight,
which run again without charging the student (whose own crash is still a crash); new probe sources start a new
zygote; where no zygote can run, grading falls back to bubblewrap and says so.

The process-level scenarios run in a fresh interpreter as the user running the tests and, when that is root,
again as an ordinary user (the venv's own interpreter, made reachable for that user: ordinary_user.reachable_as).
"""
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from ordinary_user import reachable_as
from test_sandbox_privileges import PROBE, _site_packages, assert_unprivileged, host_devices, ordinary_user  # noqa: F401

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor, warm
from posenc_autograder.settings import Limits

JOBS = r'''
import os, sys, time
sys.path[:0] = PATHS
from posenc_autograder.sandbox import warm
from posenc_autograder.settings import Limits
ZYGOTE = warm.Zygote({})

def start(script):
    """A job forked from the zygote, running a shell script in its sandbox."""
    read, write = os.pipe()
    job = ZYGOTE.spawn(Limits(), write, [], inner=["/bin/sh", "-c", script])
    os.close(write)
    os.close(read)
    return job

def finish(job):
    out = b"".join(iter(lambda: job.log.read(65536), b""))
    job.wait(60)
    return out.decode()
'''

SCENARIOS = {
    "privilege": "print(finish(start(PROBE)))",
    "neighbours": r'''
victim = start("# victim_marker\necho secret > /tmp/victim_file; export VICTIM_SECRET=1; echo ready; read until_told")
said = b""
while b"ready" not in said and (piece := victim.log.read(64)):       # its file written, its variable set
    said += piece
print(finish(start(f"""
test -e /tmp/victim_file && echo files=shared || echo files=own
env | grep -q VICTIM_SECRET && echo environment=shared || echo environment=own
grep -l 'victim[_]marker' /proc/[0-9]*/cmdline 2>/dev/null | grep -q . && echo processes=visible \
    || echo processes=hidden
ls /proc | grep -c '^[0-9]' | sed 's/^/process_count=/'
kill -9 {victim.pid} {ZYGOTE.process.pid} 2>/dev/null && echo signals=delivered || echo signals=refused
kill -9 -1 2>/dev/null; echo after_kill_all=alive
cat /proc/{victim.pid}/mem /proc/{ZYGOTE.process.pid}/mem >/dev/null 2>&1 && echo memory=readable \
    || echo memory=unreachable
""")))
print("victim_during=" + ("ended" if victim.exited() else "running"))        # it waits to be told, alive throughout
victim.stdin.write(b"end\n")
print("victim:", (said.decode() + finish(victim)).strip())
print("zygote=" + ("alive" if ZYGOTE.alive else "dead"))
''',
    "left_running": r'''
marker = "posenc-left-" + "running"          # built here: this script's own command line does not hold it
finish(start(f"# {marker}\n(while true; do sleep 1; done) &\necho started"))
def command_line(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        return b""
def left():
    return [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in command_line(p)]
until = time.monotonic() + 5                 # the kernel ends the job's processes with it: gone at once, or never
while left() and time.monotonic() < until:
    time.sleep(0.02)
print("leftover=" + ("running" if left() else "gone"))
''',
}


def run(scenarios: list[str], python: str = sys.executable, user: str | None = None, paths=None) -> dict[str, str]:
    paths = paths or [str(pathlib.Path(warm.__file__).parents[2]), *_site_packages()]
    script = f"PATHS = {paths!r}\nPROBE = {PROBE!r}\n" + JOBS + "".join(textwrap.dedent(SCENARIOS[name])
                                                                  for name in scenarios)
    command = [python, "-I", "-c", script]
    command = reachable_as(user, command, [python, sys.prefix, *paths]) if user else command
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stdout + done.stderr
    found = dict(line.split("=", 1) for line in done.stdout.split() if "=" in line)
    found["_out"] = done.stdout
    return found


def assert_isolated(found: dict[str, str]) -> None:
    assert found["files"] == "own" and found["environment"] == "own", found
    assert found["processes"] == "hidden" and found["memory"] == "unreachable", found
    assert found["signals"] == "refused" and found["after_kill_all"] == "alive", found
    assert int(found["process_count"]) <= 5, found          # the job's init, its shell, ls, grep and sed only
    assert found["victim_during"] == "running", found
    assert "victim: ready" in found["_out"] and found["zygote"] == "alive", found   # both ran on, untouched


@pytest.fixture(scope="module")
def as_grading_user():
    """Every scenario in one fresh interpreter (one zygote) as the user running the tests, and the host's device
    nodes before and after."""
    before = host_devices()
    found = run(["privilege", "neighbours", "left_running"])
    found["_devices_kept"] = host_devices() == before
    return found


def test_a_warm_job_holds_no_privilege(as_grading_user):
    assert_unprivileged(as_grading_user)
    assert as_grading_user["_devices_kept"]


def test_a_warm_job_reaches_nothing_of_another_job_or_the_zygote(as_grading_user):
    assert_isolated(as_grading_user)


def test_what_a_job_leaves_running_dies_with_it(as_grading_user):
    assert as_grading_user["leftover"] == "gone"


@pytest.mark.slow
def test_the_same_as_an_ordinary_user(ordinary_user):   # noqa: F811
    """The zygote runs the venv's own Python, as in grading."""
    found = run(["privilege", "neighbours", "left_running"], sys.executable, ordinary_user)
    assert_unprivileged(found)
    assert_isolated(found)
    assert found["leftover"] == "gone"


def test_the_zygote_must_be_single_threaded():
    """enter() refuses in a process running a second thread (the kernel would refuse the user namespace)."""
    script = textwrap.dedent(f"""
        import importlib.util, threading, time
        spec = importlib.util.spec_from_file_location("zygote_under_test", {str(warm.SOURCE)!r})
        zygote = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(zygote)
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        try:
            zygote.enter({{}}, {{}})
        except zygote.SandboxSetupFailed as exc:
            print("refused:", exc)
    """)
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert "refused: " in done.stdout and "single-threaded" in done.stdout, done.stdout + done.stderr


# --- through run_job, the grading path ----------------------------------------------------------------------

LIMITS = Limits(cell_seconds=30, notebook_seconds=90)


def _run(*sources: str) -> supervisor.RunOutcome:
    cells = [{"cell_type": "code", "source": source} for source in sources]
    return supervisor.run_job(cells, codec.frame({}), [], probe_files(), LIMITS)


def _stdout(outcome, cell: int) -> str:
    return "".join(o.get("text", "") for o in outcome.outputs[cell]["outputs"])


def test_each_job_draws_its_own_random_numbers_and_holds_nothing_of_the_grader():
    cell = ("import random, sys, numpy\nprint(random.random(), numpy.random.random())\n"
            "print(sorted(m for m in sys.modules if m.startswith('posenc_autograder')))\n"
            "try:\n    import posenc_autograder\nexcept ImportError:\n    print('grader: not importable')")
    first, second = _run(cell), _run(cell)
    assert warm.status().startswith("a warm interpreter"), warm.status()
    draws = [_stdout(outcome, 0).splitlines() for outcome in (first, second)]
    assert draws[0][0] != draws[1][0], draws
    assert draws[0][1:] == ["[]", "grader: not importable"], draws


@pytest.mark.slow
def test_a_dead_zygote_costs_the_jobs_in_flight_a_rerun_not_their_marks():
    _run("pass")                                   # a zygote running
    zygote, lost = warm._current, warm.losses()
    outcomes = {}
    jobs = [threading.Thread(target=lambda n=n: outcomes.__setitem__(n, _run(
        "import time\ntime.sleep(1.5)", f"print('job {n} ran to the end')"))) for n in range(2)]
    for job in jobs:
        job.start()
    time.sleep(0.8)                                # both jobs are in their first cell
    zygote.process.kill()
    for job in jobs:
        job.join()
    for n, outcome in outcomes.items():
        assert outcome.finished and outcome.events == [], outcome
        assert _stdout(outcome, 1) == f"job {n} ran to the end\n"
    assert warm._current is not zygote and warm._current.alive and warm.losses() == lost + 1
    # The student's own crash stays the student's: the cell is reported and the run stops there, not rerun as lost.
    crash = _run("import os\nos.kill(1, 9)\nos._exit(3)", "print('after')")
    assert [e["event"] for e in crash.events] == ["kernel_died"] and crash.events[0]["cell"] == 0
    assert crash.runs == 1 and 1 not in crash.outputs and warm._current.alive


def test_the_zygotes_own_cpu_holds_its_start_and_not_its_jobs_work():
    """make bench adds the zygote's own CPU to the sandbox's: it must be the zygote's (its imports, its forks), never
    a job's, which the job's own account already holds."""
    _run("pass")
    started = warm.zygote_cpu_seconds()
    assert 0.05 < started < 30, started                 # importing numpy and IPython costs a tenth of a second or more
    burn = _run("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass")
    assert burn.cpu_seconds >= 0.5 and warm.zygote_cpu_seconds() - started < 0.25, (burn.cpu_seconds, started)
    warm.shutdown()
    assert warm.zygote_cpu_seconds() == 0.0


def test_the_zygotes_child_is_born_the_init_of_the_jobs_namespaces():
    """A warm job is two processes: the zygote's child is born PID 1 of its new PID namespace, in its new user
    namespace, and forks the job (on the old code an outer process outside the namespace forked the init: a third
    copy of the zygote a job, its page tables copied and its pages faulted)."""
    zygote = warm.zygote_for(probe_files())
    read, write = os.pipe()
    try:
        job = zygote.spawn(Limits(), write, [], inner=["/bin/sh", "-c", "echo $$; read until_closed"])
    finally:
        os.close(write)
        os.close(read)
    try:
        assert job.log.readline() == b"2\n"
        status = pathlib.Path(f"/proc/{job.pid}/status").read_text()
        born = {name: os.readlink(f"/proc/{job.pid}/ns/{name}") for name in ("pid", "user")}
        zygotes = {name: os.readlink(f"/proc/{zygote.process.pid}/ns/{name}") for name in ("pid", "user")}
        assert re.search(r"^NSpid:\s+(\d+)\s+1$", status, re.M), status
        assert born["pid"] != zygotes["pid"] and born["user"] != zygotes["user"]
    finally:
        job.kill()
        job.wait()
        job.close()
    assert job.record is not None                   # reaped by the zygote, which reported it


def test_new_probe_sources_start_a_new_zygote():
    files = probe_files()
    first = warm.zygote_for(files)
    assert warm.zygote_for(files) is first
    changed = {**files, "runner.py": files["runner.py"] + "\n# changed\n"}
    second = warm.zygote_for(changed)
    assert second is not first and not first.alive and second.alive
    warm.zygote_for(files)


def test_without_a_zygote_grading_falls_back_to_bubblewrap_and_says_so(monkeypatch, capsys):
    def no_namespaces(*args, **kwargs):
        raise warm.ZygoteLost("user namespaces are disabled on this host")
    warm.shutdown()
    monkeypatch.setattr(warm, "Zygote", no_namespaces)
    monkeypatch.setattr(warm, "_unavailable", None)
    outcome = _run("print('graded anyway')")
    assert outcome.finished and _stdout(outcome, 0) == "graded anyway\n"
    assert warm.status().startswith("bubblewrap") and "user namespaces are disabled" in warm.status()
    assert "warning: bubblewrap, one fresh interpreter per job" in capsys.readouterr().err


AFTER_THE_FORK = ("child", "enter", "_namespaces", "_init", "_root", "_bind", "_dev", "_proc", "_no_privilege",
                  "_limits")


def test_what_a_jobs_outer_process_and_init_run_reads_no_host_file_the_zygote_read_once_and_makes_no_pathlib_object():
    """Every page of the zygote's heap a job's processes touch after the fork costs a page fault: the zygote reads the
    last capability and decodes the seccomp program once, before serving, and the root is built with os's calls, not
    pathlib's objects (on the old code each job read both again and built ~30 paths: ~200 page faults a job more)."""
    import ast
    tree = ast.parse(warm.SOURCE.read_text())
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    for name in AFTER_THE_FORK:
        names = {n.id for n in ast.walk(functions[name]) if isinstance(n, ast.Name)}
        texts = {n.value for n in ast.walk(functions[name]) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        calls = {n.func.id for n in ast.walk(functions[name])
                 if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        assert "pathlib" not in names and "_last_capability" not in calls, name
        assert not any("cap_last_cap" in text for text in texts) and "fromhex" not in ast.unparse(functions[name]), name
