"""The sandbox's facts, one source for both ways of building it (bubblewrap.py's command line, the warm zygote's
own mounts): who the student is inside, what of the host it sees, and the environment it gets."""
from __future__ import annotations

import importlib.util
import os
import pathlib
import sys

SANDBOX_UID = 65534
WORK_DIR, HOME_DIR = "/tmp/work", "/tmp/home"
PROBE_PACKAGE = "posenc_probes"
# Docker's list of /proc entries that leak host details or accept writes from a root-mapped uid.
# Then the memory of the namespace's init (PID 1: bwrap's, or the warm job's init), which the job's uid could read.
PROC_MASKS = ("kcore", "keys", "timer_list", "sched_debug", "latency_stats", "sysrq-trigger", "kallsyms",
              "kmsg", "acpi", "scsi", "asound", "fs", "1/mem", "1/task/1/mem")
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf")
ROOT_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
HEADER_LENGTH_BYTES = 4               # the payload on stdin: its JSON header's length, the header, the task frame


def python_locations() -> list[pathlib.Path]:
    venv = pathlib.Path(os.path.abspath(sys.prefix))        # normalised, not resolved: keep the venv
    return sorted({venv, pathlib.Path(sys.base_prefix).resolve()})


def hidden_package_dirs(bound: list[pathlib.Path]) -> list[pathlib.Path]:
    """The grader package (reference solutions, judges) when an install put it inside a bound folder."""
    spec = importlib.util.find_spec("posenc_autograder")
    found = [pathlib.Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
    return [p for p in found if any(p == b or b in p.parents for b in bound)]


def sandbox_environment(channel_fd: int, work: str, home: str) -> dict:
    return {"HOME": home, "POSENC_WORK_DIR": work, "PATH": f"{pathlib.Path(sys.executable).parent}:/usr/bin:/bin",
            "POSENC_CHANNEL_FD": str(channel_fd), "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1", "JUPYTER_PLATFORM_DIRS": "1", "LANG": "C.UTF-8"}
