"""`make bench-portal`: a class's deadline rush on the submission portal, on 127.0.0.1.

A scratch copy of the course, a real portal (`python -m posenc_autograder portal`, its own process, grading in
the sandbox) and N simulated students who each sign in by link (and land on the home page it redirects to), upload
their own notebook at a moment spread over the rush from the assignment's page, land on the attempt's page, follow
the status until it is graded (as the page's script does: one stream of its changes, then the page reloaded) and
fetch the feedback. Each rush runs twice: the honest class alone, then the same class
with hostile students mixed in (HOSTILE: poisoned notebooks, a freezer's unterminated strings of escaped quotes,
flooders uploading as fast as the policy lets them, oversized files, a forged sandbox frame, slowloris
connections). Run on SQLite and on a temporary PostgreSQL server. Prints, per
database and rush: time to feedback for one notebook on the idle portal, throughput, the honest students'
50th and 95th percentile upload-to-feedback time and how many of their uploads were graded, the longest queue
wait shown, the portal's peak memory (its own process, and with its sandboxes), what the hostile students got,
and the ratio of the honest p95 with them to without. Stops by itself (--timeout).
"""
from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import pathlib
import random
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import nbformat
import psutil
from sqlalchemy import select

from posenc_autograder.course import find_root
from posenc_autograder.devtools import figures
from posenc_autograder.devtools.bench import ASSIGNMENT, NOTEBOOK, make_class, solved
from posenc_autograder.devtools.postgres import free_port, postgres_server, server_cpu_seconds
from posenc_autograder.devtools.student_client import StudentClient, TransportError
from posenc_autograder.portal import queue
from posenc_autograder.portal.links import make_links
from posenc_autograder.portal.models import Attempt, Student, open_database, utcnow
from posenc_autograder.portal.service import database

CSRF_MARK = 'name="csrf" value="'
STATUS_SHOWN = re.compile(r'id="status"[^>]{0,300} data-status="([a-z]+)"')   # templates/attempt.html; bounded: linear
WAIT_SHOWN = re.compile(r"about (\d+) s to wait")
EVENT_SOURCE_RETRY = 3.0               # seconds a browser's EventSource waits to connect again, unless told
FINISHED = ("graded", "error")
HOSTILE = {"poison": 2, "freezer": 2, "flooder": 2, "oversized": 2, "forger": 1, "slowloris": 1}   # students
ATTACK_EVERY = 3.0                    # seconds between one hostile student's attacks during the rush


class MemoryWatch:
    """Peak resident memory of a process alone (the kernel's own high-water mark: exact) and with all its children
    (the sandboxes: sampled each `every` seconds, a scan of every process on the machine, ~12 ms of the simulated
    students' CPU each time)."""

    def __init__(self, pid: int, every: float = 1.0):
        self.process, self.every = psutil.Process(pid), every
        self.own = self.total = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopping.wait(self.every):
            with contextlib.suppress(psutil.Error):
                children = 0
                for child in self.process.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        children += child.memory_info().rss
                self.total = max(self.total, self.process.memory_info().rss + children)

    def stop(self):
        self.stopping.set()
        self.thread.join()
        self.own = high_water_mark(self.process.pid)
        self.total = max(self.total, self.own)


def high_water_mark(pid: int) -> int:
    """The process's peak resident memory in bytes (VmHWM), 0 once it has gone."""
    with contextlib.suppress(OSError):
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def notebooks(source_root: pathlib.Path, count: int) -> list[bytes]:
    """Each student's own file: two in three solved, one in three untouched, each with a marker cell."""
    good = solved(source_root)
    stub = nbformat.read(source_root / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    files = []
    for i in range(count):
        nb = nbformat.from_dict(dict(good if i % 3 else stub))
        nb.cells = list(nb.cells) + [nbformat.v4.new_code_cell(f"# student {i}")]
        files.append(nbformat.writes(nb).encode())
    return files


async def one_student(client: StudentClient, link: str, data: bytes, start_in: float, deadline: float) -> dict:
    try:
        return await _one_student(client, link, data, start_in, deadline)
    except (TransportError, ValueError) as exc:    # counted as not done, with why (a page that is not the status's
        return {"done": False, "why": type(exc).__name__}      # JSON: ValueError); the rush goes on


async def _get(client: StudentClient, url: str, tries: int = 3):
    """A GET retried on a dropped keep-alive connection, as a browser does."""
    for attempt in range(tries):
        try:
            return await client.get(url)
        except TransportError:
            if attempt == tries - 1:
                raise
            await asyncio.sleep(0.2)


async def _one_student(client: StudentClient, link: str, data: bytes, start_in: float, deadline: float) -> dict:
    """A student's browser through the rush: every page it loads (each redirect followed, the attempt's page
    reloaded by its script once graded), as the portal sees them."""
    await asyncio.sleep(start_in)
    signed_in = await client.get(link)
    if "location" in signed_in.headers:                             # the browser follows it: the home page
        await _get(client, signed_in.headers["location"])
    started, refused = time.monotonic(), collections.Counter()
    while True:
        page = (await client.get(f"/assignments/{ASSIGNMENT}")).text
        csrf = page.split(CSRF_MARK, 1)[1].split('"', 1)[0]
        answer = await client.post(f"/assignments/{ASSIGNMENT}/upload", data={"csrf": csrf},
                                   files={"notebook": (f"{NOTEBOOK}.ipynb", data)})
        wait = retry_after(answer)
        if "location" in answer.headers or wait is None or time.monotonic() + wait > deadline:
            break
        refused[answer.status_code] += 1              # "upload again in N s": the student waits, then uploads again
        await asyncio.sleep(wait)
    upload_seconds = time.monotonic() - started      # from the first try: the waits after refusals included
    if "location" not in answer.headers:            # refused for good (a policy, or past the rush's end): not graded
        return {"done": False, "why": f"upload answered {answer.status_code}", "refused": refused}
    attempt = answer.headers["location"].split("?")[0]
    status = shown_status(await _get(client, answer.headers["location"]))     # the redirect to the attempt's page
    shown = [status["wait_seconds"] if status["status"] == "queued" else 0.0]
    if status["status"] not in FINISHED:                                   # the page's script follows the stream
        status = await followed(client, f"{attempt}/status.events", shown, deadline) or status
        if status.get("status") in FINISHED:
            await _get(client, attempt)                                    # and reloads the page once finished
    longest_wait = max(shown)
    if status.get("status") not in FINISHED:
        return {"done": False}
    feedback = await _get(client, f"{attempt}/feedback")
    return {"done": feedback.status_code == 200 and "Score:" in feedback.text, "status": status["status"],
            "seconds": time.monotonic() - started, "shown_wait": longest_wait, "finished": time.monotonic(),
            "upload_seconds": upload_seconds, "attempt": int(attempt.rsplit("/", 1)[1]), "refused": refused}


def shown_status(page) -> dict:
    """The status an attempt's page shows (its status element's data-status; a queued one's wait from its text);
    ValueError for any other page."""
    found = STATUS_SHOWN.search(page.text)
    if page.status_code != 200 or found is None:
        raise ValueError(f"the attempt's page answered {page.status_code}")
    wait = WAIT_SHOWN.search(page.text)
    return {"status": found.group(1), "wait_seconds": float(wait.group(1)) if wait else 0.0}


async def followed(client: StudentClient, url: str, shown: list[float], deadline: float) -> dict | None:
    """The status as the page's EventSource follows it: one stream read to its end (after a finished status, or
    past the portal's bounds), each event's queue wait added to `shown`; connecting again after the stream's
    `retry` (else the EventSource's default) until a finished status comes or the rush ends."""
    retry, status = EVENT_SOURCE_RETRY, None
    while time.monotonic() < deadline:
        with contextlib.suppress(TransportError):                        # a dropped stream: connect again
            answer = await client.get(url, timeout=max(deadline - time.monotonic(), 0.001))
            if answer.status_code != 200:
                raise ValueError(f"status stream answered {answer.status_code}")     # an EventSource stops
            for line in answer.text.splitlines():
                if line.startswith("retry: "):
                    retry = int(line.removeprefix("retry: ")) / 1000
                elif line.startswith("data: "):
                    status = json.loads(line.removeprefix("data: "))
                    shown.append(status["wait_seconds"] if status["status"] == "queued" else 0.0)
            if status is not None and status["status"] in FINISHED:
                return status
        await asyncio.sleep(retry)
    return status


def retry_after(answer) -> float | None:
    """The wait a refused upload's answer asks for before uploading again (its Retry-After, which the page's text
    states too), None: not a wait (accepted, or refused for good)."""
    if answer.status_code not in (429, 503) or "retry-after" not in answer.headers:
        return None
    return float(answer.headers["retry-after"])


async def rush(base: str, links: list[str], files: list[bytes], spread: float, timeout: float,
               hostile: list[tuple[str, str]] = ()) -> tuple[list[dict], collections.Counter]:
    """The honest students' outcomes, and what the hostile ones (kind, link) got, counted by answer."""
    deadline = time.monotonic() + timeout
    rng = random.Random(29)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    outcomes: collections.Counter = collections.Counter()

    def count() -> None:                                    # every request the portal answers, for its CPU per request
        outcomes["requests"] += 1

    async def counted(request) -> None:
        count()
    # One TLS context for every hostile student (plain HTTP here): httpx builds one per client otherwise, 24 ms of
    # CPU each. The honest students use the lean client (student_client.py: httpx's CPU is the portal's loss here).
    tls = ssl.create_default_context()
    students = [StudentClient(base, timeout=60, on_request=count) for _ in links]
    hostiles = [httpx.AsyncClient(base_url=base, timeout=60, limits=limits, verify=tls,
                                  event_hooks={"request": [counted]}) for _ in hostile]
    try:
        honest = [one_student(c, link, data, rng.uniform(0, spread), deadline)
                  for c, link, data in zip(students, links, files, strict=True)]
        attacks = [attacker(kind, c, link, files[0], spread, outcomes)
                   for c, (kind, link) in zip(hostiles, hostile, strict=True)]
        results = await asyncio.gather(*honest, *attacks)
        return results[:len(links)], outcomes
    finally:
        await asyncio.gather(*(c.aclose() for c in [*students, *hostiles]))


# --- hostile students ------------------------------------------------------------------------------

def with_cell(data: bytes, source: str) -> bytes:
    nb = json.loads(data)
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": source})
    return json.dumps(nb).encode()           # a lone surrogate travels as its JSON escape, \ud800


FORGED_FRAME = ("import json, os\nos.write(int(os.environ['POSENC_CHANNEL_FD']), "
                "(json.dumps({'result': ['x'], 'record': 'y'}) + '\\n').encode())\n")


def hostile_file(kind: str, honest: bytes, n: int) -> bytes:
    """The n-th file a hostile student of this kind sends."""
    if kind == "poison":
        return with_cell(honest, f"text = '\ud800 {n}'")
    if kind == "freezer":                   # just under 20 MB: an object's unterminated string, scanned whole
        return b'{"cells": ["' + b'\\"' * 9_999_000 + str(n).encode()
    if kind == "oversized":
        return b'{"cells": [' + b"1," * 9_900_000 if n % 2 else b"x" * 21_000_000   # values past the cap; bytes
    if kind == "forger":
        return with_cell(honest, FORGED_FRAME + f"# {n}")
    return with_cell(honest, f"# flood {n}")


async def attacker(kind: str, client: httpx.AsyncClient, link: str, honest: bytes, spread: float,
                   outcomes: collections.Counter) -> None:
    """Attack every ATTACK_EVERY seconds through the rush; count each answer (status code) by kind."""
    if kind == "slowloris":
        return await slowloris(client, spread, outcomes)
    with contextlib.suppress(httpx.HTTPError):
        await client.get(link)
    ends, n = time.monotonic() + spread, 0
    while time.monotonic() < ends:
        n += 1
        try:
            page = (await client.get(f"/assignments/{ASSIGNMENT}")).text
            csrf = page.split(CSRF_MARK, 1)[1].split('"', 1)[0]
            answer = await client.post(f"/assignments/{ASSIGNMENT}/upload", data={"csrf": csrf},
                                       files={"notebook": (f"{NOTEBOOK}.ipynb", hostile_file(kind, honest, n))})
            outcomes[f"{kind} {answer.status_code}"] += 1
        except (httpx.HTTPError, IndexError) as exc:
            outcomes[f"{kind} {type(exc).__name__}"] += 1
        await asyncio.sleep(ATTACK_EVERY / 6 if kind == "flooder" else ATTACK_EVERY)


async def slowloris(client: httpx.AsyncClient, spread: float, outcomes: collections.Counter) -> None:
    """Open connections that send a request head a byte at a time; count how they end."""
    host, port = client.base_url.host, client.base_url.port

    async def one():
        reader, writer = await asyncio.open_connection(host, port)
        try:
            for byte in b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1.0)
                if reader.at_eof():
                    break
            outcomes["slowloris cut off" if reader.at_eof() else "slowloris held"] += 1
        except OSError:
            outcomes["slowloris cut off"] += 1
        finally:
            writer.close()
    await asyncio.wait_for(asyncio.gather(*(one() for _ in range(20)), return_exceptions=True), spread + 60)


def run_once(source_root: pathlib.Path, students: int, jobs: int, spread: float, timeout: float,
             db_url: str | None, hostile: dict[str, int] | None = None) -> dict:
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="posenc-portal-load-"))
    try:
        course = make_class(source_root, scratch / "course", 0)
        if db_url:
            course = type(course)(course.root, db_url)
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        kinds = [kind for kind, count in (hostile or {}).items() for _ in range(count)]
        names = {f"student{i:03d}": "" for i in range(students + 1)} | {f"hostile{i:02d}": "" for i in
                                                                         range(len(kinds))}
        rows = make_links(database(course), names, base, renew=True)      # registers the assignment first
        by_student = {r["student_id"]: r["link"][len(base):] for r in rows}
        links = [by_student[f"student{i:03d}"] for i in range(students + 1)]
        attackers = [(kind, by_student[f"hostile{i:02d}"]) for i, kind in enumerate(kinds)]
        files = notebooks(source_root, students + 1)
        command = [sys.executable, "-m", "posenc_autograder", "portal", "--course", str(course.root), "--port",
                   str(port), "--jobs", str(jobs)] + (["--db-url", db_url] if db_url else []) \
            + (["--allow-root"] if os.geteuid() == 0 else [])
        log = open(scratch / "portal.log", "w")      # a file, never a pipe left unread: a full pipe stops the portal
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, text=True)
        server.log = log
        database_cpu = server_cpu_seconds(db_url) if db_url else in_process
        try:
            _wait_until_up(base, server)
            watch = MemoryWatch(server.pid)
            idle = asyncio.run(rush(base, links[:1], files[:1], 0.0, timeout))[0][0]
            started, cpu_before, load_before = (time.monotonic(), cpu_seconds(server.pid, database_cpu),
                                                os.getloadavg()[0])
            results, attacks = asyncio.run(rush(base, links[1:], files[1:], spread, timeout, attackers))
            requests = attacks.pop("requests", 0)
            cpu_after = cpu_seconds(server.pid, database_cpu)
            watch.stop()
        finally:
            stop(server)
            log.close()
        timings = where_time_went(course, results, dict(zip((f"hostile{i:02d}" for i in range(len(kinds))), kinds,
                                                                strict=True)))
        done = [r for r in results if r["done"]]
        seconds = sorted(r["seconds"] for r in done)
        wall = max((r["finished"] for r in done), default=started) - started
        return {"students": students, "graded": len(done), "errors": sum(r.get("status") == "error" for r in done),
                "idle_seconds": idle.get("seconds"), "wall": wall, "per_minute": 60 * len(done) / wall if wall else 0,
                "p50": statistics.median(seconds) if seconds else None,
                "p95": percentile(seconds, 0.95) if seconds else None,
                "shown_wait": max((r["shown_wait"] for r in done), default=0.0),
                "own_mb": watch.own / 2**20, "total_mb": watch.total / 2**20, "attacks": dict(sorted(attacks.items())),
                "portal_cpu": cpu_after["portal"] - cpu_before["portal"],
                "grading_cpu": cpu_after["grading"] - cpu_before["grading"],
                "sandbox_cpu": cpu_after["sandboxes"] - cpu_before["sandboxes"],
                "client_cpu": cpu_after["students"] - cpu_before["students"],
                "database_cpu": cpu_after["database"] - cpu_before["database"],
                "load": (load_before, os.getloadavg()[0]),
                "refusals": dict(sum((r.get("refused", collections.Counter()) for r in results),
                                     collections.Counter())),
                "not_done": dict(collections.Counter(r.get("why", "not graded in time") for r in results
                                                     if not r["done"])),
                "requests": requests, **timings}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def in_process() -> float:
    """The database server's CPU when there is none: SQLite's work is in the CPU of the processes that query it."""
    return 0.0


def cpu_seconds(portal: int, database=in_process) -> dict[str, float]:
    """CPU seconds so far of the portal's web process; of its grading processes (grading_processes.py: the trusted
    side's work, each a Python started by multiprocessing); of its sandboxes (every other process under it: the
    zygote and the jobs it forked and reaped, or a job's own processes); of the database server (`database`:
    devtools.postgres.server_cpu_seconds, every backend's work for the portal); and of this process, the simulated
    students."""
    def total(times) -> float:
        return times.user + times.system
    process = psutil.Process(portal)
    grading = sandboxes = 0.0
    for child in process.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            times = child.cpu_times()
            if "multiprocessing" in " ".join(child.cmdline()):
                grading += total(times)
                sandboxes += times.children_user + times.children_system
            else:
                sandboxes += total(times) + times.children_user + times.children_system
    own = process.cpu_times()
    return {"portal": total(own), "grading": grading, "sandboxes": sandboxes + own.children_user
            + own.children_system, "database": database(), "students": total(psutil.Process().cpu_times())}


def where_time_went(course, results: list[dict], kinds: dict[str, str]) -> dict:
    """From the portal's own attempts table: the honest students' time split into uploading (the request, checks
    included), waiting in the queue, grading, and noticing (the status requests, the feedback page); and the
    sandbox time each hostile kind's graded jobs took."""
    sessions = open_database(course.gradebook_url)
    with sessions() as db:
        rows = {a.id: a for a in db.execute(select(Attempt)).scalars()}
    parts: dict[str, list[float]] = {"upload": [], "queue": [], "grading": [], "noticing": []}
    for r in results:
        row = rows.get(r.get("attempt"))
        if not r["done"] or row is None or row.started_at is None or row.finished_at is None:
            continue
        queued = (row.started_at - row.uploaded_at).total_seconds()
        grading = (row.finished_at - row.started_at).total_seconds()
        parts["upload"].append(r["upload_seconds"])
        parts["queue"].append(queued)
        parts["grading"].append(grading)
        parts["noticing"].append(max(r["seconds"] - r["upload_seconds"] - queued - grading, 0.0))
    by_kind: dict[str, list[float]] = collections.defaultdict(list)
    for row in rows.values():
        if row.student_id in kinds and row.started_at and row.finished_at:
            by_kind[kinds[row.student_id]].append((row.finished_at - row.started_at).total_seconds())
    return {"parts": {k: (statistics.median(v), percentile(v, 0.95), max(v)) for k, v in parts.items() if v},
            "hostile_jobs": {k: (len(v), sum(v), max(v)) for k, v in sorted(by_kind.items())}}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(int(round(share * len(ordered))) - 1, 0)]


def stop(server: subprocess.Popen, seconds: float = 30) -> None:
    """Stop the portal (or a hub serving it), then wait for every process it had started: a grading process finishing
    its job after the portal is gone would write into the scratch course again once it has been removed. What has
    not ended in `seconds` is killed."""
    try:
        family = psutil.Process(server.pid).children(recursive=True)
    except psutil.Error:
        family = []
    server.terminate()
    try:
        server.wait(seconds)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    _, alive = psutil.wait_procs(family, timeout=seconds)
    for process in alive:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=5)


def _wait_until_up(base: str, server: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the portal stopped: {pathlib.Path(server.log.name).read_text()}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base + "/", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise SystemExit("the portal did not start in time")


def status_cost(db_url: str, queued: int, requests: int = 200, change_every: int = 10, database=in_process) -> dict:
    """CPU seconds of the portal's own process and the database server (`database`, as for cpu_seconds) per status
    request with `queued` jobs waiting, the queue's order read from the portal's view (portal.queue.QueueView:
    computed once per change, `change_every` requests) against computing it for each request (the obvious way, and
    the portal's before), on the same database in the same run. Each request also reads its attempt and the
    student's rules, as the portal's status does."""
    sessions = open_database(db_url)
    with sessions() as db:
        db.add_all([Student(id=f"s{i:05d}") for i in range(queued)])
        db.flush()
        db.add_all([Attempt(student_id=f"s{i:05d}", assignment=ASSIGNMENT, notebook=NOTEBOOK, number=1,
                            sha256=f"{i:064d}", size=1, uploaded_at=utcnow(), status="queued")
                    for i in range(queued)])
        db.commit()
        ids = list(db.execute(select(Attempt.id)).scalars())
    rng, figures = random.Random(7), {}
    for label, view in (("per request", None), ("from memory", queue.QueueView())):
        started = time.process_time() + database()
        for n in range(requests):
            if view is not None and n % change_every == 0:
                view.changed()
                view.spacing = 0.0                      # every change computed: the worst case for the view
            with sessions() as db:
                attempt = db.get(Attempt, rng.choice(ids))
                queue.waiting(db, attempt, 2, view=view)
        figures[label] = (time.process_time() + database() - started) / requests
    return figures


def print_status_cost(label: str, db_url: str, queued: int, database=in_process) -> None:
    cost = status_cost(db_url, queued, database=database)
    print(f"{label:<22} status request with {queued} queued, portal and database server CPU per request: the order "
          f"computed per request {1000 * cost['per request']:.1f} ms, read from memory (one computation per 10 "
          f"requests) {1000 * cost['from memory']:.1f} ms ({cost['per request'] / cost['from memory']:.1f}x)",
          flush=True)


def report(label: str, figures: dict) -> str:
    def num(value, form="{:.1f}"):
        return "n/a" if value is None else form.format(value)
    lines = [f"{label:<22} honest: {figures['graded']}/{figures['students']} graded "
             f"({100 * figures['graded'] / figures['students']:.0f} %, {figures['errors']} grader errors) in "
             f"{figures['wall']:.0f} s: {figures['per_minute']:.0f} notebooks/min; upload to feedback "
             f"p50 {num(figures['p50'])} s, p95 {num(figures['p95'])} s (idle portal, one notebook: "
             f"{num(figures['idle_seconds'])} s); longest queue wait shown {figures['shown_wait']:.0f} s; peak "
             f"memory {figures['own_mb']:.0f} MiB portal, {figures['total_mb']:.0f} MiB with its sandboxes"]
    lines.append(f"{'':<22} honest time split (p50 / p95 / max s): " + "; ".join(
        f"{part} {p50:.1f} / {p95:.1f} / {top:.1f}" for part, (p50, p95, top) in figures["parts"].items())
        + f"; the portal's web process's own CPU {figures['portal_cpu']:.0f} s for {figures['requests']} requests"
        + f" ({1000 * figures['portal_cpu'] / max(figures['requests'], 1):.1f} ms a request; grading is in processes "
        + "of its own)")
    graded = max(figures["graded"], 1)
    missing = ", ".join(f"{why} x{n}" for why, n in figures["not_done"].items())
    lines.append(f"{'':<22} CPU per graded notebook: portal's web process {figures['portal_cpu'] / graded:.3f} s, "
                 f"its grading processes {figures['grading_cpu'] / graded:.3f} s, sandboxes "
                 f"{figures['sandbox_cpu'] / graded:.3f} s, the database server "
                 f"{database_share(figures, graded)}, the simulated students "
                 f"{figures['client_cpu'] / graded:.3f} s (machine load {figures['load'][0]:.1f} at the rush's start, "
                 f"{figures['load'][1]:.1f} at its end)" + (f"; not graded: {missing}" if missing else ""))
    lines.append(f"{'':<22} honest uploads refused, then sent again after the wait the answer stated: "
                 f"{refusals(figures)}")
    if figures["attacks"]:
        lines.append(f"{'':<22} hostile students got: " + ", ".join(f"{k} x{v}" for k, v in figures["attacks"].items()))
    if figures["hostile_jobs"]:
        lines.append(f"{'':<22} hostile jobs graded (jobs, sandbox s, longest s): " + ", ".join(
            f"{kind} {n}, {total:.0f}, {top:.1f}" for kind, (n, total, top) in figures["hostile_jobs"].items()))
    return "\n".join(lines)


def database_share(figures: dict, graded: int) -> str:
    """The database server's CPU per graded notebook, or where it is counted when the database has no server."""
    database = figures.get("database_cpu")
    return "in the processes above (SQLite)" if not database else f"{database / graded:.3f} s"


def refusals(figures: dict) -> str:
    return ", ".join(f"{code} x{n}" for code, n in sorted(figures.get("refusals", {}).items())) or "none"


def both_rushes(label: str, run, groups: list[dict[str, int]]) -> list[tuple[str, dict]]:
    """The honest rush, then the same with each group of hostile students; the ratio of the honest p95s. Returns
    each rush's (label, figures)."""
    clean = run(None)
    print(report(f"{label}", clean), flush=True)
    rushes = [(f"{label}, honest", clean)]
    for group in groups:
        rough = run(group)
        name = "hostile" if group == HOSTILE else "+".join(group)
        print(report(f"{label} + {name}", rough), flush=True)
        if clean["p95"] and rough["p95"]:
            print(f"{'':<22} honest p95 with {name} / without: {rough['p95'] / clean['p95']:.2f}", flush=True)
        rushes.append((f"{label}, with {sum(group.values())} {name}", rough))
    return rushes


# --- the figures it writes (devtools/figures.py: autograder/figures/bench-portal.md and the README's block) -----

NAME = "bench-portal"


def figures_text(rushes: list[tuple[str, dict]], students: int, spread: float, jobs: int) -> str:
    """The rushes as a Markdown table, then for each hostile rush the ratio of the honest p95s and what the hostile
    students got; when and how the figures were measured is added by the caller."""
    def seconds(value) -> str:
        return "n/a" if value is None else f"{value:.1f} s"
    rows = [[label, f"{f['graded']} of {f['students']}", f"{f['wall']:.0f} s",
             f"{seconds(f['p50'])} / {seconds(f['p95'])}",
             seconds(f["parts"]["queue"][1]) if "queue" in f["parts"] else "n/a", seconds(f["idle_seconds"]),
             f"{f['portal_cpu']:.0f} s ({f['portal_cpu'] / max(f['graded'], 1):.2f} s an honest upload)",
             f"{f['own_mb']:.0f} MiB / {f['total_mb']:.0f} MiB", refusals(f)] for label, f in rushes]
    text = (f"{students} students uploading over {spread:.0f} s, {jobs} sandboxes:\n\n"
            + figures.table(["", "honest graded", "in", "p50 / p95 upload to feedback", "queue wait p95",
                             "idle portal, one notebook", "portal CPU", "peak memory (portal / with sandboxes)",
                             "honest uploads refused, sent again"],
                            rows))
    honest = {label.split(",")[0]: f for label, f in rushes if label.endswith("honest")}
    for label, f in rushes:
        clean = honest.get(label.split(",")[0])
        if f is clean or clean is None:
            continue
        ratio = f"{f['p95'] / clean['p95']:.2f}" if f["p95"] and clean["p95"] else "n/a"
        got = ", ".join(f"{kind} x{n}" for kind, n in f["attacks"].items()) or "nothing"
        jobs_of = "; ".join(f"{kind} {n} jobs, {total:.0f} s, longest {top:.1f} s"
                            for kind, (n, total, top) in f["hostile_jobs"].items()) or "none"
        text += (f"\n{label}: honest p95 {ratio} times the honest rush's; {f['errors']} grader errors; what the "
                 f"hostile students got: {got}; their graded jobs (sandbox time): {jobs_of}.\n")
    return text


def hostile_groups(texts: list[str] | None) -> list[dict[str, int]]:
    """--hostile poison freezer,flooder: one rush per group, each kind with its usual number of students."""
    groups = []
    for text in texts or []:
        unknown = set(text.split(",")) - set(HOSTILE)
        if unknown:
            raise SystemExit(f"error: --hostile {text}: {', '.join(sorted(unknown))} unknown; kinds are "
                             f"{', '.join(HOSTILE)}")
        groups.append({kind: HOSTILE[kind] for kind in text.split(",")})
    return groups or [HOSTILE]


def arguments(parser) -> None:
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--spread", type=float, default=120, help="seconds over which the uploads arrive")
    parser.add_argument("--timeout", type=float, default=1200, help="stop after this many seconds")
    parser.add_argument("--database", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--no-write", action="store_true", help="print only: no figures file, README untouched")
    parser.add_argument("--status-cost", type=int, metavar="QUEUED", default=0,
                        help="only the portal's CPU per status request with QUEUED jobs waiting, on each database")
    parser.add_argument("--hostile", nargs="+", metavar="KINDS", help="instead of all hostile students at once, "
                        f"one rush per comma-separated group of kinds ({', '.join(HOSTILE)})")


def status_costs(args) -> int:
    print(f"load at start: {uptime()}", flush=True)
    if args.database in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="posenc-status-cost-") as scratch:
            print_status_cost("SQLite", f"sqlite:///{scratch}/portal.db", args.status_cost)
    if args.database in ("postgresql", "both"):
        with postgres_server() as url:
            print_status_cost("PostgreSQL", url, args.status_cost, server_cpu_seconds(url))
    print(f"load at end: {uptime()}", flush=True)
    return 0


def uptime() -> str:
    """The machine's load averages (1, 5, 15 minutes): other work on the cores shows in every figure."""
    return ", ".join(f"{load:.2f}" for load in os.getloadavg())


def run_command(args) -> int:
    if args.status_cost:
        return status_costs(args)
    source_root = find_root()
    jobs = args.jobs or len(os.sched_getaffinity(0))
    print(f"{args.students} students, uploads spread over {args.spread:.0f} s, {jobs} grading sandboxes, "
          f"{os.cpu_count()} cores", flush=True)
    print(f"hostile students mixed into the later rushes: {', '.join(f'{n} {k}' for k, n in HOSTILE.items())}",
          flush=True)
    groups = hostile_groups(args.hostile)
    started, load = time.time(), os.getloadavg()[0]
    print(f"load at start: {uptime()}", flush=True)
    rushes = []
    if args.database in ("sqlite", "both"):
        rushes += both_rushes("SQLite", lambda hostile: run_once(source_root, args.students, jobs, args.spread,
                                                                 args.timeout, None, hostile), groups)
    if args.database in ("postgresql", "both"):
        def on_postgres(hostile: dict[str, int] | None) -> dict:
            with postgres_server(max_connections=200) as url:        # a fresh database for each rush
                return run_once(source_root, args.students, jobs, args.spread, args.timeout, url, hostile)
        rushes += both_rushes("PostgreSQL", on_postgres, groups)
    print(f"load at end: {uptime()}", flush=True)
    text = (figures_text(rushes, args.students, args.spread, jobs) + "\n"
            + figures.provenance(started, load).format(name=NAME) + "\n")
    print("\n" + text)
    if not args.no_write:
        print(f"written to {figures.publish(source_root, NAME, text).relative_to(source_root)} and the README")
    return 0

