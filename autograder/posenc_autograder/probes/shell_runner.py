"""Run an assembled notebook's code cells in an IPython shell, inside the sandbox.

The payload (cells, task, limits, cells to skip) arrives on standard input before any student code
runs. The runner announces each cell and sends its capped output on the channel. A cell past its time limit is
interrupted here, as Jupyter's interrupt stops a cell, and the run goes on with the next one; the student's function
the interrupt stopped raises at once from then on, so a loop costs one cell limit, not one per cell that calls it.
The trusted supervisor outside keeps its own clocks and kills the process when a cell outlives its limit by more
than a grace period. No Jupyter kernel or client is started: the shell runs in this
process, which keeps a job's start-up cost to a fraction of a second, and is configured as ipykernel
configures its own (kernel_shell), so a notebook that runs in Jupyter defines the same names here.
"""
from __future__ import annotations

import _thread
import ast
import contextlib
import gc
import importlib
import io
import os
import pathlib
import re
import signal
import sys
import types
import warnings
from typing import BinaryIO

from IPython.core import ultratb
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.profiledir import ProfileDir
from IPython.paths import get_ipython_dir
from IPython.utils.path import get_home_dir
from IPython.utils.text import SList
from traitlets.config import Config

from . import channel, codec, guard, helpers, magics, runner
from .known_cells import KnownCells

INLINE_BACKEND = "module://matplotlib_inline.backend_inline"      # ipykernel's default backend

PROBE_CELL = re.compile(r"^_posenc_probe\('([A-Za-z0-9_]+)', globals\(\)\)\s*\Z", re.M)


class CappedText(io.TextIOBase):
    """A text stream that keeps at most `limit` characters and remembers whether it dropped any."""

    def __init__(self, limit: int):
        self.limit, self.parts, self.size, self.truncated = limit, [], 0, False

    def writable(self):
        return True

    def write(self, text):
        text = str(text)
        room = self.limit - self.size
        if len(text) > room:
            self.truncated = True
            text = text[:max(room, 0)]
        self.parts.append(text)
        self.size += len(text)
        return len(text)

    def getvalue(self):
        return "".join(self.parts)


class _Interrupted:
    """A probe cell's interruption, read by _outputs as IPython's result of an interrupted cell."""

    def __init__(self, error: BaseException):
        self.error_in_exec, self.error_before_exec = error, None


def _outputs(stdout: CappedText, stderr: CappedText, result) -> dict:
    outputs = [{"output_type": "stream", "name": name, "text": stream.getvalue()}
               for name, stream in (("stdout", stdout), ("stderr", stderr)) if stream.getvalue()]
    error = result and (result.error_in_exec or result.error_before_exec)
    if error is not None:
        outputs.append({"output_type": "error", "ename": type(error).__name__, "evalue": error_text(error)[:1000],
                        "traceback": []})
    return {"outputs": outputs, "truncated": stdout.truncated or stderr.truncated}


def probe_modules(task: dict) -> set[str]:
    """The probe modules a task's entries name (the shared set's entries nest theirs), and the stand-in modules
    of the assignments whose stand-ins their inputs name."""
    found = set()
    for entry in task.values():
        found.add(entry["module"])
        found |= probe_modules(entry["data"].get("entries", {})) if isinstance(entry.get("data"), dict) else set()
        found |= {helpers.shipped_stand_ins(a) for a in helpers.stand_in_assignments(entry.get("data"))}
    return found


MESSAGE_KEPT = 900       # of an error's message; its output is capped at 1000 characters, "(line N)" included


def error_text(error: BaseException) -> str:
    """The error's message with the line of the cell it came from: a cell that did not run is named with it."""
    if isinstance(error, SyntaxError):          # IndentationError too: the message and the line, no file name
        return f"{error.msg} (line {error.lineno})"
    lines, trace = {}, error.__traceback__
    while trace is not None:                    # the cell's own frame is the last module-level one of a cell's file,
        code = trace.tb_frame.f_code            # not %time's "<timed exec>" nor exec's "<string>" run from it
        if code.co_name == "<module>":
            lines[code.co_filename.startswith(CELL_FILE)] = trace.tb_lineno
        trace = trace.tb_next
    line = lines.get(True, lines.get(False))
    message = str(error)
    if len(message) > MESSAGE_KEPT:             # the line must survive the cap on the whole text (a printed array)
        message = message[:MESSAGE_KEPT] + " ..."
    return f"{message} (line {line})" if line else message


ASYNC_WORDS = ("await", "async")


class OnceFormattedTB(ultratb.AutoFormattedTB):
    """IPython's formatter of a cell's traceback, formatting an exception once: a shell that stores history shows a
    failing cell's traceback, then formats the same exception again, at the same offset, for its history
    (history_manager.exceptions). Asked again with the same exception, traceback, offset, context, mode and theme
    right after, it gives a copy of the lines it made. Each formatting reads the cell's source and, for each frame,
    scans every loaded module (inspect.getmodule): most of a failing cell's cost. No code of the notebook runs
    between the two calls in Jupyter, whose shown traceback is a message, not a print."""

    remembered: tuple | None = None

    def structured_traceback(self, etype, evalue, etb=None, tb_offset=None, context=5):
        call = (etype, evalue, etb, self.tb_offset if tb_offset is None else tb_offset, context, self.mode,
                self._theme_name)
        remembered, self.remembered = self.remembered, None
        if remembered is not None and all(a is b for a, b in zip(remembered[0], call, strict=True)):
            self.tb = etb[0] if isinstance(etb, tuple) else etb       # as the formatting sets it
            return list(remembered[1])
        lines = super().structured_traceback(etype, evalue, etb, tb_offset, context)
        self.remembered = (call, list(lines))
        return lines


class KernelShell(InteractiveShell):
    """The shell as a Jupyter kernel runs cells, without the kernel: figures go to the inline backend, which
    needs no event loop; `!cmd` shell escapes are refused and do nothing, so the rest of the cell runs. Its compiler
    keeps the release's cells the warm zygote learned (known_cells)."""

    compiler_class = KnownCells

    def init_traceback_handlers(self, custom_exceptions) -> None:
        super().init_traceback_handlers(custom_exceptions)
        self.InteractiveTB = OnceFormattedTB(mode=self.xmode, theme_name=self.colors, tb_offset=1)  # IPython's own
        self.InteractiveTB.set_mode(mode=self.xmode)

    def run_cell(self, *args, **kwargs):
        try:
            return super().run_cell(*args, **kwargs)
        finally:
            if isinstance(self.InteractiveTB, OnceFormattedTB):
                self.InteractiveTB.remembered = None      # the cell's exception and its frames are not kept for it

    @contextlib.contextmanager
    def _tee(self, channel):
        """No copy of what a cell writes kept in the shell's history: IPython 9 keeps every write there, without
        bound, whatever the job's streams (CappedText) keep, so a cell printing in a loop filled the job's memory
        and the notebook died there instead of having its output cut."""
        yield

    def transform_cell(self, raw_cell):
        known = self.compile.transform(raw_cell) if isinstance(self.compile, KnownCells) else None
        return known if known is not None else super().transform_cell(raw_cell)

    def enable_gui(self, gui=None):
        self.active_eventloop = gui           # inline figures need no GUI event loop (ipykernel runs none for them)

    def system(self, cmd):
        return None

    def getoutput(self, cmd, split=True, depth=0):
        return SList()

    def should_run_async(self, raw_cell, *, transformed_cell=None, preprocessing_exc_tuple=None):
        """IPython's answer, without compiling the whole cell once more when it cannot be a coroutine: only `await`,
        `async for`, `async with` and async comprehensions make one, and none is written without those words."""
        if isinstance(transformed_cell, str) and not any(word in transformed_cell for word in ASYNC_WORDS):
            return False
        return super().should_run_async(raw_cell, transformed_cell=transformed_cell,
                                        preprocessing_exc_tuple=preprocessing_exc_tuple)


def _skip(line, cell=None):
    """What a magic the grader does not run does instead: nothing (magics.skipped_in names it to the student)."""
    return None


def kernel_shell() -> InteractiveShell:
    """The shell, made and placed in this process (a fresh interpreter; the warm zygote makes it once and each job
    places its copy)."""
    return place(made_shell())


def made_shell() -> InteractiveShell:
    """The shell configured as ipykernel's: the inline matplotlib backend (so `%matplotlib inline` and plt.show()
    work), display() as a builtin, `%%capture`, `%time` and friends; figures are published as text only (the
    grader keeps text), and every magic outside magics.RUNS is replaced by one that does nothing.

    Made so that the warm zygote can make it once for every job: it starts no thread (history is kept in memory,
    where a job's history lives anyway, without IPython's saving thread) and writes nothing (no profile folder:
    `place` gives it the job's)."""
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    # An existing folder, so the shell creates none here; its profile folder is made by place().
    shell = KernelShell.instance(config=config, colors="NoColor", ipython_dir=os.path.abspath(os.sep),
                                 profile_dir=ProfileDir())
    shell.display_formatter.active_types = ["text/plain"]
    if isinstance(shell.compile, KnownCells):
        shell.compile.shell = shell
    aliases = [name for name, _ in shell.alias_manager.aliases]   # `%ls`, `%cat`: shell commands by another name
    shell.alias_manager.clear_aliases()
    shell.alias_manager.default_aliases = []                      # %reset would define them again
    for kind, registered in shell.magics_manager.magics.items():
        for name in list(registered) + (aliases if kind == "line" else []):
            if not magics.runs(kind, name):
                shell.register_magic_function(_skip, magic_kind=kind, magic_name=name)
    show_inline = shell.find_line_magic("matplotlib")
    shell.register_magic_function(lambda line: show_inline("inline"), magic_kind="line", magic_name="matplotlib")
    manager = shell.input_transformer_manager
    tokenised = manager.do_token_transforms
    manager.do_token_transforms = lambda lines: lines if plain_python(lines) else tokenised(lines)
    once_line, once_cell = shell.find_line_magic("timeit"), shell.find_cell_magic("timeit")
    shell.register_magic_function(lambda line: once_line(timed_once(line)), magic_kind="line", magic_name="timeit")
    shell.register_magic_function(lambda line, cell: once_cell(timed_once(line), cell), magic_kind="cell",
                                  magic_name="timeit")
    return shell


def place(shell: InteractiveShell) -> InteractiveShell:
    """What a shell takes from the process it is made in, taken again from this one (the job's): the backend
    variable in its environment, its working and home folders, and its profile folder, made in the job's home
    as IPython makes it."""
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    folder = os.getcwd()
    shell.starting_dir, shell.home_dir = folder, get_home_dir()
    shell.history_manager.dir_hist[:] = [pathlib.Path(folder)]      # the list `_dh` is
    shell.ipython_dir = get_ipython_dir()
    shell.profile_dir = ProfileDir.create_profile_dir_by_name(shell.ipython_dir, "default")
    return shell


ESCAPES = ("%", "!", "?")           # magics, shell escapes, help: IPython's token transforms look for these anywhere
LINE_ESCAPES = (",", ";", "/")      # autocall (`,f a`, `;f a`, `/f x`): only as the first token of a line


def plain_python(lines: list[str]) -> bool:
    """Whether IPython's token transforms would leave the cell's lines as they are, found without its tokenizer (most
    of a cell's cost to run). Each transform needs `%`, `!` or `?` as a token, or an autocall escape as the first
    token of a line: a cell with none of those characters and no line starting with an escape is left as it is,
    unread. A cell that has them but parses as Python is left as it is too (`!=`, `%` formatting, `?` in a string):
    none of that syntax is Python. Anything else goes through IPython."""
    source = "".join(lines)
    if not any(mark in source for mark in ESCAPES) and not any(line.lstrip().startswith(LINE_ESCAPES)
                                                               for line in lines):
        return True
    try:
        with warnings.catch_warnings():       # IPython compiles the cell itself: its warnings are shown then, once
            warnings.simplefilter("ignore")
            ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def timed_once(line: str) -> str:
    """%timeit's options with one loop and one repeat, unless the student chose their own: what the statement defines
    or prints is the same, and the grader has no use for the timing (Jupyter's hundreds of thousands of runs of a fast
    call take seconds of the cell's time limit)."""
    chosen = set(re.findall(r"(?:^|\s)-([nr])", line))
    return " ".join([f"-{option}1" for option in "nr" if option not in chosen] + [line])


def learn(shell: InteractiveShell | None, sources) -> None:
    """The release's cells, learned by the shell the warm zygote made before it forks the next job (known_cells)."""
    if shell is not None and isinstance(shell.compile, KnownCells) and isinstance(sources, list):
        for source in sources:
            shell.compile.learn(source)


def prepared() -> InteractiveShell:
    """What a job needs before its payload, once the probes it may call are imported: the shell made (not yet placed)
    and the guard's snapshot taken. Done once in the warm zygote for every job, or at the start of a job in a fresh
    interpreter."""
    shell = made_shell()
    # The input transformers compile a regular expression on their first call (kept in re's cache): compiled here,
    # on a text of the grader's, so no job compiles it again. Transforming runs no code and changes no state.
    shell.input_transformer_manager.transform_cell("pass\n")
    guard.snapshot()
    return shell


class CellTimeout(KeyboardInterrupt):
    """A cell past its time limit, stopped as Jupyter's interrupt stops one: the probes let KeyboardInterrupt through,
    so a probe's call stops too, and IPython records it as the cell's error."""


class Interrupter:
    """Interrupts a cell that runs past `seconds` (SIGALRM, whose handler raises in the cell's code), only while a
    cell runs; a cell that catches the interrupt and goes on is the supervisor's to stop.

    The cell's clock starts on the supervisor's go for that cell (its index on `goes`, read by a thread of its own),
    written once the supervisor's clock for the cell runs: so the interrupt comes a full limit after the supervisor's
    start, however late a loaded machine let the supervisor read the cell's mark, and the supervisor counts it. The
    cell itself starts at once: a go for another cell (one that ended, or a mark a cell forged) is ignored, and a cell
    whose go never comes (its mark swallowed by a frame it cut short) is bounded by the supervisor's kill."""

    def __init__(self, seconds: float, goes: int):
        self.seconds, self.running, self.armed, self.fired = seconds, False, False, False
        self.expected: int | None = None       # the cell whose go starts the clock: the next to run, or running
        self.lock = _thread.allocate_lock()
        signal.signal(signal.SIGALRM, self._interrupt)
        # The runner's own thread, outside threading's registry (as the signal handler is): a cell's
        # threading.active_count() and enumerate() count the notebook's threads alone, as before it.
        _thread.start_new_thread(self._listen, (goes,))

    def _interrupt(self, signum, frame):
        if self.running:
            self.fired = True
            raise CellTimeout(f"the cell ran longer than {self.seconds:g} s and was interrupted")

    def _listen(self, goes: int) -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})   # the interrupt is the cell's: its thread's to take
        read, words, go, pending = os.read, channel.GO, self.go, b""      # held before any cell runs
        while True:
            try:
                data = read(goes, 4096)
            except OSError:
                return
            if not data:
                return                    # no supervisor feeds this job (or it is gone): cells run unclocked here
            pending += data
            whole = len(pending) - len(pending) % words.size
            for (index,) in words.iter_unpack(pending[:whole]):
                go(index)
            pending = pending[whole:]

    def expect(self, index: int) -> None:
        """Cell `index` is next: its go may come as soon as its mark is sent, so this is said before."""
        with self.lock:
            self.expected, self.armed, self.fired = index, False, False

    def go(self, index: int) -> None:
        """The supervisor's clock for cell `index` runs: the cell's own starts now, if it is the one expected."""
        with self.lock:
            if self.expected == index and not self.armed:
                self.armed = True
                signal.setitimer(signal.ITIMER_REAL, self.seconds)

    @contextlib.contextmanager
    def cell(self):
        self.running = True
        try:
            yield
        finally:
            self.running = False          # first: a signal from here on raises nothing
            with self.lock:
                self.expected = None
                signal.setitimer(signal.ITIMER_REAL, 0)


def go_words() -> int:
    """The descriptor the supervisor's go words come on (standard input, after the task), moved off 0: the cells and
    their processes find an empty input there, as they did when the input ended with the task."""
    goes = os.dup(0)
    try:
        empty = os.open(os.devnull, os.O_RDONLY)
    except OSError:                      # no /dev/null: the input stays shared
        return goes
    os.dup2(empty, 0)
    os.close(empty)
    return goes


CELL_FILE = "<ipython-input-"          # the file name IPython compiles a cell's code under


def stop_looping_function(error: BaseException, seconds: float) -> str | None:
    """The student's function the interrupt stopped (the innermost one defined in a cell), made to raise TimeoutError
    at once from now on, wherever it is referenced (its code replaced): called again, it would loop again, costing
    every later cell that calls it a full limit. Its name, or None (the loop was in a cell's own code, a lambda or a
    comprehension, or in a closure, whose code cannot be swapped)."""
    frames, trace = [], error.__traceback__
    while trace is not None:
        frames.append(trace.tb_frame.f_code)
        trace = trace.tb_next
    code = next((c for c in reversed(frames) if c.co_filename.startswith(CELL_FILE) and not c.co_name.startswith("<")),
                None)
    if code is None or code.co_freevars:
        return None
    message = f"{code.co_name} ran longer than {seconds:g} s and was interrupted; it is not called again in this run"
    module = compile(f"def {code.co_name}(*args, **kwargs):\n    raise TimeoutError({message!r})\n", "<grader>",
                     "exec")
    stopper = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    for referrer in gc.get_referrers(code):
        if isinstance(referrer, types.FunctionType) and referrer.__code__ is code:
            referrer.__code__ = stopper
    return code.co_name


def main(payload: dict, task: BinaryIO, shell: InteractiveShell | None = None) -> None:
    """Run every code cell not in payload['skip'], announcing each and sending its capped output. `task`: the stream
    holding the task frame (the job's standard input; the supervisor's go words, one a cell, come after it on the
    same descriptor). `shell`: the one prepared() made before this job (in the warm zygote), placed here; None:
    prepared here."""
    # In place: a snapshot taken before (the zygote's) holds it. The input goes on: the supervisor's go words.
    runner.TASK.update(codec.read_frame(task, to_end=False))
    sys.stdin.close()
    max_output = int(payload["limits"]["max_cell_output_bytes"])
    skip = set(payload["skip"])
    work = pathlib.Path(os.environ["POSENC_WORK_DIR"])
    for folder in (work, pathlib.Path(os.environ["HOME"])):
        folder.mkdir(parents=True, exist_ok=True)
    os.chdir(work)
    if shell is None:    # a fresh interpreter: the probe modules its task names, loaded before student code runs (a
        for name in probe_modules(runner.TASK):      # warm zygote imported every shipped one: its job walks no task)
            importlib.import_module(f"{__package__}.{name}")
    shell = place(shell if shell is not None else prepared())
    restore, run_probe, send = guard.restore, runner.run, channel.send      # held here, out of a cell's reach
    interrupter = Interrupter(float(payload["limits"]["cell_seconds"]), go_words())
    for index, cell in enumerate(payload["cells"]):
        if cell["cell_type"] != "code" or index in skip:
            continue
        interrupter.expect(index)
        send({"cell": index})
        stdout, stderr = CappedText(max_output), CappedText(max_output)
        probe = PROBE_CELL.search(cell["source"])
        result = None
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                with interrupter.cell():
                    if probe and probe.group(1) in runner.TASK:
                        restore()                # a probe cell runs the probe itself, not the cell's text
                        run_probe(probe.group(1), shell.user_ns)
                    else:
                        result = shell.run_cell(cell["source"], store_history=True)
            except CellTimeout as error:         # in a probe's call (IPython's run_cell keeps its own)
                result = _Interrupted(error)
        if interrupter.fired and result is not None and isinstance(result.error_in_exec, CellTimeout):
            stop_looping_function(result.error_in_exec, interrupter.seconds)
        send({"output": index, **_outputs(stdout, stderr, result), "interrupted": interrupter.fired})
    channel.send({"done": True})
    os._exit(0)   # do not wait for threads the student may have left running
