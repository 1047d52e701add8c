"""`make portal`: serve the submission portal with uvicorn (127.0.0.1:8080 by default; put a reverse proxy with
TLS in front for real use, see the README).

    python -m posenc_autograder portal [--host H] [--port P] [--jobs N] [--scheduler tcp://...] [--db-url URL]
                                       [--allow-root]

The portal process never runs student code: every notebook is graded in the sandbox (a subprocess per job,
or a Dask worker). It refuses to start as root unless --allow-root is given (CI and tests run as root).
"""
from __future__ import annotations

import os
import sys

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from posenc_autograder.course import course_for_command
from posenc_autograder.grading.executors import default_jobs
from posenc_autograder.portal import hub
from posenc_autograder.portal.routes import create_app
from posenc_autograder.portal.service import Portal, PortalBusy
from posenc_autograder.portal.watch import StatusWatch
from posenc_autograder.portal.web import middleware
from posenc_autograder.sandbox.bubblewrap import SandboxUnavailable, check_sandbox

REQUEST_HEAD_SECONDS = 20.0          # a connection must send a request's line and headers within this
REQUEST_HEAD_BYTES = 16 * 1024       # and in at most this many bytes (h11's bound, which the portal served with before)
KEEP_ALIVE_SECONDS = 5


class SlowClientProtocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol on httptools (a parser in C: h11's, in Python, cost about 2 ms of CPU a MB of a
    hostile body and a fifth of a small request's), with a deadline and a size bound for each request's head: a
    client that opens connections and sends headers a byte at a time (slowloris), or one endless header, is cut off
    by the server itself, no proxy needed. Slow bodies are cut off by web/middleware.py's Guard.

    A request answered before its body was read (a refused upload: middleware.server_drops_unread) has the rest of
    its body dropped here as it comes, by the parser in C (uvicorn ignores a body after its response), within the
    bounds Guard puts on a body read (BODY_IDLE_SECONDS, BODY_SECONDS, at most REFUSED_BODY_BYTES): the client,
    which sends its whole body before it reads, then reads the answer, and the connection serves its next request.
    Read through the application instead, 20 MB cost the portal about 20 ms of CPU."""

    _head_timer = None
    _in_head = True            # a request's head is due: none whole yet since the connection opened, the last
    _head_bytes = 0            # response, or the first byte of the next request; and the bytes received since
    _body_due = False          # the request's head is read and its body not all in
    _body_started = _last_data = 0.0
    _drain_timer = None        # set while a body answered before it was read is dropped as it comes
    _dropped = 0

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._expect_head()

    def data_received(self, data: bytes) -> None:
        self._last_data = self.loop.time()
        if self._in_head:
            self._head_bytes += len(data)
        elif self._drain_timer is not None:
            self._dropped += len(data)
            if self._dropped > middleware.REFUSED_BODY_BYTES:
                self.transport.close()
                return
        super().data_received(data)
        # Counted after the parser has read it: a head and a body's start may come in one read, the head ending
        # there. httptools keeps a header's value until it ends, so a head past the bound is refused at once.
        if self._in_head and self._head_bytes > REQUEST_HEAD_BYTES and not self.transport.is_closing():
            if self.cycle is None or self.cycle.response_complete:
                self.send_400_response("Request head too large.")
            else:                                           # a pipelined request's head, while one is answered
                self.transport.close()

    def on_message_begin(self) -> None:
        self._in_head = True
        super().on_message_begin()

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes = False, 0
        self._body_due, self._body_started = True, self.loop.time()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._body_due = False
        super().on_message_complete()
        if self._drain_timer is not None:          # the body answered before it was read is in: a head is due next
            self._drain_timer.cancel()
            self._drain_timer = None
            self._expect_head()
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)

    def on_response_complete(self) -> None:
        read_already = bool(self.pipeline)          # a pipelined request, its head read, is answered next
        super().on_response_complete()
        if self._body_due and not self.transport.is_closing():
            self._drop_body()
        else:
            self._expect_head(due=not read_already)

    def connection_lost(self, exc) -> None:
        for timer in (self._head_timer, self._drain_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def _drop_body(self) -> None:
        """Drop the rest of a body answered before it was read, as it comes; cut off as Guard cuts off a body."""
        self._unset_keepalive_if_required()                 # a pause in the body is timed as in one read
        self._dropped = 0
        self._body_overdue()

    def _body_overdue(self) -> None:
        uploading = self.scope.get("path", "").endswith(middleware.UPLOAD_SUFFIX)
        due = min(self._last_data + middleware.BODY_IDLE_SECONDS,
                  self._body_started + middleware.BODY_SECONDS[uploading])
        if self.loop.time() >= due:
            self._drain_timer = None
            self.transport.close()
        else:
            self._drain_timer = self.loop.call_at(due, self._body_overdue)

    def _expect_head(self, due: bool = True) -> None:
        if due and not self._in_head:
            self._in_head, self._head_bytes = True, 0
        if self._head_timer is not None:
            self._head_timer.cancel()
        self._head_timer = self.loop.call_later(REQUEST_HEAD_SECONDS, self._head_overdue)

    def _head_overdue(self) -> None:
        if self._in_head and not self.transport.is_closing():
            self.transport.close()


class PortalServer(uvicorn.Server):
    """uvicorn's server, which on shutdown first answers the status requests held for a change: it waits for
    every open request to end, and a held one could otherwise keep it waiting for its longest hold."""

    def __init__(self, config: uvicorn.Config, watch: StatusWatch):
        super().__init__(config)
        self.watch = watch

    async def shutdown(self, sockets=None) -> None:
        self.watch.close()
        await super().shutdown(sockets)


def server_config(app, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(app, host=host, port=port, proxy_headers=True, http=SlowClientProtocol,
                          timeout_keep_alive=KEEP_ALIVE_SECONDS,
                          forwarded_allow_ips=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
                          access_log=False, log_level="warning")   # no access log: sign-in paths hold tokens


def refuse_root(allow_root: bool) -> str | None:
    """Why the portal will not start as this user (None: it will)."""
    if os.geteuid() == 0 and not allow_root:
        return ("the portal does not run as root: start it as an ordinary user with unprivileged user namespaces "
                "(see the README), or if you must (CI, containers) pass --allow-root: `make portal "
                "PORTAL_ARGS=--allow-root`, or `python -m posenc_autograder portal --allow-root`")
    return None


def arguments(parser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--allow-root", action="store_true", help="run even as root (not advised)")


def run_command(args) -> int:
    refusal = refuse_root(args.allow_root)
    if refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    try:
        check_sandbox()
    except SandboxUnavailable as exc:
        print(f"Cannot grade safely: {exc}", file=sys.stderr)
        return 2
    course = course_for_command(args.course, args.db_url)
    portal = Portal(course, jobs=args.jobs or default_jobs(), processes=True, scheduler=args.scheduler)
    host, port = hub.service_address() or (args.host, args.port)      # where the hub routes its service
    where = f"http://{host}:{port}"
    secret_at = portal.secret_file or "$POSENC_PORTAL_SECRET"
    print(f"Portal on {where} ({portal.worker.jobs} grading sandboxes). Instructor: {where}/instructor "
          f"(secret in {secret_at}); students' links: `make portal-links`.", flush=True)
    config = server_config(create_app(portal), host, port)
    try:
        portal.acquire_lock()
    except PortalBusy as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    PortalServer(config, portal.watch).run()
    return 0

