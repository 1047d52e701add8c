"""An attempt's live status by long polling: a status request naming the status the page shows is held until
the attempt's status changes, and answered then (not at the page's next poll); held requests are bounded per
student and in all (past a bound a request is answered at once, as a plain poll), and a client that goes away
frees its place. The page without JavaScript still refreshes itself."""
import json
import socket
import threading
import time

import httpx
import pytest
from own_loop import run_in_own_loop
from served import HOST, serving
from test_edges import closed_or_answer, served
from test_sharing import attempt_of

from conftest import client_for, notebook_bytes, upload
from posenc_autograder.devtools import portal_load
from posenc_autograder.portal import app as portal_app
from posenc_autograder.portal import queue
from posenc_autograder.portal.models import Status

WAIT = 30.0                         # the longest a test waits for the portal to reach a state (never asserted on)


def until(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


class Asking:
    """A status request in its own thread (the test client blocks while the portal holds it)."""

    def __init__(self, client, attempt: int, since: str | None):
        query = f"?since={since}" if since else ""
        self.answer = None
        self.thread = threading.Thread(target=self._ask, args=(client, f"/attempts/{attempt}/status.json{query}"))
        self.thread.start()

    def _ask(self, client, url):
        self.answer = client.get(url)

    def status(self) -> dict:
        self.thread.join(WAIT)
        assert self.answer is not None, "no answer"
        return json.loads(self.answer.text)


def uploaded(client, marker: str) -> int:
    return attempt_of(upload(client, notebook_bytes(marker)))


def test_a_status_request_is_held_until_the_status_changes(app, portal):
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    asking = Asking(alice, job, since=Status.QUEUED)
    until(lambda: portal.watch.held_by("alice") == 1, "the request is held")
    assert asking.answer is None
    assert portal.worker._claim() == job                                 # the worker takes it: running
    running = asking.status()
    assert running["status"] == Status.RUNNING and running["poll_seconds"] == 0     # ask again at once
    asking = Asking(alice, job, since=Status.RUNNING)
    until(lambda: portal.watch.held_by("alice") == 1, "the next request is held")
    portal.worker.grade(job)
    graded = asking.status()
    assert graded["status"] == Status.GRADED and graded["score"] is not None
    assert portal.watch.held == 0
    unchanged = json.loads(alice.get(f"/attempts/{job}/status.json?since={Status.QUEUED}").text)
    assert unchanged["status"] == Status.GRADED                           # already changed: answered at once


def test_held_requests_are_bounded_per_student_and_in_all(app, portal):
    portal.watch.in_all = 3
    alice, bob, carol = (client_for(app, portal, name) for name in ("alice", "bob", "carol"))
    jobs = {name: uploaded(client, name) for name, client in (("alice", alice), ("bob", bob), ("carol", carol))}
    held = [Asking(alice, jobs["alice"], Status.QUEUED) for _ in range(portal.watch.per_student)]
    until(lambda: portal.watch.held_by("alice") == portal.watch.per_student, "alice's requests are held")
    over = Asking(alice, jobs["alice"], Status.QUEUED).status()          # one more of hers: a plain poll
    assert over["status"] == Status.QUEUED and over["poll_seconds"] > 0
    held.append(Asking(bob, jobs["bob"], Status.QUEUED))
    until(lambda: portal.watch.held == 3, "bob's request is held")
    full = Asking(carol, jobs["carol"], Status.QUEUED).status()          # the portal holds all it may
    assert full["status"] == Status.QUEUED and full["poll_seconds"] > 0
    assert all(asking.answer is None for asking in held)
    portal.worker.run_until_idle()
    # each held request is answered by the change: running, or graded when its thread read the status after the
    # job had finished (a loaded machine wakes it late); never still queued
    answered = {asking.status()["status"] for asking in held}
    assert answered and answered <= {Status.RUNNING, Status.GRADED}, answered
    assert portal.watch.held == 0


# The two ways a waiting page follows its status, each held open by the portal: the path asked for, and what its
# answer carries beside the status (the event stream names when to connect again).
FOLLOWING = {"held status request": ("status.json?since=queued", b'"queued"'),
             "event stream": ("status.events", b"retry: ")}


def held_over_a_socket(port: int, client, job: int, how: str) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port))
    connection.sendall(f"GET /attempts/{job}/{FOLLOWING[how][0]} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: "
                       f"portal_session={client.cookies['portal_session']}\r\n\r\n".encode())
    return connection


@pytest.mark.parametrize("how", FOLLOWING)
def test_a_held_request_whose_client_went_away_frees_its_place(app, portal, how):
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    with served(app) as port:
        connection = held_over_a_socket(port, alice, job, how)
        until(lambda: portal.watch.held_by("alice") == 1, "the request is held")
        connection.close()
        until(lambda: portal.watch.held_by("alice") == 0, "its place is freed")


@pytest.mark.parametrize("how", FOLLOWING)
def test_a_server_that_stops_answers_its_held_requests_first(app, portal, monkeypatch, how):
    """uvicorn waits for open requests before it stops: a held one is answered at once, not after its hold."""
    monkeypatch.setitem(queue.HOLD_SECONDS, Status.QUEUED, 3600.0)
    alice = client_for(app, portal, "alice")
    job = uploaded(alice, "a")
    server = portal_app.PortalServer(portal_app.server_config(app, HOST, 0), portal.watch)
    with serving(server) as served_at:
        connection = held_over_a_socket(served_at.port, alice, job, how)
        until(lambda: portal.watch.held_by("alice") == 1, "the request is held")
        server.should_exit = True
        answer = closed_or_answer(connection, WAIT)
        assert answer is not None and answer.startswith(b"HTTP/1.1 200") and b'"queued"' in answer
        assert FOLLOWING[how][1] in answer
        served_at.thread.join(WAIT)
        assert not served_at.thread.is_alive()


def test_the_page_follows_the_status_with_and_without_javascript(app, portal):
    alice = client_for(app, portal, "alice")
    page = alice.get(f"/attempts/{uploaded(alice, 'a')}").text
    assert '<noscript><meta http-equiv="refresh"' in page                 # a plain refresh without the script
    script = alice.get("/static/portal.js").text
    assert "?since=" in script and "poll_seconds" in script


def test_bench_portals_students_follow_the_status_as_the_page_does(app, portal):
    """make bench-portal's simulated student is held while queued (the worker starts only then) and reads the
    wait the page showed first."""
    link = f"/s/{portal.new_link('ann')}"

    def start_when_held():
        until(lambda: portal.watch.held_by("ann") == 1, "the student's request is held")
        portal.worker.run_until_idle()
    grading = threading.Thread(target=start_when_held)
    grading.start()

    async def student():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://127.0.0.1") as client:
            return await portal_load.one_student(client, link, notebook_bytes("ann"), 0, time.monotonic() + WAIT)
    outcome = run_in_own_loop(student())
    grading.join(WAIT)
    assert outcome["status"] == Status.GRADED and outcome["shown_wait"] > 0


def test_a_waiting_page_asks_again_only_as_often_as_a_router_forces():
    """A queued attempt's status request is held as long as a hosting router lets a response wait (less a margin),
    and a page past the bounds on held requests polls no more often: the number of requests a waiting student makes
    is the queue's wait over that hold, so a longer queue costs the portal as few requests as it can (a 10 s hold
    made 12.9 requests a student in a rush of 2,000)."""
    margin = 2.0                                # the router's clock, the answer's own time
    for status in (Status.QUEUED, Status.RUNNING):
        assert 20.0 <= queue.hold_seconds(status) <= queue.ROUTER_TIMEOUT_SECONDS - margin
    queued_an_hour = queue.poll_seconds(Status.QUEUED, 3600.0)
    assert queued_an_hour == queue.hold_seconds(Status.QUEUED)
    assert queue.poll_seconds(Status.QUEUED, 2.0) < queued_an_hour      # near the front: sooner
