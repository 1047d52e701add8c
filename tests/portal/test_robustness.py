"""No upload costs the portal more than linear time or bounded memory, and no job stops grading: the structure
scan is exact on escapes and unterminated strings, value counts are capped before parsing, a lone surrogate
is stored, and poisoned, thread-killing and process-killing jobs end as grader errors while every other job
is graded."""
import contextlib
import json
import pathlib
import pickle
import random
import subprocess
import sys
import threading
import time
import tracemalloc

import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK
from ordinary_user import ordinary_user, reachable_as
from sqlalchemy import select, update
from test_access import attempts_in

import posenc_autograder
from conftest import CountingExecute, client_for, new_portal, notebook_bytes, upload
from posenc_autograder.devtools import portal_load
from posenc_autograder.grading.execute import Execution, execute_task
from posenc_autograder.intake.submissions import read_notebook
from posenc_autograder.portal import queue, uploads, worker
from posenc_autograder.portal.models import Attempt, Policy
from posenc_autograder.portal.routes import create_app
from posenc_autograder.probes import codec
from posenc_autograder.records import evidence
from posenc_autograder.results import NotebookResult, NoteKind
from posenc_autograder.sandbox import supervisor
from posenc_autograder.sandbox.channel_reader import ChannelReader
from posenc_autograder.settings import Caps, Limits


def plain_scan(data: bytes) -> tuple[int, int, bool]:
    """(depth, values, ends inside a string), one character at a time: the meaning json_shape must have."""
    depth = deepest = values = run = 0
    inside = False
    for byte in data:
        char = chr(byte)
        if char == '"' and run % 2 == 0:
            inside = not inside
        elif not inside and char != '"':
            if char in "[{":
                depth, values = depth + 1, values + 1
                deepest = max(deepest, depth)
            elif char in "]}":
                depth -= 1
            elif char == ",":
                values += 1
        run = run + 1 if char == "\\" else 0
    return deepest, values, inside


def test_the_scan_agrees_with_a_plain_one_across_chunk_borders():
    rng = random.Random(7)
    for _ in range(3000):
        data = bytes(rng.choice(b'[]{}",\\ab') for _ in range(rng.randint(0, 30)))
        for chunk in (1, 2, 3, 5, 1 << 20):          # escapes and strings cut anywhere
            shape = uploads.json_shape(data, chunk)
            assert (shape.depth, shape.values, shape.in_string) == plain_scan(data), (data, chunk)


def test_escaped_quotes_and_unterminated_strings_hide_their_brackets():
    assert uploads.json_depth(b'["a\\"[[[", "b\\\\", [1]]') == 2          # \" inside, \\ closes before ", [1]
    unterminated = b'"' + b'\\"' * 50_000 + b"[[[[[["                      # the input the old check took hours on
    shape = uploads.json_shape(unterminated)
    assert (shape.depth, shape.in_string) == (0, True)


def test_the_scan_of_a_file_at_the_cap_holds_a_small_share_of_it_in_memory():
    """A 20 MB unterminated string of escaped quotes (the bench's freezer), scanned whole: the scan's own memory
    stays about 24 MiB, a chunk's steps (fails on the old code: 47 MiB, 1 MiB chunks)."""
    freezer = portal_load.hostile_file("freezer", b"", 1)
    tracemalloc.start()
    try:
        shape = uploads.json_shape(freezer, max_depth=uploads.MAX_JSON_DEPTH, max_values=uploads.MAX_JSON_VALUES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert shape.in_string and shape.values <= 2
    assert peak < 30 * 2**20


def test_too_many_values_are_refused_before_parsing(app, portal):
    nb = json.loads(notebook_bytes())
    nb["cells"][0]["source"] = ["a"] * (uploads.MAX_JSON_VALUES + 1)       # one cell: no cell limit applies
    data = json.dumps(nb).encode()
    assert uploads.json_shape(data).values > uploads.MAX_JSON_VALUES
    answer = upload(client_for(app, portal, "alice"), data)
    assert answer.status_code == 400 and "JSON values" in answer.text
    assert attempts_in(portal) == 0


def test_a_lone_surrogate_in_a_cell_is_read_as_text_every_step_can_encode(tmp_path):
    nb = json.loads(notebook_bytes())
    nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "print('\\ud800')"})
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps(nb).replace("\\\\ud800", "\\ud800"))          # a JSON escape of a lone surrogate
    source = read_notebook(path).cells[-1].source
    assert source.encode("utf-8") == "print('?')".encode()


class Poisoned(CountingExecute):
    """The sandbox's stand-in, with jobs that poison what they touch: an executed notebook holding a lone
    surrogate, an exception, or a thread killed mid-job (a BaseException nothing in the job catches)."""

    def __call__(self, task):
        super().__call__(task)
        if "# surrogate" in task.notebook_json:
            executed = task.notebook_json.replace("# surrogate", "# surrogate \ud800")
            return Execution(task.key, {}, [], {}, 0.01, executed_notebook=executed)
        if "# raises" in task.notebook_json:
            raise RuntimeError("the grader's own bug")
        if "# kills" in task.notebook_json:
            raise ThreadKilled()
        return Execution(task.key, {}, [], {}, 0.01)


class ThreadKilled(BaseException):
    pass


def statuses(portal) -> dict[int, tuple[str, int]]:
    with portal.sessions() as db:
        return {a.id: (a.status, a.runs) for a in db.execute(select(Attempt)).scalars()}


def wait_until_settled(portal, count: int, seconds: float = 60) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = statuses(portal)
        if len(found) == count and all(s in ("graded", "error") for s, _ in found.values()):
            return found
        time.sleep(0.05)
    return statuses(portal)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_poison_jobs_and_killed_threads_never_stop_grading(course, monkeypatch):
    monkeypatch.setattr(worker, "SUPERVISE_SECONDS", 0.05)
    execute = Poisoned()
    portal = new_portal(course, execute, jobs=2)
    app_client = client_for(_app(portal), portal, "alice")
    portal.set_policy(ASSIGNMENT, {"max_queued": 0})
    for marker in ("surrogate", "raises", "kills", "honest one", "honest two"):
        assert upload(app_client, notebook_bytes(marker)).status_code == 303
    portal.start()
    try:
        found = wait_until_settled(portal, 5)
        assert all(thread.is_alive() for thread in portal.worker.threads.values())
    finally:
        portal.stop()
    by_marker = dict(zip(("surrogate", "raises", "kills", "honest one", "honest two"), sorted(found), strict=True))
    assert found[by_marker["surrogate"]] == ("graded", 1)             # stored, its surrogate replaced
    assert found[by_marker["honest one"]][0] == found[by_marker["honest two"]][0] == "graded"
    assert found[by_marker["raises"]] == ("error", worker.MAX_RUNS)   # retried, then given up
    assert found[by_marker["kills"]][0] == "error"
    assert portal.worker.restarts >= worker.MAX_RUNS                  # each kill replaced its thread
    feedback = app_client.get(f"/attempts/{by_marker['raises']}/feedback").text
    assert "does not use up one of your attempts" in feedback and "RuntimeError" not in feedback
    executed = uploads.executed_path(course, "alice", ASSIGNMENT, by_marker["surrogate"]).read_bytes()
    assert b"# surrogate ?" in executed


def test_a_job_that_killed_the_process_on_its_last_run_is_not_run_again(course):
    execute = Poisoned()
    portal = new_portal(course, execute)
    alice = client_for(_app(portal), portal, "alice")
    for marker in ("kills the process", "honest"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    with portal.sessions() as db:                  # as if three portals died running it: runs counted on claim
        db.execute(update(Attempt).where(Attempt.number == 1).values(status="running", runs=worker.MAX_RUNS))
        db.commit()
    restarted = new_portal(course, execute)
    restarted.start()
    try:
        found = wait_until_settled(restarted, 2)
    finally:
        restarted.stop()
    assert found == {1: ("error", worker.MAX_RUNS + 1), 2: ("graded", 1)}
    assert len(execute.runs) == 1                  # only the honest job ran


def test_a_dead_threads_job_goes_back_to_the_queue(course):
    portal = new_portal(course)
    alice = client_for(_app(portal), portal, "alice")
    assert upload(alice, notebook_bytes("held")).status_code == 303
    portal.worker.claimers[0] = worker.new_claimer(0)
    with portal.sessions() as db:
        job = queue.claim(db, claimer=portal.worker.claimers[0])   # committed in slot 0's name, which then dies
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    portal.worker.threads = {0: dead}
    try:
        assert portal.worker.replace_dead_threads() == 1          # requeued, and a new thread grades it
        assert wait_until_settled(portal, 1)[job] == ("graded", 2)
    finally:
        portal.worker.stop()


def test_a_fault_between_a_claim_and_its_grading_puts_the_job_back(course, monkeypatch):
    monkeypatch.setattr(worker, "FAULT_PAUSE_SECONDS", 0.05)
    portal = new_portal(course)
    alice = client_for(_app(portal), portal, "alice")
    assert upload(alice, notebook_bytes("claimed")).status_code == 303
    told = []

    def first_word_fails(job):                  # the status of a claimed job could not be told, once
        told.append(job)
        if len(told) == 1:
            raise OSError("the web process did not hear it")
    portal.worker.status_changed = first_word_fails
    portal.worker.start()
    try:
        assert wait_until_settled(portal, 1)[1] == ("graded", 2)   # back in the queue, no restart, graded
    finally:
        portal.worker.stop()


def _app(portal):
    return create_app(portal, start_worker=False)


FORGED_FRAMES = [{"result": ["a list"], "record": {"missing": "x"}}, {"result": {"a": 1}, "record": {"missing": "x"}},
                 {"output": 0, "outputs": [{"output_type": "stream", "name": ["stdout"], "text": "x"}]}]


def test_forged_frames_are_no_answer_never_the_supervisors_error():
    reader = ChannelReader(Limits())
    run = supervisor.Attempt(None, b"", [0], [], Limits(), reader, {}, {})
    for frame in reader.feed(b"".join(codec.frame(f) for f in FORGED_FRAMES)):
        run.accept(frame, {"hidden_pe_values"})
    assert run.results == {} and run.outputs == {0: {"outputs": [], "truncated": False}}


FORGING_CELL = ("import json, os, struct\nfd = int(os.environ['POSENC_CHANNEL_FD'])\n"      # the channel's frames
                "for frame in {frames!r}:\n    skeleton = json.dumps([[], frame]).encode()\n"
                "    os.write(fd, struct.pack('<IQ', len(skeleton), 0) + skeleton)\n")


UNREADABLE_CELL = ("import os, struct\nfd = int(os.environ['POSENC_CHANNEL_FD'])\n"       # frames none can read
                   "skeleton = repr({'result': ['x']}).encode()\n"
                   "os.write(fd, struct.pack('<IQ', len(skeleton), 0) + skeleton)\n"
                   "os.write(fd, struct.pack('<IQ', 8, 2**60))\n"
                   "print('the grader failed on this notebook', flush=True)\n")


RUN_TASK = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
out, sys.stdout = sys.stdout.buffer, sys.stderr
from posenc_autograder.grading.execute import execute_task
out.write(pickle.dumps(execute_task(pickle.load(sys.stdin.buffer))))
"""


@contextlib.contextmanager
def executed_as(user: str):
    """execute_task run by `user` in a process of its own (so the sandbox is started by an unprivileged
    supervisor), the task and the execution passed as plain data, as a Dask worker gets them."""
    grader = str(pathlib.Path(posenc_autograder.__file__).parents[1])
    command = reachable_as(user, [sys.executable, "-c", RUN_TASK, grader], [sys.executable, sys.prefix, grader])

    def execute(task):
        done = subprocess.run(command, cwd="/", input=pickle.dumps(task), capture_output=True, timeout=600)
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
        return pickle.loads(done.stdout)
    yield execute


@pytest.mark.slow
@pytest.mark.parametrize("who", ["the grading user", "an ordinary user"])
def test_a_forged_frame_is_the_students_attempt_and_counts(course, who):
    """In the real sandbox, started by the grading user (root in CI) and by an ordinary user: the attempt is
    graded (not a grader error) and uses up the only attempt."""
    with contextlib.ExitStack() as stack:
        execute = execute_task if who == "the grading user" else stack.enter_context(executed_as(ordinary_user()))
        forged_attempt_counts(course, execute)


def forged_attempt_counts(course, execute):
    portal = new_portal(course, execute)
    alice = client_for(_app(portal), portal, "alice")
    nb = json.loads(notebook_bytes())
    for name, source in (("forge", FORGING_CELL.format(frames=FORGED_FRAMES)), ("unreadable", UNREADABLE_CELL)):
        nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "id": name,
                            "source": source})
    with portal.sessions() as db:
        db.add(Policy(assignment=ASSIGNMENT, max_attempts=1, counts="best", feedback_before="full"))
        db.commit()
    assert upload(alice, json.dumps(nb).encode()).status_code == 303
    portal.worker.run_until_idle()
    assert statuses(portal) == {1: ("graded", 1)}                # graded on its first run: never a grader error
    with portal.sessions() as db:
        result = NotebookResult.from_json(json.loads(db.get(Attempt, 1).result_json))
    assert result.graded and not result.notes_of(NoteKind.GRADER_ERROR)
    assert [n.text for n in result.notes_of(NoteKind.UNREADABLE_DATA)] and "announced" in str(result.notes)
    refused = upload(alice, notebook_bytes("another"))
    assert refused.status_code == 403 and "used all 1 attempts" in refused.text


def test_the_integrity_evidence_follows_the_attempt_that_counts(app, portal):
    alice = client_for(app, portal, "alice")
    for marker in ("copied from bob", "my own template"):
        assert upload(alice, notebook_bytes(marker)).status_code == 303
    portal.worker.run_until_idle()
    where = evidence.path(portal.course, ASSIGNMENT, NOTEBOOK, "alice")
    assert "# my own template" in evidence.read(where).code          # a tie: the later one counts
    with portal.sessions() as db:                                     # the copy turns out to score more
        db.execute(update(Attempt).where(Attempt.number == 1).values(score=5.0))
        db.execute(update(Attempt).values(promoted=False))
        db.commit()
    portal.worker.store_counting("alice", ASSIGNMENT)
    assert "# copied from bob" in evidence.read(where).code
    kept = [evidence.read(uploads.evidence_path(portal.course, "alice", ASSIGNMENT, n)).code for n in (1, 2)]
    assert "# copied from bob" in kept[0] and "# my own template" in kept[1]      # every attempt's is kept


def test_the_load_tests_hostile_files_meet_the_checks_they_aim_at(tmp_path):
    honest = notebook_bytes()
    freezer = portal_load.hostile_file("freezer", honest, 1)
    assert uploads.json_shape(freezer).in_string and freezer.count(b'\\"') > 1_000_000    # what froze the regex
    assert len(freezer) < Caps().notebook_bytes and freezer.startswith(b"{")   # scanned whole: past the first look
    assert "JSON values" in uploads.problem(portal_load.hostile_file("oversized", honest, 1))
    assert "larger than" in uploads.problem(portal_load.hostile_file("oversized", honest, 2))
    poison = tmp_path / "poison.ipynb"
    poison.write_bytes(portal_load.hostile_file("poison", honest, 1))
    assert b"\\ud800" in poison.read_bytes()
    read_notebook(poison).cells[-1].source.encode("utf-8")              # readable, and encodable everywhere
