"""Hostile submissions: each tries to gain points or touch other students' grades.

Every attack runs on top of the untouched template (worth 0), so any point it earns is a point
gained by the attack. The grader must leave each at 0 and every other grade as it was.
"""
from __future__ import annotations

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
    reference = importlib.import_module("posenc_autograder.reference")
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
}
