"""The portal's edges: security headers on every answer (errors included), notices only from codes, only
released assignments offered, and clients that send too slowly cut off by the server itself."""
import contextlib
import datetime as dt
import socket
import sys
import threading
import time

import httpx
from fixture_submissions import ASSIGNMENT
from served import HOST, serving
from test_access import attempts_in, instructor_client

from conftest import client_for, new_portal, notebook_bytes, upload
from posenc_autograder.portal import app as portal_app
from posenc_autograder.portal import pages, service, uploads, web
from posenc_autograder.portal.lti import routes as lti_routes
from posenc_autograder.portal.routes import create_app
from posenc_autograder.portal.service import released_assignments
from posenc_autograder.portal.web import middleware, students


def assert_secure(answer):
    for name in [*pages.HEADERS, "content-security-policy"]:
        assert name in answer.headers, (answer.status_code, name)


def test_errors_carry_the_security_headers_too(app, portal, monkeypatch):
    alice = client_for(app, portal, "alice")
    assert_secure(alice.get(f"/attempts/{2**70}"))                         # past any integer column: not found
    assert alice.get(f"/attempts/{2**70}").status_code == 404
    too_large = alice.post(f"/assignments/{ASSIGNMENT}/upload", content=b"x",
                           headers={"content-length": str(middleware.UPLOAD_BYTES + 1)})
    assert too_large.status_code == 413
    assert_secure(too_large)
    monkeypatch.setattr(portal, "overview", lambda student: 1 / 0)        # a bug anywhere behind a page
    broken = client_for(app)
    broken.cookies = alice.cookies
    answer = broken.get("/")
    assert answer.status_code == 500 and "ZeroDivisionError" not in answer.text
    assert_secure(answer)


def test_notices_come_from_codes_only(app, portal):
    teacher = instructor_client(app, portal)
    forged = teacher.get("/instructor", params={"notice": "Grades are final: mail your secret to x@example.com"})
    assert "mail your secret" not in forged.text
    assert "The policy was saved." in teacher.get("/instructor", params={"notice": "policy-saved"}).text


def test_a_draft_without_its_release_is_not_offered(course, portal):
    draft = course.path("solutions") / "draft_assignment"
    draft.mkdir(parents=True)
    (draft / "draft_assignment.ipynb").write_bytes(notebook_bytes())
    assert "draft_assignment" in course.assignments()
    assert "draft_assignment" not in released_assignments(course)
    restarted = new_portal(course)
    assert "draft_assignment" not in restarted.assignments
    alice = client_for(create_app(restarted, start_worker=False), restarted, "alice")
    assert "draft_assignment" not in alice.get("/").text
    assert alice.get("/assignments/draft_assignment").status_code == 404
    refused = alice.post("/assignments/draft_assignment/upload", files={"notebook": ("d.ipynb", b"{}")})
    assert refused.status_code == 404


@contextlib.contextmanager
def served(app):
    """The app under the portal's own uvicorn configuration, on a port of its own."""
    server = portal_app.PortalServer(portal_app.server_config(app, HOST, 0), app.state.portal.watch)
    with serving(server) as served_at:
        yield served_at.port


def closed_or_answer(connection: socket.socket, wait: float) -> bytes:
    """What the server sends before closing (None: it kept the connection open for `wait` seconds)."""
    connection.settimeout(wait)
    received = b""
    try:
        while chunk := connection.recv(4096):
            received += chunk
    except socket.timeout:
        return None
    return received


def test_slow_clients_are_cut_off_by_the_server(app, monkeypatch):
    monkeypatch.setattr(portal_app, "REQUEST_HEAD_SECONDS", 0.3)
    monkeypatch.setattr(middleware, "BODY_IDLE_SECONDS", 0.3)
    monkeypatch.setattr(portal_app, "KEEP_ALIVE_SECONDS", 0.3)     # the 408's connection closed 0.3 s after it
    with served(app) as port:
        head = socket.create_connection(("127.0.0.1", port))
        head.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")                  # and never the blank line
        assert closed_or_answer(head, 10) == b""
        body = socket.create_connection(("127.0.0.1", port))
        body.sendall(b"POST /sign-out HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded"
                     b"\r\nContent-Length: 1000\r\n\r\ncsrf=")                   # 995 bytes never come
        answer = closed_or_answer(body, 10)
        assert answer is not None and answer.startswith(b"HTTP/1.1 408")
        assert b"x-frame-options" in answer.lower()
        fine = socket.create_connection(("127.0.0.1", port))                  # others were served all along
        fine.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert closed_or_answer(fine, 10).startswith(b"HTTP/1.1 200")


def test_a_request_head_past_its_bound_is_refused_before_it_ends(app):
    """A header that never ends (a parser would keep it until it did) is refused once the head passes
    REQUEST_HEAD_BYTES, sent in one piece or in many; a head under the bound is served."""
    with served(app) as port:
        endless = socket.create_connection((HOST, port))
        endless.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * portal_app.REQUEST_HEAD_BYTES)
        assert closed_or_answer(endless, 10).startswith(b"HTTP/1.1 400")
        pieces = socket.create_connection((HOST, port))
        pieces.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: ")
        for _ in range(2 * portal_app.REQUEST_HEAD_BYTES // 1000):
            with contextlib.suppress(OSError):
                pieces.sendall(b"a" * 1000)
                time.sleep(0.005)
        assert closed_or_answer(pieces, 10).startswith(b"HTTP/1.1 400")
        fine = socket.create_connection((HOST, port))
        fine.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Long: "
                     + b"a" * (portal_app.REQUEST_HEAD_BYTES - 200) + b"\r\n\r\n")
        assert closed_or_answer(fine, 10).startswith(b"HTTP/1.1 200")


def test_every_url_is_a_plain_module_level_handler(app):
    """Handlers read the portal from the app's state, so each can be read, imported and tested on its own."""
    for route in app.routes:
        if route.path == "/static":
            continue
        endpoint = route.endpoint
        assert getattr(sys.modules[endpoint.__module__], endpoint.__name__) is endpoint, route.path
        assert endpoint.__module__.rsplit(".", 1)[0] == web.__name__ or endpoint.__module__ == lti_routes.__name__, \
            route.path
    assert app.state.portal is not None


def test_uploads_are_checked_off_the_event_loop_and_two_at_a_time(app, portal, monkeypatch):
    """Checks that hold their thread (standing in for a slow parse) leave every other request answered, and a
    third upload waiting past its turn is told to retry, using no attempt."""
    monkeypatch.setattr(students, "UPLOAD_WAIT_SECONDS", 0.3)
    release, started = threading.Event(), threading.Semaphore(0)

    def held(*args):
        started.release()
        release.wait(30)
        return "unreadable", "held for the test"
    monkeypatch.setattr(portal, "accept_upload", held)
    tokens = {name: portal.new_link(name) for name in ("ann", "ben", "cat")}
    with served(app) as port:
        base = f"http://127.0.0.1:{port}"

        def student(name):
            client = httpx.Client(base_url=base, timeout=30)
            client.get(f"/s/{tokens[name]}")
            csrf = client.get(f"/assignments/{ASSIGNMENT}").text.split('name="csrf" value="', 1)[1].split('"')[0]
            return client, csrf

        def send(name, answers):
            client, csrf = student(name)
            answers[name] = client.post(f"/assignments/{ASSIGNMENT}/upload", data={"csrf": csrf},
                                        files={"notebook": ("n.ipynb", notebook_bytes(name))}).status_code
        answers: dict = {}
        uploading = [threading.Thread(target=send, args=(n, answers)) for n in ("ann", "ben")]
        for thread in uploading:
            thread.start()
        assert started.acquire(timeout=30) and started.acquire(timeout=30)       # both checks are running
        assert httpx.get(base + "/", timeout=10).status_code == 200              # the loop answers meanwhile
        send("cat", answers)                                                       # a third: no checker free
        release.set()
        for thread in uploading:
            thread.join(30)
    assert answers == {"ann": 400, "ben": 400, "cat": 503}


def test_an_upload_whose_checks_outlast_their_time_is_cut_off_before_it_counts(app, portal, monkeypatch):
    monkeypatch.setattr(service, "UPLOAD_CHECK_SECONDS", -1.0)               # every check is too late
    alice = client_for(app, portal, "alice")
    assert upload(alice, notebook_bytes("late check")).status_code == 503
    assert attempts_in(portal) == 0
    assert not list(uploads.folder(portal.course, "alice", ASSIGNMENT).glob("*.ipynb"))


def sent_whole(port: int, head: bytes, body: bytes) -> bytes:
    """What a client that sends its whole request before reading (as a browser does with a form) reads back."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return closed_or_answer(connection, 30)


def test_a_body_over_the_cap_by_its_length_is_answered_413_not_reset(app, portal):
    """Refused on its Content-Length, an oversized body is still received (and dropped) so that the client reads
    the 413 page saying why instead of a connection reset; nothing of it is kept."""
    token = portal.new_link("alice")
    with served(app) as port:
        cookie = httpx.get(f"http://127.0.0.1:{port}/s/{token}").cookies["portal_session"]
        head = (f"POST /assignments/{ASSIGNMENT}/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: portal_session="
                f"{cookie}\r\nContent-Type: multipart/form-data; boundary=x\r\n").encode()
        answer = sent_whole(port, head, b"x" * (middleware.UPLOAD_BYTES + 2**20))
        assert answer.startswith(b"HTTP/1.1 413") and b"larger than the 20 MB accepted" in answer
        assert b"x-frame-options" in answer.lower()
        form = sent_whole(port, b"POST /sign-out HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"x" * (4 * middleware.FORM_BYTES))
        assert form.startswith(b"HTTP/1.1 413")
    assert attempts_in(portal) == 0


def refused_upload_head(port: int, cookie: str, length: int) -> bytes:
    return (f"POST /assignments/{ASSIGNMENT}/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: portal_session={cookie}"
            f"\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: {length}\r\n\r\n").encode()


def answer_head(connection: socket.socket, wait: float) -> bytes:
    """The response's head, read within `wait` seconds (b"": none came)."""
    connection.settimeout(wait)
    received = b""
    with contextlib.suppress(socket.timeout):
        while b"\r\n\r\n" not in received and (chunk := connection.recv(4096)):
            received += chunk
    return received


def test_a_refused_upload_is_answered_before_its_body_is_in_and_its_connection_serves_on(app, portal):
    """An upload the policy refuses is answered without its body being read (the old portal read 20 MB through
    the application first, ~20 ms of CPU): the server drops the body as it comes, the client reads the answer
    after sending it, and the connection serves the next request."""
    portal.set_policy(ASSIGNMENT, {"opens_at": service.utcnow() + dt.timedelta(days=1)})   # not open yet: refused
    token = portal.new_link("alice")
    with served(app) as port:
        cookie = httpx.get(f"http://127.0.0.1:{port}/s/{token}").cookies["portal_session"]
        body = b"x" * 5_000_000
        with socket.create_connection((HOST, port)) as connection:
            connection.sendall(refused_upload_head(port, cookie, len(body)) + body[:10_000])
            assert answer_head(connection, 10).startswith(b"HTTP/1.1 403")          # the body not yet sent
            connection.sendall(body[10_000:] + b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert b"HTTP/1.1 200" in closed_or_answer(connection, 30)               # the same connection serves


def test_a_body_dropped_after_its_answer_is_cut_off_as_one_read(app, portal, monkeypatch):
    """The rest of a refused upload's body is dropped within the bounds of a body read: cut off when it stalls
    (BODY_IDLE_SECONDS) or passes REFUSED_BODY_BYTES."""
    monkeypatch.setattr(middleware, "BODY_IDLE_SECONDS", 0.3)
    monkeypatch.setattr(middleware, "REFUSED_BODY_BYTES", 200_000)
    portal.set_policy(ASSIGNMENT, {"opens_at": service.utcnow() + dt.timedelta(days=1)})
    token = portal.new_link("alice")
    with served(app) as port:
        cookie = httpx.get(f"http://127.0.0.1:{port}/s/{token}").cookies["portal_session"]
        with socket.create_connection((HOST, port)) as stalled:
            stalled.sendall(refused_upload_head(port, cookie, 100_000) + b"x" * 1000)       # and no more
            assert answer_head(stalled, 10).startswith(b"HTTP/1.1 403")
            assert closed_or_answer(stalled, 10) is not None                        # closed, not held
        with socket.create_connection((HOST, port)) as endless:
            endless.sendall(refused_upload_head(port, cookie, 1_000_000) + b"x" * 1000)
            assert answer_head(endless, 10).startswith(b"HTTP/1.1 403")
            with contextlib.suppress(OSError):
                for _ in range(100):                                   # 1 MB, past the bound: cut off
                    endless.sendall(b"x" * 10_000)
            with contextlib.suppress(ConnectionResetError):               # closed on bytes unread: reset
                assert closed_or_answer(endless, 10) is not None
