"""The supervisor of one grading job: it starts each attempt (launch.py), feeds it its payload, keeps both clocks,
reads the channel (channel_reader.py) and the log within their budgets, and ends the attempt on a time limit, a
flood or an unreadable channel.

Nothing passes through the host's file system. The notebook, task and limits go in on standard input (a JSON
header, then the task as a codec frame); announcements, outputs and results come out as codec frames on an
inherited pipe (probes/channel.py) that the supervisor reads with byte caps, each checked before it is built and
decoded once.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import functools
import json
import os
import select
import selectors
import tempfile
import threading
import time
from collections.abc import Callable, Sequence

from posenc_autograder.probes import codec
from posenc_autograder.probes.channel import GO
from posenc_autograder.sandbox.cgroups import cgroup_cpu_seconds, kill_cgroup, make_cgroups, remove_cgroups
from posenc_autograder.sandbox.channel_reader import ChannelReader, sanitise_outputs
from posenc_autograder.sandbox.launch import ZygoteGone, launcher
from posenc_autograder.sandbox.layout import HEADER_LENGTH_BYTES, HOME_DIR, WORK_DIR
from posenc_autograder.settings import Limits

MAX_LOST = 2                      # attempts lost to a dying zygote before the job is given up (not graded)
POLL_SECONDS = 0.05
EXIT_GRACE_SECONDS = 1.0          # to drain the channel after the process ended
LOG_TAIL_BYTES = 4000
LOG_READ_BYTES = 1 << 16
LOG_BUDGET_BYTES = 1 << 20        # the job's log read here, at most; past it the pipe is drained unread (_drain)
LOG_DRAIN_BYTES = 8 << 20         # at most this much each POLL_SECONDS: a flood then costs the job its own time
CHANNEL_READ_BYTES = 1 << 20      # the channel's pipe size (_widen), read whole
INTERRUPT_GRACE_SECONDS = 2.0     # past its limit a cell is interrupted in the job; this much later, the job is killed


@dataclasses.dataclass
class RunOutcome:
    events: list[dict]                 # cell timeouts, deaths, the notebook limit; cells are notebook indices
    finished: bool                     # the last attempt ran to the end of the notebook
    wall_seconds: float
    log_tail: str                      # the runner's own stdout/stderr: shown only when no student code ran
    results: dict[str, dict]           # hidden cell id -> the probe's record (decoded, untrusted), or
                                       # what run_job's `decode` made of it as it arrived
    outputs: dict[int, dict]           # cell index -> sanitised outputs of the last attempt that ran it
    cpu_seconds: float = 0.0           # the sandboxes' CPU (user + system), every attempt, as the kernel counted it
    runs: int = 1                      # times the notebook was run: once (a job lost with its zygote not counted)
    log_bytes: int = 0                 # of the job's log read here (each attempt's at most LOG_BUDGET_BYTES)



class Attempt:
    """One run of the notebook, watched: the clocks, the channel and the process are the supervisor's."""

    def __init__(self, launch, payload: Callable[[bool], bytes], code_cells: list[int], skip: list[int],
                 limits: Limits, reader: ChannelReader, results: dict, outputs: dict, decode=None):
        self.launch, self.payload, self.limits, self.decode = launch, payload, limits, decode
        self.expected = [i for i in code_cells if i not in set(skip)]
        self.reader, self.results, self.outputs = reader, results, outputs
        self.current: int | None = None    # the code cell running, by the job's marks
        self.since, self.done, self.log = time.monotonic(), False, bytearray()
        self.cpu_seconds, self.log_read, self.draining, self.next_drain = 0.0, 0, None, 0.0
        self.refused: dict | None = None   # the first frame refused: {"reason", "bytes" announced, "cell" it came in}
        self.interrupted: list[int] = []   # cells past their limit that the job interrupted, by this side's clock
        self.goes: int | None = None       # where the go words go: the job's input, kept open past its payload
        reader.start_attempt()

    def accept(self, frame: dict, tasks: set[str]) -> None:
        if "cell" in frame:
            # Marks only move forward through the code cells, so forged marks can buy a cell at most
            # one fresh per-cell clock each, never an unbounded one.
            cell = frame["cell"]
            if type(cell) is int and cell in self.expected and (self.current is None or cell > self.current):
                self.current, self.since = cell, time.monotonic()
                self._go(cell)
        elif "output" in frame:
            cell = frame["output"]
            # The job's clock for a cell starts on this side's go (_go), after `since`, however late this side read
            # the mark: an interrupt the job made comes a full limit after `since`; a forged one earlier does not count.
            if frame.get("interrupted") is True and cell == self.current and \
                    time.monotonic() - self.since >= self.limits.cell_seconds:
                self.interrupted.append(cell)
            if type(cell) is int and cell in self.expected and self.reader.output_bytes < self.limits.max_output_bytes:
                self.outputs[cell] = sanitise_outputs(frame, self.limits.max_cell_output_bytes)
                self.reader.output_bytes += sum(len(o.get("text", "")) + len(o.get("evalue", ""))
                                                for o in self.outputs[cell]["outputs"])
        elif "result" in frame:
            # A forged frame's fields may be of any JSON type: check before hashing (a list in `tasks` raises).
            if isinstance(frame["result"], str) and frame["result"] in tasks and isinstance(frame.get("record"), dict):
                record = frame.pop("record")
                kept = self.decode(record, cell=frame["result"]) if self.decode else record
                if kept is None:
                    self.results.pop(frame["result"], None)
                else:
                    self.results[frame["result"]] = kept
        elif frame.get("done") is True:
            self.done = True

    def _go(self, cell: int) -> None:
        """Tell the job its clock for the cell may start, this side's having started: the cell's index on its input,
        written only when the pipe has room (never waited for: a go that is not written leaves the cell to this side's
        kill, as does one the job does not read)."""
        if self.goes is None:
            return
        room = select.poll()             # not select(): a busy process's descriptors may number past its 1024
        room.register(self.goes, select.POLLOUT)
        if room.poll(0):
            try:
                os.write(self.goes, GO.pack(cell))
            except OSError:              # the job is gone
                pass

    def run(self, deadline: float, tasks: set[str], cgroups) -> tuple[str, int | None]:
        """How the attempt ended ('finished', 'died', 'cell_timeout', 'notebook_time_limit', 'flood', 'unreadable':
        a header announced more than the channel can still carry, or 'lost': the warm sandbox's zygote died under it,
        not the student's doing), and the cell it ended in."""
        channel_r, channel_w = os.pipe()
        _widen(channel_w)
        try:
            process = self.launch(channel_w, cgroups)
        except ZygoteGone:
            os.close(channel_r)
            return "lost", None
        finally:
            os.close(channel_w)
        payload = self.payload(process.holds_probes)
        self.goes = os.dup(process.stdin.fileno())     # the feeder closes its own end once the payload is in
        feeder = threading.Thread(target=_feed, args=(process.stdin, payload), daemon=True)
        feeder.start()
        try:
            ending, cell = self._watch(process, channel_r, deadline, tasks)
            return ("lost", cell) if process.lost else (ending, cell)
        finally:
            process.kill()
            self.cpu_seconds = process.wait()
            for group in cgroups:
                kill_cgroup(group)
            process.close()
            os.close(channel_r)
            os.close(self.goes)
            self.goes = None

    def _watch(self, process, channel_r: int, deadline: float, tasks: set[str]):
        selector = selectors.DefaultSelector()
        selector.register(channel_r, selectors.EVENT_READ, "channel")
        selector.register(process.log, selectors.EVENT_READ, "log")
        _widen(process.log.fileno())            # a flood of the log then wakes this thread once a MiB
        sink = os.open(os.devnull, os.O_WRONLY)
        try:
            return self._select(selector, process, channel_r, deadline, tasks, sink)
        finally:
            os.close(sink)

    def _select(self, selector, process, channel_r: int, deadline: float, tasks: set[str], sink: int):
        exited_at = None
        while True:
            for key, _ in selector.select(0 if exited_at else POLL_SECONDS):
                if key.data == "log" and self.log_read >= LOG_BUDGET_BYTES:
                    selector.unregister(key.fileobj)          # from now on drained on the clock, below
                    self.draining = key.fd
                    continue
                data = os.read(key.fd, CHANNEL_READ_BYTES if key.data == "channel"
                               else min(LOG_READ_BYTES, LOG_BUDGET_BYTES - self.log_read))   # never past the budget
                if not data:
                    selector.unregister(key.fileobj)
                elif key.data == "log":
                    self.log_read += len(data)
                    self.log = (self.log + data)[-LOG_TAIL_BYTES:]
                else:
                    ending = self._read(data, tasks)
                    if ending:
                        return ending, self.current
            now = time.monotonic()
            if self.draining is not None and now >= self.next_drain:
                self.next_drain = now + POLL_SECONDS
                if not _drain(self.draining, sink):
                    self.draining = None
            if exited_at is None and process.exited():
                exited_at = now
            if exited_at is not None and (not selector.get_map() or now - exited_at > EXIT_GRACE_SECONDS):
                return self._ended(), self.current
            if now >= deadline:
                return "notebook_time_limit", self.current
            if self.current is not None and now - self.since > self.limits.cell_seconds + INTERRUPT_GRACE_SECONDS:
                return "cell_timeout", self.current


    def _ended(self) -> str:
        """How an attempt whose process ended did: to its end, or not. Without its end, a channel left inside a frame
        (a frame cut short) or holding a refused one was made unreadable by the cell's own writes, which may have
        swallowed the runner's frames after them: that is not a death."""
        if self.done:
            return "finished"
        if self.current is not None and (self.reader.frames.pending or self.refused):
            self.refused = self.refused or {"reason": codec.MALFORMED, "bytes": self.reader.frames.pending,
                                            "cell": self.current}
            return "unreadable"
        return "died"

    def _read(self, data: bytes, tasks: set[str]) -> str | None:
        """Decode and accept what the channel sent, on the job's CPU budget; how the attempt ends if it must."""
        started = time.thread_time()
        try:
            for frame in self.reader.read(data):
                if frame is codec.REFUSED:      # charged to the cell running when it came, not after the chunk's rest
                    if self.refused is None:
                        self.refused = {"reason": self.reader.refusal, "bytes": self.reader.frames.announced,
                                        "cell": self.current}
                else:
                    self.accept(frame, tasks)
        finally:
            self.reader.cpu_seconds += time.thread_time() - started
        if self.refused is None and self.reader.refusal is not None:     # a frame still being skipped
            self.refused = {"reason": self.reader.refusal, "bytes": self.reader.frames.announced,
                            "cell": self.current}
        if self.reader.over_budget:
            return "flood"
        if self.reader.lost:                # what cost the cell: the frame nothing could follow
            self.refused = {"reason": codec.TOO_LARGE, "bytes": self.reader.frames.skipped_frame,
                            "cell": self.current}
            return "unreadable"
        return None


DRAIN_BUFFER = bytearray(CHANNEL_READ_BYTES)     # what _drain reads into where it cannot splice: never looked at


def _drain(pipe_fd: int, sink: int) -> bool:
    """Discard up to LOG_DRAIN_BYTES of what the pipe holds without bringing it into this process (spliced to
    /dev/null, the kernel moving page references; where splice is refused, large reads into a buffer kept for it);
    False at end of file."""
    for _ in range(LOG_DRAIN_BYTES // CHANNEL_READ_BYTES):
        if not select.select([pipe_fd], [], [], 0)[0]:
            return True                                  # empty for now: the writer waits for the next tick
        try:
            moved = os.splice(pipe_fd, sink, CHANNEL_READ_BYTES)
        except OSError:
            moved = os.readv(pipe_fd, [DRAIN_BUFFER])
        if not moved:
            return False
    return True


def _widen(pipe_fd: int) -> None:
    """The channel's pipe holds 1 MiB instead of 64 KiB, so an 8 MB record crosses in a few writes and reads, not
    hundreds; where the kernel refuses (a user over its pipe quota), the default stays."""
    try:
        fcntl.fcntl(pipe_fd, fcntl.F_SETPIPE_SZ, CHANNEL_READ_BYTES)
    except OSError:
        pass


def _feed(stream, payload: bytes) -> None:
    """The whole payload into the job's input: a raw pipe's write may take only part of it (a signal arriving
    mid-write), and a job fed half its task fails as if the grader had."""
    rest = memoryview(payload)
    try:
        while rest:
            written = stream.write(rest)
            rest = rest[len(rest) if written is None else written:]     # None: a buffered stream took it all
        stream.close()
    except OSError:                      # the process died before reading everything
        pass


def run_job(notebook_cells: list[dict], task_frame: bytes, task_ids, probe_files: dict[str, str], limits: Limits,
            isolate: bool = True, decode=None, release_cells: Sequence[int] = ()) -> RunOutcome:
    """Run the cells once under the supervisor. What the student's code does costs one run: the first cell past its
    limit is interrupted and the run goes on; a cell that outlives its limit after that (or the interrupt), a process
    that dies, the notebook's limit, a flood, or a channel made unreadable (a header announcing more than it can
    carry, a frame cut short: nothing after it can be read) stop the run there, and what ran before keeps its
    results. Only the grader's own failure (the warm zygote lost under the job) runs it again, its time given back.
    task_frame: the task (codec.frame), task_ids: its keys. decode(record) -> what to keep of a result as it
    arrives (None: nothing; `cell`: the task it answers, given by keyword); default the record as decoded.
    release_cells: the code cells that are the release's own, byte for byte (the warm zygote keeps them compiled)."""
    started = time.monotonic()
    deadline = started + limits.notebook_seconds
    code_cells = [i for i, c in enumerate(notebook_cells) if c["cell_type"] == "code"]
    tasks = set(task_ids)
    results, outputs, reader = {}, {}, ChannelReader(limits)
    groups = make_cgroups(limits)
    cpu, lost, log_bytes = 0.0, 0, 0
    try:
        with _scratch_dirs(isolate) as (work, home):
            start = launcher(limits, isolate, work, home, probe_files,
                             [notebook_cells[i]["source"] for i in release_cells if 0 <= i < len(notebook_cells)])
            payload = functools.cache(lambda holds_probes: _payload(
                notebook_cells, None if holds_probes else probe_files, limits, [], task_frame))
            while True:
                attempt = Attempt(start, payload, code_cells, [], limits, reader, results, outputs, decode)
                kept, attempt_started = (dict(results), dict(outputs)), time.monotonic()
                ending, cell = attempt.run(deadline, tasks, groups)
                cpu += attempt.cpu_seconds
                log_bytes += attempt.log_read
                if ending != "lost":
                    break
                # The zygote died under the job: nothing the student did. Forget what the attempt sent, give its
                # time back, and run it again (a new zygote starts, or bubblewrap if none can).
                lost += 1
                if lost > MAX_LOST:
                    raise ZygoteGone(f"the warm sandbox was lost {lost} times in a row while running this notebook")
                results.clear()
                results.update(kept[0])
                outputs.clear()
                outputs.update(kept[1])
                deadline += time.monotonic() - attempt_started
        counted = cgroup_cpu_seconds(groups)
        cpu = cpu if counted is None else counted       # the cgroup also counts what bwrap did not wait for
    finally:
        remove_cgroups(groups)
    log = bytes(attempt.log) if attempt.current is None else b""
    return RunOutcome(_events(attempt, ending, cell, limits), ending == "finished", time.monotonic() - started,
                      log.decode("utf-8", "replace"), results, outputs, cpu, log_bytes=log_bytes)


def _payload(notebook_cells: list[dict], probe_files: dict[str, str] | None, limits: Limits, skip: list[int],
             task_frame: bytes) -> bytes:
    """The job's standard input: its JSON header's length, the header, the task frame. probe_files: the probe
    sources, for a job that has not loaded them (None: a warm zygote's job, whose zygote holds them; 100 kB of
    escaped source text the job would parse and drop)."""
    shipped = {} if probe_files is None else {"probe_files": probe_files}
    header = json.dumps({"cells": notebook_cells, **shipped, "limits": limits.for_runner(), "skip": skip}).encode()
    return b"".join([len(header).to_bytes(HEADER_LENGTH_BYTES, "little"), header, task_frame])


def _events(attempt: Attempt, ending: str, cell: int | None, limits: Limits) -> list[dict]:
    """What happened in the run, for the notes; cells are notebook indices. A refused frame is said by its own
    event (`stopped`: nothing after it could be read); a cell the job interrupted, by a timeout that did not stop
    the run."""
    events = [{"event": "cell_timeout", "cell": c, "seconds": limits.cell_seconds, "stopped": False}
              for c in attempt.interrupted]
    if attempt.refused:
        stopped = {"stopped": True} if ending == "unreadable" else {}
        events.append({"event": "unreadable_data", **attempt.refused, **stopped})
    if ending in ("notebook_time_limit", "flood"):
        events.append({"event": ending, "cell": cell})
    elif ending == "died":
        events.append({"event": "kernel_died", "cell": cell})
    elif ending == "cell_timeout":
        events.append({"event": "cell_timeout", "cell": cell, "seconds": limits.cell_seconds, "stopped": True})
    return events


@contextlib.contextmanager
def _scratch_dirs(isolate: bool):
    """Work and home folders: inside the sandbox its own tmpfs; without one, a private temp folder."""
    if isolate:
        yield WORK_DIR, HOME_DIR
        return
    with tempfile.TemporaryDirectory(prefix="posenc-plain-") as folder:
        yield f"{folder}/work", f"{folder}/home"

