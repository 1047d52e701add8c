"""Request middleware around everything the portal answers (Guard): request bodies capped by their
Content-Length at once and while they stream in, bodies that stall or take too long cut off, an unhandled error
turned into a plain 500 page, and the security headers on every response, errors included."""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence

from posenc_autograder import settings
from posenc_autograder.portal import pages, uploads

FORM_BYTES = 64_000                           # any request but an upload
ENVELOPE_BYTES = 64_000                               # the multipart envelope around an uploaded notebook
UPLOAD_BYTES = uploads.MAX_UPLOAD_BYTES + ENVELOPE_BYTES   # the default course's; Guard is given its course's
UPLOAD_SUFFIX = "/upload"
STATIC_PREFIX = "/static/"                    # routes.py mounts the static files there
BODY_IDLE_SECONDS = 30.0             # a request body that stalls this long is cut off (slow clients)
BODY_SECONDS = {True: 600.0, False: 30.0}       # a whole body, upload or not (20 MB at 0.3 MB/s fits)
REFUSED_BODY_BYTES = 100_000_000     # a body refused on its length is received and dropped up to this size
log = logging.getLogger(__name__)


class BodyTooLarge(Exception):
    pass


class RequestTimeout(Exception):
    """The client sent its request body too slowly."""


class Guard:
    """ASGI middleware around everything the app answers: caps request bodies (by Content-Length at once, and
    while streaming), cuts off bodies that stall or take too long, turns any unhandled error into a plain 500
    page, and adds the security headers to every response, errors included."""

    def __init__(self, app, upload_bytes: int = uploads.MAX_UPLOAD_BYTES, frame_ancestors=lambda: []):
        self.app, self.upload_bytes, self.frame_ancestors = app, upload_bytes, frame_ancestors

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        uploading = scope["path"].endswith(UPLOAD_SUFFIX)
        limit = self.upload_bytes + ENVELOPE_BYTES if uploading else FORM_BYTES
        started = False
        static = scope["path"].startswith(STATIC_PREFIX)

        async def with_headers(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = message.get("headers", [])
                if static and message["status"] in (200, 304):
                    headers = [*headers, (b"cache-control", pages.STATIC_KEPT.encode())]
                message = {**message, "headers": secure_headers(headers, self.frame_ancestors())}
            await send(message)

        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return await refuse_unread(with_headers, receive, scope, declared, self.upload_bytes)
        try:
            await self.app(scope, bounded(receive, limit, BODY_SECONDS[uploading]), with_headers)
        except Exception:  # noqa: BLE001 - logged; the client gets a plain page, never a traceback
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await send_page(with_headers, 500, "Something went wrong", "The portal could not answer this "
                                "request. Try again; if it keeps happening, tell your instructor.")


def bounded(receive, limit: int, seconds: float):
    """`receive` with the body capped at `limit` bytes and cut off when it stalls or takes too long in all."""
    deadline = asyncio.get_running_loop().time() + seconds
    seen, finished = 0, False

    async def bounded_receive():
        nonlocal seen, finished
        if finished:                               # the body is in: waiting for a disconnect is not a stall
            return await receive()
        left = deadline - asyncio.get_running_loop().time()
        try:
            message = await asyncio.wait_for(receive(), max(min(BODY_IDLE_SECONDS, left), 0.001))
        except asyncio.TimeoutError:
            raise RequestTimeout() from None
        seen += len(message.get("body", b""))
        finished = not message.get("more_body", False)
        if seen > limit:
            raise BodyTooLarge()
        return message

    return bounded_receive


def secure_headers(headers, ancestors: Sequence[str] = ()) -> list:
    """The security headers on a response: the portal's CSP unless it has its own, framing only by the registered
    LMSs (`ancestors`; X-Frame-Options cannot name them, so it goes when they are named)."""
    headers = [(n, pages.with_frame_ancestors(v.decode(), list(ancestors)).encode())
               if n.lower() == b"content-security-policy" else (n, v) for n, v in headers]
    present = {name.lower() for name, _ in headers}
    if b"content-security-policy" not in present:
        headers.append((b"content-security-policy", pages.with_frame_ancestors(pages.PORTAL_CSP, list(ancestors))
                        .encode()))
    extra = {k: v for k, v in pages.HEADERS.items() if not (ancestors and k == "x-frame-options")}
    return headers + [(k.encode(), v.encode()) for k, v in extra.items() if k.encode() not in present]


async def send_page(send, status: int, title: str, text: str, more: bool = False, close: bool = True):
    """A plain page, the connection closed after it unless not `close`; `more`: the response is left open (the
    caller ends it)."""
    body = pages.render("message.html", title=title, text=text, link=None, signed_in=False, csrf="").encode()
    headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status,
                "headers": headers + [(b"connection", b"close")] if close else headers})
    await send({"type": "http.response.body", "body": body, "more_body": more})


def server_drops_unread(scope) -> bool:
    """Whether the server drops the body of a request answered before it was read (app.SlowClientProtocol does,
    on a connection kept open: HTTP/1.1 without Connection: close); else the application must read it, or the
    connection it closes on unread bytes is reset and the answer lost."""
    connection = dict(scope["headers"]).get(b"connection", b"").lower()
    return scope.get("http_version") == "1.1" and b"close" not in connection


async def drop_unread(scope, receive) -> None:
    """Drop a request's body, answered or about to be, none of it kept: left to the server where it drops it,
    else received here, up to REFUSED_BODY_BYTES and within the usual time limits (cut off past them)."""
    if server_drops_unread(scope):
        return
    dropping = bounded(receive, REFUSED_BODY_BYTES, BODY_SECONDS[scope["path"].endswith(UPLOAD_SUFFIX)])
    with contextlib.suppress(BodyTooLarge, RequestTimeout):
        while (message := await dropping())["type"] == "http.request" and message.get("more_body", False):
            pass


async def refuse_unread(send, receive, scope, declared: bytes, upload_bytes: int):
    """413 for a body over the cap by its Content-Length, none of it kept. A client sends its whole body before it
    reads the answer (browsers, most libraries), and a server that closes on unread bytes resets the connection,
    losing the page: so the page goes out first, then the body is dropped (drop_unread), up to REFUSED_BODY_BYTES
    and within the usual time limits; a body declared larger, or sent too slowly, is cut off after the page."""
    within = declared.isdigit() and int(declared) <= REFUSED_BODY_BYTES
    if within and server_drops_unread(scope):            # the server drops it and the connection serves on
        return await send_page(send, 413, "File too large", too_large_text(upload_bytes), close=False)
    await send_page(send, 413, "File too large", too_large_text(upload_bytes), more=True)
    if within:
        await drop_unread(scope, receive)
    await send({"type": "http.response.body", "body": b""})


def too_large_text(upload_bytes: int) -> str:
    return (f"The file is larger than the {settings.size(upload_bytes)} accepted. Clear the outputs "
            f"(Kernel > Restart & Clear Output), save, and upload it again.")
