"""What a warm job starts from: the IPython shell and the guard's snapshot, made once in the zygote
(probes/shell_runner.prepared) before it serves and copied into every job by the fork; and the one piece of code
(zygote.py) that reads a job's payload and loads the shipped probes, whichever way the job starts.

Made there, the shell starts no thread (the zygote must stay single-threaded) and writes nothing (no profile folder,
history in memory); each job places its copy (working, home and profile folders, environment), so the shell a warm
job runs in is the shell a fresh interpreter makes; nothing one job did to its shell (a variable, a magic, a builtin,
an import, the working folder) is seen by the next one; and the snapshot holds what the job's first cell finds.
"""
import json
import pathlib
import subprocess
import sys
import textwrap

import pytest

from posenc_autograder.grading.pipeline import probe_files
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import bubblewrap, supervisor, warm
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=30, notebook_seconds=90)


def _run(*sources: str) -> supervisor.RunOutcome:
    cells = [{"cell_type": "code", "source": source} for source in sources]
    outcome = supervisor.run_job(cells, codec.frame({}), [], probe_files(), LIMITS)
    assert outcome.finished and outcome.events == [], (outcome.events, outcome.outputs, outcome.log_tail)
    return outcome


def _stdout(outcome, cell: int) -> str:
    return "".join(o.get("text", "") for o in outcome.outputs[cell]["outputs"] if o["output_type"] == "stream")


MADE_SHELL = r"""
import os, pathlib, threading
from posenc_autograder.probes.shell_runner import made_shell
shell = made_shell()
print("threads", threading.active_count())
print("history", shell.history_manager.hist_file)
print("written", sorted(str(p) for p in pathlib.Path(".").rglob("*")))
"""


def test_the_shell_made_for_the_zygote_starts_no_thread_and_writes_nothing(tmp_path):
    """In a fresh process whose home and working folder are the same empty folder, as the zygote makes it."""
    done = subprocess.run([sys.executable, "-c", MADE_SHELL], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["threads 1", "history :memory:", "written []"], done.stdout


STATE = r"""
import builtins, json, os, sys, threading
ip = get_ipython()
magics = ip.magics_manager.lsmagic()


def listing(folder):
    return sorted(os.path.relpath(os.path.join(top, name), folder) for top, folders, files in os.walk(folder)
                  for name in folders + files)


print(json.dumps({
    "user_ns": {name: type(value).__name__ for name, value in ip.user_ns.items()},
    "hidden": sorted(ip.user_ns_hidden), "in": list(In), "dir_history": [str(p) for p in _dh],
    "execution_count": ip.execution_count, "main_is_user_module": sys.modules["__main__"] is ip.user_module,
    "magics": {kind: sorted(magics[kind]) for kind in magics},
    "skipped": {kind: sorted(n for n, f in magics[kind].items() if getattr(f, "__name__", "") == "_skip")
                for kind in magics},
    "aliases": ip.alias_manager.aliases, "active_types": ip.display_formatter.active_types,
    "folders": [os.getcwd(), ip.starting_dir, ip.home_dir, ip.ipython_dir, ip.profile_dir.location],
    "home": listing(os.environ["HOME"]), "work": listing(os.getcwd()),
    "history": [ip.history_manager.hist_file, ip.history_manager.session_number],
    "environment": {k: v for k, v in os.environ.items() if k != "POSENC_CHANNEL_FD"},
    "sys_path": sys.path, "builtins": sorted(vars(builtins)), "threads": threading.active_count(),
    "hooks": [type(sys.displayhook).__name__, sys.excepthook.__name__, ip.colors, ip.autoawait],
    "events": {name: len(callbacks) for name, callbacks in ip.events.callbacks.items()},
}, sort_keys=True))
"""


def test_a_warm_jobs_shell_is_the_shell_a_fresh_interpreter_makes(monkeypatch):
    """The same cell describes its shell in a warm job and in a fresh bubblewrap sandbox (the shell made in the job):
    namespace, magics, folders, history, environment, sys.path, builtins, hooks."""
    warm_state = json.loads(_stdout(_run(STATE), 0))
    assert warm.status().startswith("a warm interpreter"), warm.status()
    monkeypatch.setenv(warm.SWITCH, "0")
    fresh_state = json.loads(_stdout(_run(STATE), 0))
    assert warm_state == fresh_state
    assert warm_state["folders"] == ["/tmp/work", "/tmp/work", "/tmp/home", "/tmp/home/.ipython",
                                     "/tmp/home/.ipython/profile_default"]
    assert warm_state["dir_history"] == ["/tmp/work"] and warm_state["main_is_user_module"]
    assert warm_state["history"] == [":memory:", 1] and warm_state["threads"] == 1
    assert ".ipython/profile_default/startup" in warm_state["home"]
    assert warm_state["environment"]["MPLBACKEND"] == "module://matplotlib_inline.backend_inline"
    assert "pip" in warm_state["skipped"]["line"] and "time" not in warm_state["skipped"]["line"]


def test_a_job_runs_no_thread_of_ipython_and_its_history_works():
    """No history-saving thread in a job (the history is in memory), and %history still reads back the cells."""
    outcome = _run("x = 6 * 7", "import threading\nprint(threading.active_count())\n%history -n 1-2")
    assert _stdout(outcome, 1).splitlines() == ["1", "   1: x = 6 * 7", "   2:", "import threading",
                                                "print(threading.active_count())", "%history -n 1-2"]


MESSY_JOB = textwrap.dedent("""
    import builtins, os, sys, colorsys
    left_behind = 'from the previous job'
    builtins.abs = lambda value: 'tampered'
    builtins.left_behind_builtin = True
    get_ipython().register_magic_function(lambda line: 'magic of the previous job', magic_name='left_behind')
    get_ipython().user_ns_hidden['left_behind_hidden'] = 1
    get_ipython().execution_count = 100
    sys.path.append('/left/behind')
    os.environ['LEFT_BEHIND'] = '1'
    os.chdir('/tmp')
    get_ipython().history_manager.dir_hist.append('/left/behind')
    print('changed')
""")

LOOK = textwrap.dedent("""
    import builtins, os, sys
    print('variable', 'left_behind' in get_ipython().user_ns)
    print('abs', abs(-2))
    print('builtin', hasattr(builtins, 'left_behind_builtin'))
    print('magic', get_ipython().find_line_magic('left_behind') is not None)
    print('hidden', 'left_behind_hidden' in get_ipython().user_ns_hidden)
    print('import', 'colorsys' in sys.modules)
    print('sys.path', '/left/behind' in sys.path)
    print('environment', 'LEFT_BEHIND' in os.environ)
    print('folder', os.getcwd())
    print('dir_history', [str(p) for p in _dh])
    print('count', get_ipython().execution_count)
""")


def test_a_job_sees_nothing_a_previous_job_did_to_its_shell():
    assert _stdout(_run(MESSY_JOB), 0) == "changed\n"
    seen = dict(line.split(" ", 1) for line in _stdout(_run(LOOK), 0).splitlines())
    # count: the first cell of a fresh shell sees 2 (IPython counts the cell before running it)
    assert seen == {"variable": "False", "abs": "2", "builtin": "False", "magic": "False", "hidden": "False",
                    "import": "False", "sys.path": "False", "environment": "False", "folder": "/tmp/work",
                    "dir_history": "['/tmp/work']", "count": "2"}, seen
    assert warm.status().startswith("a warm interpreter"), warm.status()



def test_a_fresh_interpreter_runs_the_zygotes_own_payload_reader_and_probe_loader():
    """One source for loading the shipped probes: bubblewrap's job and a job without a sandbox run zygote.py itself."""
    program = warm.SOURCE.read_text()
    for command in (bubblewrap.sandbox_command(LIMITS, 3, 4), bubblewrap.plain_command()):
        assert command[-5:-2] == ["-I", "-c", program] and command[-2] == warm.ONE_JOB, command[-5:]
        assert json.loads(command[-1])["probe_package"] == "posenc_probes"


SNAPSHOT = r"""
import builtins, sys
guard, runner = sys.modules['posenc_probes.guard'], sys.modules['posenc_probes.runner']
trap = {'exit', 'quit', 'get_ipython'}          # IPython's BuiltinTrap puts these in builtins while a cell runs
changed = []
for namespace, kept in guard._SNAPSHOT:
    names = (namespace.keys() | kept.keys()) - (trap if namespace is vars(builtins) else set())
    changed += [n for n in names if n not in namespace or n not in kept or namespace[n] is not kept[n]]
print(len(guard._SNAPSHOT) > 10, vars(runner) in [namespace for namespace, _ in guard._SNAPSHOT], sorted(changed))
"""


def test_the_guards_snapshot_is_what_the_first_cell_finds(monkeypatch):
    """Taken once in the zygote (or at the start of a fresh interpreter's job): every name of numpy, builtins and the
    probes is the object the job's first cell finds there, nothing added or missing, the task included."""
    assert _stdout(_run(SNAPSHOT), 0) == "True True []\n"
    monkeypatch.setenv(warm.SWITCH, "0")
    assert _stdout(_run(SNAPSHOT), 0) == "True True []\n"


FIRST_CELLS = r"""
import importlib, importlib.util, os, re, sys
spec = importlib.util.spec_from_file_location("zygote_under_test", sys.argv[1])
zygote = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zygote)
for name in ("numpy", "IPython.core.interactiveshell", *zygote.SHELL_MODULES):
    importlib.import_module(name)
from posenc_autograder.probes import shell_runner
shell = shell_runner.place(shell_runner.prepared())
modules, expressions = set(sys.modules), set(re._cache)
for source in ("import numpy as np", "x = np.arange(3)\nif x[0] == 0:\n    y = '''a\n    b'''",
               "def f(a):\n    return a"):
    assert shell.run_cell(source, store_history=True).success
print(sorted(set(sys.modules) - modules), len(set(re._cache) - expressions))
"""


def test_a_jobs_first_cells_import_and_compile_nothing_the_zygote_could_have(tmp_path):
    """What IPython loads on its first cells (bdb, the input transformers' regular expression) is loaded in the zygote,
    before it serves: each job would load it again, as its own CPU."""
    done = subprocess.run([sys.executable, "-c", FIRST_CELLS, str(warm.SOURCE)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[] 0\n", done.stdout


COUNT_REALPATHS = r"""
import posixpath
resolved = []
realpath = posixpath.realpath
posixpath.realpath = lambda path, *args, **kwargs: resolved.append(path) or realpath(path, *args, **kwargs)
"""


def test_a_warm_jobs_traceback_resolves_no_path_of_the_modules_the_zygote_loaded(monkeypatch):
    """IPython's traceback asks inspect for each frame's module: the zygote has asked once, so the job resolves only
    the modules it imported itself; the traceback reads as a fresh interpreter's."""
    cells = (COUNT_REALPATHS, "def f():\n    raise ValueError('boom')\n", "f()", "print(len(resolved))")
    warm_job = _run_failing(*cells)
    assert int(_stdout(warm_job, 3)) < 10, _stdout(warm_job, 3)
    monkeypatch.setenv(warm.SWITCH, "0")
    fresh = _run_failing(*cells)
    assert int(_stdout(fresh, 3)) > 100
    assert warm_job.outputs[2] == fresh.outputs[2] and "Cell In[2], line 2, in f()" in _stdout(fresh, 2)


def _run_failing(*sources: str) -> supervisor.RunOutcome:
    cells = [{"cell_type": "code", "source": source} for source in sources]
    outcome = supervisor.run_job(cells, codec.frame({}), [], probe_files(), LIMITS)
    assert outcome.finished, (outcome.events, outcome.log_tail)
    return outcome


FAILING_CELLS = r"""
import contextlib, io, json
from IPython.core import ultratb
from posenc_autograder.probes.shell_runner import kernel_shell
shell = kernel_shell()
formatted = []
verbose = ultratb.VerboseTB.structured_traceback
ultratb.VerboseTB.structured_traceback = lambda self, *args, **kwargs: formatted.append(1) or verbose(self, *args,
                                                                                                        **kwargs)
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    shell.run_cell("def f():\n    raise ValueError('boom')\n", store_history=True)
    shell.run_cell("try:\n    f()\nexcept ValueError as error:\n    raise KeyError('key') from error\n",
                   store_history=True)
made = len(formatted)
error = shell.last_execution_result.error_in_exec
stock = ultratb.AutoFormattedTB(mode=shell.xmode, theme_name=shell.colors, tb_offset=1)
stock.set_mode(mode=shell.xmode)
lines = stock.structured_traceback(type(error), error, error.__traceback__, tb_offset=1)
stored = shell.history_manager.exceptions[2]
print(json.dumps({"made": made, "stored": stored == {"ename": "KeyError", "evalue": "'key'", "traceback": lines},
                  "shown": stock.stb2text(lines) in printed.getvalue(),
                  "kept": getattr(shell.InteractiveTB, "remembered", None)}))
"""


def test_a_failing_cells_traceback_is_formatted_once_and_stored_as_ipython_stores_it(tmp_path):
    """IPython shows a failing cell's traceback and then formats the same exception again for its history; the
    second is a copy of the first (each scans every loaded module for each frame): the lines shown and stored are a
    stock formatter's, and the shell keeps no exception of a cell once it has run."""
    done = subprocess.run([sys.executable, "-c", FAILING_CELLS], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"made": 1, "stored": True, "shown": True, "kept": None}, done.stdout


def test_a_cell_that_writes_more_than_the_jobs_memory_costs_its_output_not_the_notebook():
    """A cell printing large text in a loop (1.25 GiB in 64 KB writes, a job of 1 GiB): its output is cut at the cell's
    cap and the next cell runs. IPython 9's shell kept a copy of every write in its history (unbounded), so the job
    died of a MemoryError and every later cell, hidden tests included, scored nothing."""
    limits = Limits(cell_seconds=30, notebook_seconds=90, memory_bytes=2**30)
    cells = [{"cell_type": "code", "source": source} for source in
             ("import sys\nfor _ in range(20_000):\n    sys.stdout.write('y' * 65536)", "print('after')")]
    outcome = supervisor.run_job(cells, codec.frame({}), [], probe_files(), limits)
    assert outcome.finished and outcome.events == [], (outcome.events, outcome.log_tail)
    assert outcome.outputs[0]["truncated"] and _stdout(outcome, 1) == "after\n"


GROWING_ARRAYS = """
import resource
import numpy as np
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
before = faults()
for size in range(1, 9):          # 36 MB written, each array freed before the next, larger one
    np.ones(size << 20, dtype=np.uint8)
grown = faults() - before
before = faults()
for size in (3, 2, 3, 1, 3, 2):
    np.ones(size << 20, dtype=np.uint8)
print(grown, faults() - before)
"""


def test_a_jobs_arrays_of_a_few_mb_reuse_freed_heap_in_a_warm_job_and_a_fresh_one(monkeypatch):
    """malloc's thresholds are set where glibc moves them once a 32 MB block is freed: arrays under 32 MB come from
    the heap and reuse what was freed, instead of each being mapped afresh and faulted page by page (on the old code
    ~770 faults for the smaller arrays after the growing ones, and 4,600 for those in a fresh interpreter; now the
    heap's growth, 8 MB, and none)."""
    warm_job = _run(GROWING_ARRAYS)
    monkeypatch.setenv(warm.SWITCH, "0")
    fresh = _run(GROWING_ARRAYS)
    for outcome in (warm_job, fresh):
        grown, again = map(int, _stdout(outcome, 0).split())
        assert grown < 3000 and again < 100, (grown, again)


HUGE_PAGE_MODE = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")
HEAP_GROWN = """
import resource
import numpy as np
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
before = faults()
kept = [np.ones(1 << 20, dtype=np.uint8) for _ in range(32)]     # the heap grown by 32 MB, in arrays numpy madvises not
print(faults() - before)
"""


def test_a_warm_jobs_heap_grows_in_huge_pages():
    """The zygote starts with glibc's malloc asking for transparent huge pages for each extension of the heap
    (warm.HEAP_TUNABLES): where the kernel gives them only on request (`madvise`, this machine's mode), a job's heap
    grows 2 MB a fault, as its records and arrays of a few MB fill it (on the old code 4 kB a fault: ~8,200 faults for
    these 32 MB, now ~600; ~1,500 faults a job of the portal's mix, 0.011 CPU-s). Nothing to check where the kernel
    gives none."""
    if not HUGE_PAGE_MODE.exists() or "[never]" in HUGE_PAGE_MODE.read_text():
        pytest.skip("this kernel gives no transparent huge pages")
    assert int(_stdout(_run(HEAP_GROWN), 0)) < 4096


RUN_MAIN = r"""
import io, os, sys
from posenc_autograder.probes import codec, shell_runner
os.environ.update({"POSENC_CHANNEL_FD": str(os.open(os.devnull, os.O_WRONLY)), "POSENC_WORK_DIR": f"{os.getcwd()}/w",
                   "HOME": f"{os.getcwd()}/h"})
walk = shell_runner.probe_modules
shell_runner.probe_modules = lambda task: os.write(1, b"walked\n") and walk(task)
shell = shell_runner.prepared() if sys.argv[1] == "warm" else None   # as the zygote makes it, its probes imported
task = codec.frame({"t": {"module": "helpers", "probe": "call_each", "data": {"stand_ins": {}}}})
cells = [{"cell_type": "code", "source": "import os\nos.write(1, b'ran\\n')"}]
shell_runner.main({"cells": cells, "limits": {"max_cell_output_bytes": 1000, "cell_seconds": 30}, "skip": []},
                  io.BytesIO(task), shell)
"""


@pytest.mark.parametrize("job", ["warm", "fresh"])
def test_only_a_fresh_interpreters_job_walks_its_task_for_the_probe_modules_to_load(tmp_path, job):
    """A warm job's zygote imported every shipped probe module before serving: walking the task's every entry for the
    ones it names (the shared set's nested entries, their stand-in tables) would be a second read of the task."""
    done = subprocess.run([sys.executable, "-c", RUN_MAIN, job], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    said = done.stdout.split()
    assert said[-1:] == ["ran"] and ("walked" in said) == (job == "fresh"), (done.stdout, done.stderr)
