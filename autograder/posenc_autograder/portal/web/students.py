"""A signed-in student's pages: an assignment, its upload (refused before its body is read when the student may
not upload now; checked in worker threads, a few at a time), an attempt, its live status (held until it changes),
its feedback and its file."""
from __future__ import annotations

import asyncio
import contextlib
import json
import math

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from posenc_autograder.portal import auth, pages, queue, uploads
from posenc_autograder.portal.models import FINISHED, WAITING
from posenc_autograder.portal.web.answers import (
    COOKIE,
    attempt_id_of,
    current,
    message,
    not_found,
    notice_of,
    own_attempt,
    page,
    portal_of,
    released_assignment,
    student_page,
)
from posenc_autograder.portal.web.middleware import BodyTooLarge, drop_unread

UPLOAD_CHECKS = 2                    # uploads of a notebook's usual size read and checked at once
LARGE_UPLOAD_BYTES = 2 * 2**20        # a larger file (a notebook with big outputs, or a hostile one up to the cap)
LARGE_UPLOAD_CHECKS = 1               # is checked one at a time, never in the usual files' turns
UPLOAD_WAIT_SECONDS = 30.0           # an upload waiting longer for its turn is refused as busy, using no attempt
BUSY_RETRY_SECONDS = 10              # then the student is asked to upload again after this (said, and in Retry-After)


class UploadsBusy(Exception):
    """Every upload checker stayed busy for UPLOAD_WAIT_SECONDS."""


@student_page
@released_assignment
async def assignment(request: Request, session, name: str):
    view = await run_in_threadpool(portal_of(request).assignment_view, session.student_id, name)
    return page("assignment.html", session=session, title=name, a=view, notice=notice_of(request),
                zone=portal_of(request).zone)


@student_page
@released_assignment
async def upload(request: Request, session, name: str):
    """An upload is refused before its body is parsed or checked when the student may not upload now (the policy,
    a wait after refused files, another of their uploads being checked); then checked, one at a time per
    student."""
    portal, student, back = portal_of(request), session.student_id, (f"/assignments/{name}", "back")
    wait = portal.gate.wait_seconds(student)
    if wait > 0:
        return await unread(request, message(
            "Wait before uploading", f"The last file you uploaded could not be graded, so your next upload is "
            f"checked in {math.ceil(wait)} s (the wait doubles after each such file in a row). This upload was not "
            f"checked and used no attempt.", 429, session, back), wait)
    refusal = await run_in_threadpool(portal.upload_refusal, student, name)
    if refusal:
        return await unread(request, message("Upload not accepted", f"Not accepted: {refusal}.", 403, session, back))
    if not portal.gate.enter(student):
        return await unread(request, message(
            "Wait before uploading", "Your previous upload is still being checked; this one was not checked and "
            "used no attempt.", 429, session, back), 5)
    refused = None
    try:
        outcome, detail = await read_and_check(request, session, name)
        refused = outcome == "unreadable" if outcome in ("unreadable", "queued", "again") else None
    except BodyTooLarge:
        refused = True
        raise
    finally:
        portal.gate.leave(student, refused)
    if isinstance(outcome, Response):
        return outcome
    if outcome == "busy":
        answer = message("Busy", f"The portal is checking many uploads at once; upload again in {BUSY_RETRY_SECONDS} s "
                         f"(this one was not accepted and used no attempt).", 503, session, back)
        answer.headers["retry-after"] = str(BUSY_RETRY_SECONDS)
        return answer
    if outcome == "queued":
        return RedirectResponse(f"/attempts/{detail}", status_code=303)
    if outcome == "again":
        return RedirectResponse(f"/attempts/{detail}?again=1", status_code=303)
    status = 403 if outcome == "refused" else 400
    title = "Upload not accepted" if outcome == "refused" else "Not a notebook we can grade"
    return message(title, f"Not accepted: {detail}.", status, session, back)


async def read_and_check(request: Request, session, name: str):
    """(outcome, detail) of accept_upload, or (a response, None) for a form without its token or file."""
    form = await request.form(max_files=1, max_fields=4)
    if not auth.csrf_ok(session, form.get("csrf")):
        return message("Form expired", "Reload the page and upload again.", 403, session), None
    file = form.get("notebook")
    if not isinstance(file, UploadFile):
        return message("No file", "Choose your notebook (.ipynb) and upload it.", 400, session,
                       (f"/assignments/{name}", "back")), None
    try:
        return await checked_upload(request, session.student_id, name, file, auth.recorded_door(session))
    except UploadsBusy:
        return "busy", None


async def unread(request: Request, response: Response, retry_after: float | None = None) -> Response:
    """An answer to an upload whose body is not parsed, hashed nor checked: its bytes are only dropped
    (middleware.drop_unread: by the server as they come after this answer, where it can), so that the client reads
    this answer instead of a connection reset; a wait is said in Retry-After too."""
    await drop_unread(request.scope, request.receive)
    if retry_after is not None:
        response.headers["retry-after"] = str(math.ceil(retry_after))
    return response


async def checked_upload(request: Request, student: str, name: str, file: UploadFile, door: str = "portal"):
    """Read and check the upload in a worker thread, at most UPLOAD_CHECKS at once, and a file over
    LARGE_UPLOAD_BYTES in a turn of its own (LARGE_UPLOAD_CHECKS): waiting uploads stay in their spooled files, one
    upload's checks never run on the event loop, and files up to the cap (20 MB, seconds to scan on a loaded
    machine) never keep a class's usual notebooks waiting (at most 2 x 2 MB + 20 MB in memory)."""
    checkers = request.app.state.checkers                  # per event loop (tests run several)
    turns = checkers.setdefault(asyncio.get_running_loop(), {False: asyncio.Semaphore(UPLOAD_CHECKS),
                                                              True: asyncio.Semaphore(LARGE_UPLOAD_CHECKS)})
    checking = turns[file.size is None or file.size > LARGE_UPLOAD_BYTES]
    try:
        await asyncio.wait_for(checking.acquire(), UPLOAD_WAIT_SECONDS)
    except asyncio.TimeoutError:
        raise UploadsBusy() from None
    try:
        data = await file.read(portal_of(request).upload_bytes + 1)
        return await run_in_threadpool(portal_of(request).accept_upload, student, name, file.filename or "", data,
                                       door)
    finally:
        checking.release()


@own_attempt(status=True)
async def attempt(request: Request, session, found, status):
    return page("attempt.html", session=session, title=f"Attempt {found.number}", attempt=found, s=status,
                again=request.query_params.get("again") == "1", zone=portal_of(request).zone)


async def attempt_status(request: Request):
    """The live status as JSON (the page's script asks for it): errors as JSON too. With `?since=<status>` (the
    status the page shows) the request is held until the attempt's status changes or queue.hold_seconds pass
    (long polling), then answered with `poll_seconds` 0: ask again at once. A request the student's or the
    portal's bound on held requests leaves unheld is answered at once with the plain polling interval."""
    session = await current(request)
    if session is None or session.student_id is None:
        return JSONResponse({"error": "not signed in"}, status_code=403)
    portal, since = portal_of(request), request.query_params.get("since")
    held = since in WAITING
    with portal.watch.hold(session.student_id, request.path_params["attempt_id"]) if held \
            else contextlib.nullcontext() as change:                    # before the read: no change is missed
        own = await own_status(request, session)
        if own is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        found, status = own
        if held and found.status == since:
            if change is None:                           # past the bounds on held requests: a plain poll
                return JSONResponse(status)
            if not await changed_in_time(request, change, queue.hold_seconds(found.status)):
                return Response(status_code=204)                           # the client went away
            own = await own_status(request, session)
            status = own[1] if own is not None else await run_in_threadpool(portal.status, found)
    return JSONResponse({**status, "poll_seconds": 0} if held else status)


async def attempt_events(request: Request):
    """The live status as server-sent events (the page's script follows it with an EventSource): the status now,
    then again at each change and after queue.hold_seconds unchanged (the jobs ahead it shows), on one request for
    the whole wait instead of one per change; the stream ends after a finished status. A stream past the student's
    or the portal's bound on held requests gets the status once, with the plain polling interval as the
    EventSource's retry (it connects again then), as a status request past them is a plain poll."""
    session = await current(request)
    if session is None or session.student_id is None:
        return JSONResponse({"error": "not signed in"}, status_code=403)
    attempt_id = attempt_id_of(request)
    if attempt_id is None:
        return JSONResponse({"error": "not found"}, status_code=404)
    return StatusEvents(request, session.student_id, attempt_id)


class StatusEvents:
    """The response of attempt_events: an ASGI app that holds its place in the portal's StatusWatch for as long
    as it streams, entered before each read so that no change is missed, and left when the client goes away."""

    def __init__(self, request: Request, student: str, attempt_id: int):
        self.request, self.student, self.attempt_id = request, student, attempt_id

    async def __call__(self, scope, receive, send) -> None:
        portal, request, attempt_id = portal_of(self.request), self.request, self.attempt_id
        cookie, started = request.cookies.get(COOKIE), False
        with portal.watch.hold(self.student, attempt_id) as change:
            while True:
                if change is not None:
                    change.clear()                                 # a change from now on sets it again
                own = await run_in_threadpool(portal.signed_in_status, cookie, attempt_id,
                                              None if started else self.student)    # the route checked it just now
                if own is None:                         # not theirs, or the session ended (revoked, signed out)
                    break
                found, status = own
                if not started:
                    await send({"type": "http.response.start", "status": 200, "headers": EVENT_HEADERS})
                    started = True
                waiting = found.status in WAITING
                if change is None or not waiting:             # past the bounds, or nothing more to follow
                    retry = status["poll_seconds"] if waiting else None
                    return await send({"type": "http.response.body", "body": event(status, retry)})
                await send({"type": "http.response.body", "body": event(status), "more_body": True})
                if not await changed_in_time(request, change, queue.hold_seconds(found.status)):
                    return                                                          # the client went away
                if portal.watch.closed:                      # the server stops: the EventSource connects again
                    return await send({"type": "http.response.body", "body": b"retry: 2000\n\n"})
        if started:
            await send({"type": "http.response.body", "body": b""})
        else:
            await JSONResponse({"error": "not found"}, status_code=404)(scope, receive, send)


EVENT_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-store"),
                 (b"x-accel-buffering", b"no")]                # a proxy (nginx) passes each event on at once


def event(status: dict, retry_seconds: float | None = None) -> bytes:
    """One server-sent event carrying the status as JSON; `retry_seconds`: when the EventSource connects again
    after this stream ends (past the bounds on held requests: the plain polling interval)."""
    retry = f"retry: {math.ceil(retry_seconds * 1000)}\n" if retry_seconds is not None else ""
    return f"{retry}data: {json.dumps(status, separators=(',', ':'))}\n\n".encode()


async def own_status(request: Request, session):
    """(the student's own attempt, its live status) in one turn of the thread pool; None: not found."""
    attempt_id = attempt_id_of(request)
    if attempt_id is None:
        return None
    return await run_in_threadpool(portal_of(request).own_status, session.student_id, attempt_id)


async def changed_in_time(request: Request, change: asyncio.Event, seconds: float) -> bool:
    """Wait for the change, at most `seconds`; False when the client went away first (its slot is freed)."""
    changed, gone = asyncio.ensure_future(change.wait()), asyncio.ensure_future(disconnected(request.receive))
    done, pending = await asyncio.wait({changed, gone}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return gone not in done


async def disconnected(receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


@own_attempt
async def attempt_feedback(request: Request, session, found):
    if found.status not in FINISHED:
        return not_found(session)
    result, level, inputs, points, shown = await run_in_threadpool(portal_of(request).feedback, found)
    back = f"/assignments/{found.assignment}"
    if level == "none":
        return message("Feedback after the deadline", "Your notebook was graded. Your instructor shows the score "
                       "and the feedback after the deadline.", 200, session, (back, "back"))
    if not points:                       # pass or fail per test, nothing counted: the portal's own page
        return page("pass_fail.html", session=session, title=f"Attempt {found.number}", back=back,
                    result=pages.visible_result(result, level, inputs, points=False))
    return HTMLResponse(pages.feedback_page(result, level, inputs, back, **shown),
                        headers={"content-security-policy": pages.REPORT_CSP})


@own_attempt
async def attempt_notebook(request: Request, session, found):
    path = uploads.path(portal_of(request).course, found.student_id, found.assignment, found.sha256)
    data = await run_in_threadpool(path.read_bytes)
    return Response(data, media_type="application/x-ipynb+json", headers={
        "content-disposition": f'attachment; filename="{found.notebook}-attempt-{found.number}.ipynb"'})
