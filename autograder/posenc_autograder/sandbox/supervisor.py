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
import json
import os
import select
import selectors
import tempfile
import threading
import time

from posenc_autograder.probes import codec
from posenc_autograder.sandbox.cgroups import cgroup_cpu_seconds, kill_cgroup, make_cgroups, remove_cgroups
from posenc_autograder.sandbox.channel_reader import ChannelReader, sanitise_outputs
from posenc_autograder.sandbox.launch import ZygoteGone, launcher
from posenc_autograder.sandbox.layout import HEADER_LENGTH_BYTES, HOME_DIR, WORK_DIR
from posenc_autograder.settings import Limits

MAX_REPLAYS = 3
MAX_LOST = 2                      # attempts lost to a dying zygote before the job is given up (not graded)
POLL_SECONDS = 0.05
EXIT_GRACE_SECONDS = 1.0          # to drain the channel after the process ended
LOG_TAIL_BYTES = 4000
LOG_READ_BYTES = 1 << 16
LOG_BUDGET_BYTES = 1 << 20        # the job's log read here, at most; past it the pipe is drained unread (_drain)
LOG_DRAIN_BYTES = 8 << 20         # at most this much each POLL_SECONDS: a flood then costs the job its own time
CHANNEL_READ_BYTES = 1 << 20      # the channel's pipe size (_widen), read whole


@dataclasses.dataclass
class RunOutcome:
    events: list[dict]                 # cell timeouts, deaths, the notebook limit; cells are notebook indices
    finished: bool                     # the last attempt ran to the end of the notebook
    wall_seconds: float
    log_tail: str                      # the runner's own stdout/stderr: shown only when no student code ran
    results: dict[str, object]         # hidden cell id -> the probe's record (decoded, untrusted), or
                                       # what run_job's `decode` made of it as it arrived
    outputs: dict[int, dict]           # cell index -> sanitised outputs of the last attempt that ran it
    cpu_seconds: float = 0.0           # the sandboxes' CPU (user + system), every attempt, as the kernel counted it



class Attempt:
    """One run of the notebook, watched: the clocks, the channel and the process are the supervisor's."""

    def __init__(self, launch, payload: bytes, code_cells: list[int], skip: list[int], limits: Limits,
                 reader: ChannelReader, results: dict, outputs: dict, decode=None):
        self.launch, self.payload, self.limits, self.decode = launch, payload, limits, decode
        self.expected = [i for i in code_cells if i not in set(skip)]
        self.reader, self.results, self.outputs = reader, results, outputs
        self.current, self.since, self.done, self.log = None, time.monotonic(), False, bytearray()
        self.cpu_seconds, self.log_read, self.draining, self.next_drain = 0.0, 0, None, 0.0
        self.refused: dict | None = None   # the first frame refused: {"reason", "bytes" announced, "cell" it came in}
        reader.start_attempt()

    def accept(self, frame: dict, tasks: set[str]) -> None:
        if "cell" in frame:
            # Marks only move forward through the code cells, so forged marks can buy a cell at most
            # one fresh per-cell clock each, never an unbounded one.
            cell = frame["cell"]
            if type(cell) is int and cell in self.expected and (self.current is None or cell > self.current):
                self.current, self.since = cell, time.monotonic()
        elif "output" in frame:
            cell = frame["output"]
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
        feeder = threading.Thread(target=_feed, args=(process.stdin, self.payload), daemon=True)
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
                data = os.read(key.fd, CHANNEL_READ_BYTES if key.data == "channel" else LOG_READ_BYTES)
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
                return ("finished" if self.done else "died"), self.current
            if now >= deadline:
                return "notebook_time_limit", self.current
            if self.current is not None and now - self.since > self.limits.cell_seconds:
                return "cell_timeout", self.current


    def _read(self, data: bytes, tasks: set[str]) -> str | None:
        """Decode and accept what the channel sent, on the job's CPU budget; how the attempt ends if it must."""
        started = time.thread_time()
        try:
            for frame in self.reader.feed(data):
                self.accept(frame, tasks)
        finally:
            self.reader.cpu_seconds += time.thread_time() - started
        if self.refused is None and self.reader.refusal is not None:
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
    try:
        stream.write(payload)
        stream.close()
    except OSError:                      # the process died before reading everything
        pass


def run_job(notebook_cells: list[dict], task_frame: bytes, task_ids, probe_files: dict[str, str], limits: Limits,
            isolate: bool = True, decode=None) -> RunOutcome:
    """Run the cells under the supervisor: skip-and-replay cells that time out or kill the process.
    task_frame: the task (codec.frame), task_ids: its keys. decode(record) -> what to keep of a result as it
    arrives (None: nothing; `cell`: the task it answers, given by keyword); default the record as decoded."""
    started = time.monotonic()
    deadline = started + limits.notebook_seconds
    code_cells = [i for i, c in enumerate(notebook_cells) if c["cell_type"] == "code"]
    tasks = set(task_ids)
    events, skip, finished = [], [], False
    results, outputs, reader = {}, {}, ChannelReader(limits)
    groups = make_cgroups(limits)
    log, cpu, lost = b"", 0.0, 0
    try:
        with _scratch_dirs(isolate) as (work, home):
            start = launcher(limits, isolate, work, home, probe_files)
            replays = 0
            while replays <= MAX_REPLAYS:
                header = json.dumps({"cells": notebook_cells, "probe_files": probe_files,
                                     "limits": limits.for_runner(), "skip": skip}).encode()
                payload = b"".join([len(header).to_bytes(HEADER_LENGTH_BYTES, "little"), header, task_frame])
                attempt = Attempt(start, payload, code_cells, skip, limits, reader, results, outputs, decode)
                kept, attempt_started = (dict(results), dict(outputs)), time.monotonic()
                ending, cell = attempt.run(deadline, tasks, groups)
                cpu += attempt.cpu_seconds
                if ending == "lost":
                    # The zygote died under the job: nothing the student did. Forget what the attempt sent, give its
                    # time back, and run it again (a new zygote starts, or bubblewrap if none can).
                    lost += 1
                    if lost > MAX_LOST:
                        raise ZygoteGone(f"the warm sandbox was lost {lost} times in a row while running this notebook")
                    results.clear(), results.update(kept[0]), outputs.clear(), outputs.update(kept[1])
                    deadline += time.monotonic() - attempt_started
                    continue
                log = bytes(attempt.log) if attempt.current is None else log
                refused = attempt.refused and {"event": "unreadable_data", **attempt.refused,
                                               "skipped": ending == "unreadable" and cell is not None}
                if refused and refused not in events:         # a replay refused the same again: said once
                    events.append(refused)
                if ending == "finished":
                    finished = True
                    break
                if ending in ("notebook_time_limit", "flood"):
                    events.append({"event": ending, "cell": cell})      # the student's: the rest is not run
                    break
                if ending != "unreadable":                     # else said by its refused frame, above
                    events.append({"event": "kernel_died" if ending == "died" else "cell_timeout", "cell": cell,
                                   "seconds": limits.cell_seconds})
                # The channel is unreadable after a header announcing more than can come: the cell that sent it is
                # skipped and the notebook run again, as after a death, so the rest of the student's work is read.
                if cell is None:            # died before any cell started: nothing to skip
                    break
                skip.append(cell)
                replays += 1
            else:
                events.append({"event": "too_many_replays", "cell": None})
        counted = cgroup_cpu_seconds(groups)
        cpu = cpu if counted is None else counted       # the cgroup also counts what bwrap did not wait for
    finally:
        remove_cgroups(groups)
    return RunOutcome(events, finished, time.monotonic() - started, log.decode("utf-8", "replace"),
                      results, outputs, cpu)


@contextlib.contextmanager
def _scratch_dirs(isolate: bool):
    """Work and home folders: inside the sandbox its own tmpfs; without one, a private temp folder."""
    if isolate:
        yield WORK_DIR, HOME_DIR
        return
    with tempfile.TemporaryDirectory(prefix="posenc-plain-") as folder:
        yield f"{folder}/work", f"{folder}/home"

