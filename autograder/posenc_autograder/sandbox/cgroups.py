"""One job's cgroups: pids and memory limits where this process may create them, and the CPU the job's processes
used as the kernel counted it (cgroup v2, or v1's pids, memory and cpuacct hierarchies)."""
from __future__ import annotations

import os
import pathlib
import signal
import time
import uuid

from posenc_autograder.settings import Limits


def _cgroup_dirs(name: str) -> list[pathlib.Path]:
    """pids/memory (and CPU accounting) cgroups for one job, on cgroup v2 or v1, where this process may create them."""
    base = pathlib.Path("/sys/fs/cgroup")
    controllers = base / "cgroup.controllers"
    if controllers.exists() and "pids" in controllers.read_text().split():
        return [base / name]
    # cpuacct only counts (the job's CPU for `make bench`); pids and memory limit.
    return [base / kind / name for kind in ("pids", "memory", "cpuacct") if (base / kind / "tasks").exists()]


def make_cgroups(limits: Limits) -> list[pathlib.Path]:
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


def cgroup_cpu_seconds(groups) -> float | None:
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
    groups = make_cgroups(Limits())
    ok = any((g / "pids.max").exists() for g in groups)
    remove_cgroups(groups)
    return ok


def remove_cgroups(groups):
    for group in groups:
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                kill_cgroup(group)
                time.sleep(0.05)


def kill_cgroup(group: pathlib.Path):
    try:
        for pid in (group / "cgroup.procs").read_text().split():
            os.kill(int(pid), signal.SIGKILL)
    except (OSError, ValueError):
        pass
