"""An attempt's live status as server-sent events (the page's script follows it with an EventSource): the status
now and at each change on one request for the whole wait, ended after a finished status; bounded like held status
requests (past a bound: the status once, with the polling interval as the EventSource's retry); a client that goes
away frees its place, a stopping server ends its streams, and a session that ended (a revoked link) ends its stream
at the next event. Only the student's own attempt, only signed in."""
import json
import threading
import warnings

from fixture_submissions import ASSIGNMENT, NOTEBOOK
from test_live_status import WAIT, until, uploaded

from conftest import client_for, notebook_bytes
from posenc_autograder.portal import hub, queue
from posenc_autograder.portal.models import Status

with warnings.catch_warnings():
    warnings.simplefilter("ignore")          # Starlette's note that a later httpx is preferred
    from starlette.testclient import TestClient


def events_of(body: str) -> list[dict]:
    """The statuses a stream sent, and each event's retry (ms) as `retry` where it named one."""
    found = []
    for block in body.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            found.append({**json.loads(fields["data"]), **({"retry": int(fields["retry"])} if "retry" in fields
                                                           else {})})
    return found


class Streaming:
    """A status stream read to its end in its own thread (the test client returns the body once it ends)."""

    def __init__(self, client, attempt: int):
        self.answer = None
        self.thread = threading.Thread(target=self._read, args=(client, f"/attempts/{attempt}/status.events"))
        self.thread.start()

    def _read(self, client, url):
        self.answer = client.get(url)

    def events(self) -> list[dict]:
        self.thread.join(WAIT)
        assert self.answer is not None, "the stream never ended"
        assert self.answer.headers["content-type"].startswith("text/event-stream")
        return events_of(self.answer.text)


def test_one_stream_carries_every_change_of_a_waiting_attempt_and_ends_when_it_is_graded(app, portal):
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    streaming = Streaming(alice, job)
    until(lambda: portal.watch.held_by("alice") == 1, "the stream is held")
    assert portal.worker._claim() == job
    until(lambda: portal.watch.held_by("alice") == 1 and streaming.answer is None, "still streaming")
    portal.worker.grade(job)
    statuses = [event["status"] for event in streaming.events()]
    assert statuses[0] == Status.QUEUED and statuses[-1] == Status.GRADED      # running too, unless read late
    assert set(statuses[1:-1]) <= {Status.RUNNING}
    assert portal.watch.held == 0
    graded = events_of(alice.get(f"/attempts/{job}/status.events").text)       # finished: sent once, at once
    assert [event["status"] for event in graded] == [Status.GRADED]


def test_an_unchanged_status_is_sent_again_after_its_hold(app, portal, monkeypatch):
    """The jobs ahead a page shows are refreshed after queue.hold_seconds, on the same stream."""
    monkeypatch.setitem(queue.HOLD_SECONDS, Status.QUEUED, 0.2)
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    streaming = Streaming(alice, job)
    until(lambda: portal.watch.held_by("alice") == 1, "the stream is held")
    threading.Event().wait(1.0)
    portal.worker.run_until_idle()
    statuses = [event["status"] for event in streaming.events()]
    assert statuses.count(Status.QUEUED) >= 2 and statuses[-1] == Status.GRADED


def test_a_stream_past_the_bounds_gets_the_status_once_with_the_polling_interval_to_connect_again(app, portal):
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    held = [Streaming(alice, job) for _ in range(portal.watch.per_student)]
    until(lambda: portal.watch.held_by("alice") == portal.watch.per_student, "alice's streams are held")
    over = events_of(alice.get(f"/attempts/{job}/status.events").text)        # answered at once, then ended
    assert [event["status"] for event in over] == [Status.QUEUED]
    assert over[0]["retry"] == 1000 * over[0]["poll_seconds"] > 0
    portal.worker.run_until_idle()
    assert all(streaming.events()[-1]["status"] == Status.GRADED for streaming in held)


def test_a_stream_of_a_session_that_ended_stops_at_its_next_event(app, portal, monkeypatch):
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    read, reads = portal.signed_in_status, []
    monkeypatch.setattr(portal, "signed_in_status", lambda *args: reads.append(read(*args)) or reads[-1])
    streaming = Streaming(alice, job)
    until(lambda: portal.watch.held_by("alice") == 1 and reads, "the stream is held, its first status read")
    assert portal.revoke("alice")
    portal.worker.run_until_idle()
    assert [event["status"] for event in streaming.events()] == [Status.QUEUED]   # nothing after the revocation
    assert portal.watch.held == 0


def test_only_a_signed_in_student_streams_and_only_their_own_attempt(app, portal):
    alice, bob = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    job = uploaded(alice, "a")
    assert bob.get(f"/attempts/{job}/status.events").status_code == 404
    assert client_for(app).get(f"/attempts/{job}/status.events").status_code == 403
    assert alice.get("/attempts/99999/status.events").status_code == 404
    assert portal.watch.held == 0


def test_the_page_names_its_stream_under_a_hubs_service_prefix(app, portal):
    client = TestClient(hub.Prefixed(app, "/services/posenc"), base_url="http://127.0.0.1")
    assert client.get(f"/services/posenc/s/{portal.new_link('alice')}").status_code == 200
    outcome, job = portal.accept_upload("alice", ASSIGNMENT, f"{NOTEBOOK}.ipynb", notebook_bytes("a"))
    assert outcome == "queued"
    page = client.get(f"/services/posenc/attempts/{job}").text
    assert f'data-events="/services/posenc/attempts/{job}/status.events"' in page
