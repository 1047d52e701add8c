"""The portal's URLs (Starlette), as plain module-level handlers reading the portal from the app's state.
Every student URL finds its data through the signed-in student (the `student_page` and `own_attempt`
decorators), so another student's attempt, feedback or file is simply not found; every instructor URL needs
the instructor's session (`instructor_page`, `instructor_form`, which also checks the CSRF token); request
bodies are capped, and cut off when too slow, while they stream in (Guard)."""
from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import math
import urllib.parse
import weakref

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from posenc_autograder import settings
from posenc_autograder.intake import attempts as record_of_attempts
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.portal import auth, hub, pages, queue, uploads
from posenc_autograder.portal import policy as rules
from posenc_autograder.portal.lti import routes as lti_routes
from posenc_autograder.portal.models import FINISHED, WAITING
from posenc_autograder.portal.service import Portal
from posenc_autograder.orchestration.class_files import rebuild_class_files
from posenc_autograder.reports import dashboard

COOKIE, PRESESSION = auth.SESSION_COOKIE, "portal_presession"
FORM_BYTES = 64_000                           # any request but an upload
ENVELOPE_BYTES = 64_000                               # the multipart envelope around an uploaded notebook
UPLOAD_BYTES = uploads.MAX_UPLOAD_BYTES + ENVELOPE_BYTES   # the default course's; Guard is given its course's
UPLOAD_SUFFIX = "/upload"
log = logging.getLogger(__name__)


UPLOAD_CHECKS = 2                    # uploads read and checked at once (each up to the cap in memory)
UPLOAD_WAIT_SECONDS = 30.0           # an upload waiting longer for its turn is refused as busy, using no attempt


MAX_ID = 2**63 - 1                   # the largest id a database integer column holds
BODY_IDLE_SECONDS = 30.0             # a request body that stalls this long is cut off (slow clients)
BODY_SECONDS = {True: 600.0, False: 30.0}       # a whole body, upload or not (20 MB at 0.3 MB/s fits)
REFUSED_BODY_BYTES = 100_000_000     # a body refused on its length is received and dropped up to this size


NOTICES = {"policy-saved": "The policy was saved.", "extension-saved": "The extension was saved.",
           "link-revoked": "The sign-in link was revoked; the student's open sessions have ended."}


class BodyTooLarge(Exception):
    pass


class RequestTimeout(Exception):
    """The client sent its request body too slowly."""


class UploadsBusy(Exception):
    """Every upload checker stayed busy for UPLOAD_WAIT_SECONDS."""


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

        async def with_headers(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = {**message, "headers": secure_headers(message.get("headers", []), self.frame_ancestors())}
            await send(message)

        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return await refuse_unread(with_headers, receive, declared, uploading, self.upload_bytes)
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


def secure_headers(headers, ancestors: list[str] = ()) -> list:
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


async def send_page(send, status: int, title: str, text: str, more: bool = False):
    """A plain page, the connection closed after it; `more`: the response is left open (the caller ends it)."""
    body = pages.render("message.html", title=title, text=text, link=None, signed_in=False, csrf="").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": more})


async def refuse_unread(send, receive, declared: bytes, uploading: bool, upload_bytes: int):
    """413 for a body over the cap by its Content-Length, none of it kept. A client sends its whole body before it
    reads the answer (browsers, most libraries), and a server that closes on unread bytes resets the connection,
    losing the page: so the page goes out first, then the body is received and dropped, up to REFUSED_BODY_BYTES
    and within the usual time limits; a body declared larger, or sent too slowly, is cut off after the page."""
    await send_page(send, 413, "File too large", _too_large_text(upload_bytes), more=True)
    if declared.isdigit() and int(declared) <= REFUSED_BODY_BYTES:
        dropping = bounded(receive, REFUSED_BODY_BYTES, BODY_SECONDS[uploading])
        with contextlib.suppress(BodyTooLarge, RequestTimeout):
            while (await dropping()).get("more_body", False):
                pass
    await send({"type": "http.response.body", "body": b""})


def _too_large_text(upload_bytes: int) -> str:
    return (f"The file is larger than the {settings.size(upload_bytes)} accepted. Clear the outputs "
            f"(Kernel > Restart & Clear Output), save, and upload it again.")


# --- answers every handler uses ------------------------------------------------------------------------

def portal_of(request: Request) -> Portal:
    return request.app.state.portal


def page(name: str, status: int = 200, session=None, **context) -> HTMLResponse:
    return HTMLResponse(pages.render(name, signed_in=session is not None, csrf=session.csrf if session else "",
                                     **context), status_code=status)


def message(title: str, text: str, status: int, session=None, link: tuple[str, str] | None = None):
    return page("message.html", status, session=session, title=title, text=text, link=link)


def not_signed_in(session=None):
    return message("Not signed in", "Open the sign-in link your instructor sent you.", 403, session)


def not_found(session=None):
    return message("Not found", "There is nothing here for you.", 404, session, ("/", "your assignments"))


def instructor_only():
    return message("Instructor only", "Sign in as the instructor first.", 403, None, ("/instructor", "sign in"))


def client_of(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def notice_of(request: Request) -> str:
    """The sentence for a notice code in the URL; any other text there is not shown (no one can make the portal
    say their words through a link)."""
    return NOTICES.get(request.query_params.get("notice", ""), "")


def saved(notice: str) -> RedirectResponse:
    return RedirectResponse("/instructor?" + urllib.parse.urlencode({"notice": notice}), status_code=303)


def signed_in_redirect(cookie: str, request: Request, to: str) -> RedirectResponse:
    return pages.set_session_cookie(RedirectResponse(to, status_code=303), cookie, request.url.scheme == "https")


def set_presession(response: Response, request: Request, presession: str, path: str) -> Response:
    """The double-submit token of a form shown before any session, as a SameSite=Strict cookie."""
    response.set_cookie(PRESESSION, presession, httponly=True, samesite="strict", path=path,
                        secure=request.url.scheme == "https")
    return response


def presession_ok(request: Request, form) -> bool:
    presession = request.cookies.get(PRESESSION)
    return bool(presession) and auth.csrf_ok(_Token(presession), form.get("csrf"))


async def current(request: Request):
    return await run_in_threadpool(portal_of(request).session, request.cookies.get(COOKIE))


# --- who may: decorators the handlers are wrapped in --------------------------------------------------

def student_page(handler):
    """handler(request, session) for a signed-in student; anyone else is told to sign in."""
    @functools.wraps(handler)
    async def wrapped(request: Request):
        session = await current(request)
        if session is None or session.student_id is None:
            return not_signed_in()
        return await handler(request, session)
    return wrapped


def released_assignment(handler):
    """handler(request, session, name) for an assignment the portal offers; any other name is not found."""
    @functools.wraps(handler)
    async def wrapped(request: Request, session):
        name = request.path_params["assignment"]
        if name not in portal_of(request).assignments:
            return not_found(session)
        return await handler(request, session, name)
    return wrapped


def own_attempt(handler):
    """handler(request, session, attempt) for one of the student's own attempts; another's is not found."""
    @functools.wraps(handler)
    async def wrapped(request: Request, session):
        found = await find_own_attempt(request, session)
        return not_found(session) if found is None else await handler(request, session, found)
    return wrapped


async def find_own_attempt(request: Request, session):
    attempt_id = request.path_params["attempt_id"]
    if not 0 < attempt_id <= MAX_ID:                     # no database integer holds it: no such attempt
        return None
    return await run_in_threadpool(portal_of(request).attempt, session.student_id, attempt_id)


async def instructor_session(request: Request):
    session = await current(request)
    return session if session is not None and session.instructor else None


def instructor_page(handler):
    """handler(request, session) for the instructor; anyone else is told to sign in as the instructor."""
    @functools.wraps(handler)
    async def wrapped(request: Request):
        session = await instructor_session(request)
        return instructor_only() if session is None else await handler(request, session)
    return wrapped


def instructor_form(handler):
    """handler(request, form) for a form the instructor sent with the session's CSRF token."""
    @functools.wraps(handler)
    async def wrapped(request: Request):
        session = await instructor_session(request)
        if session is None:
            return instructor_only()
        form = await request.form(max_files=0, max_fields=32)
        if not auth.csrf_ok(session, form.get("csrf")):
            return message("Form expired", "Reload the page and try again.", 403, session)
        return await handler(request, form)
    return wrapped


# --- students ------------------------------------------------------------------------------------------

async def home(request: Request):
    session = await current(request)
    if session is not None and session.instructor:
        return RedirectResponse("/instructor", status_code=303)
    if session is None and portal_of(request).hub is not None:
        return RedirectResponse("/hub/login", status_code=303)
    if session is None:
        return page("welcome.html", title="Sign in")
    views = await run_in_threadpool(portal_of(request).overview, session.student_id)
    return page("home.html", session=session, title="Your assignments", student=session.student_id,
                assignments=views)


async def sign_in(request: Request):
    """GET signs in at once, unless the browser holds another account's session: then a page asks, and only its
    form (POST, double-submit token from a SameSite=Strict cookie) replaces the session, so a link opened from
    another site cannot silently swap accounts (login CSRF)."""
    token, session = request.path_params["token"], await current(request)
    confirmed = request.method == "POST"
    if confirmed and not presession_ok(request, await request.form(max_files=0, max_fields=4)):
        return message("Form expired", "Open your sign-in link again.", 403)
    outcome, cookie = await run_in_threadpool(portal_of(request).sign_in, token, client_of(request), session,
                                              confirmed)
    if outcome == "blocked":
        return message("Too many attempts", "Too many sign-in attempts failed with this link or from here; wait "
                       "a quarter of an hour and open your link again.", 429)
    if outcome == "invalid":
        return message("Link not valid", "This sign-in link is not valid (mistyped, replaced or revoked). Ask "
                       "your instructor for a new one.", 403)
    if outcome == "confirm":
        presession = auth.new_secret()
        return set_presession(page("confirm_sign_in.html", session=session, title="Switch account?",
                                   presession=presession, who="the instructor" if session.instructor
                                   else session.student_id), request, presession, "/s")
    response = signed_in_redirect(cookie, request, "/")
    if confirmed:
        await run_in_threadpool(portal_of(request).sign_out, request.cookies.get(COOKIE))   # the replaced session
        response.delete_cookie(PRESESSION, path="/s")
    return response


async def hub_login(request: Request):
    """Sign in through JupyterHub (the portal as its service): to the hub's authorisation page, the OAuth state kept
    in this browser's cookie."""
    door = portal_of(request).hub
    if door is None:
        return not_found()
    to, state = door.start(request.query_params.get("next", "/"))
    if to.startswith("/"):                 # the hub's own path on this host: absolute, so it keeps no service prefix
        to = f"{request.url.scheme}://{request.url.netloc}{to}"
    response = RedirectResponse(to, status_code=302)
    response.set_cookie(hub.STATE_COOKIE, state, max_age=hub.STATE_SECONDS, httponly=True, samesite="lax",
                        secure=request.url.scheme == "https", path="/")
    return response


async def hub_callback(request: Request):
    """The hub's answer: a portal session for the hub user (a student, or the instructor by hub group)."""
    door = portal_of(request).hub
    if door is None:
        return not_found()
    cookie, to = await run_in_threadpool(door.finish, request.query_params.get("code", ""),
                                         request.query_params.get("state", ""), request.cookies.get(hub.STATE_COOKIE))
    if cookie is None:
        return message("Not signed in", f"Not signed in: {to}.", 403)
    response = signed_in_redirect(cookie, request, to)
    response.delete_cookie(hub.STATE_COOKIE, path="/")
    return response


async def sign_out(request: Request):
    session = await current(request)
    form = await request.form(max_files=0, max_fields=4)
    if not auth.csrf_ok(session, form.get("csrf")):
        return message("Form expired", "Reload the page and try again.", 403, session)
    await run_in_threadpool(portal_of(request).sign_out, request.cookies.get(COOKIE))
    response = message("Signed out", "You are signed out. Open your sign-in link to come back.", 200)
    response.delete_cookie(COOKIE, path="/")
    return response


@student_page
@released_assignment
async def assignment(request: Request, session, name: str):
    view = await run_in_threadpool(portal_of(request).assignment_view, session.student_id, name)
    return page("assignment.html", session=session, title=name, a=view, notice=notice_of(request))


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
        return message("Busy", "The portal is checking many uploads at once; upload again in a minute (this one "
                       "was not accepted and used no attempt).", 503, session, back)
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
    """An answer to an upload whose body is not parsed, hashed nor checked: its bytes are only received and
    dropped (Guard still caps them), so that the client reads this answer instead of a connection reset; a wait
    is said in Retry-After too."""
    with contextlib.suppress(ClientDisconnect):
        async for _ in request.stream():
            pass
    if retry_after is not None:
        response.headers["retry-after"] = str(math.ceil(retry_after))
    return response


async def checked_upload(request: Request, student: str, name: str, file: UploadFile, door: str = "portal"):
    """Read and check the upload in a worker thread, at most UPLOAD_CHECKS at once: waiting uploads stay in their
    spooled files, and one upload's checks never run on the event loop."""
    checkers = request.app.state.checkers                  # per event loop (tests run several)
    checking = checkers.setdefault(asyncio.get_running_loop(), asyncio.Semaphore(UPLOAD_CHECKS))
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


@student_page
@own_attempt
async def attempt(request: Request, session, found):
    status = await run_in_threadpool(portal_of(request).status, found)
    return page("attempt.html", session=session, title=f"Attempt {found.number}", attempt=found, s=status,
                again=request.query_params.get("again") == "1")


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
        found = await find_own_attempt(request, session)
        if found is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        if held and found.status == since:
            if change is None:                           # past the bounds on held requests: a plain poll
                return JSONResponse(await run_in_threadpool(portal.status, found))
            if not await changed_in_time(request, change, queue.hold_seconds(since)):
                return Response(status_code=204)                           # the client went away
            found = await find_own_attempt(request, session) or found
    status = await run_in_threadpool(portal.status, found)
    return JSONResponse({**status, "poll_seconds": 0} if held else status)


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


@student_page
@own_attempt
async def attempt_feedback(request: Request, session, found):
    if found.status not in FINISHED:
        return not_found(session)
    result, level, inputs, points = await run_in_threadpool(portal_of(request).feedback, found)
    back = f"/assignments/{found.assignment}"
    if level == "none":
        return message("Feedback after the deadline", "Your notebook was graded. Your instructor shows the score "
                       "and the feedback after the deadline.", 200, session, (back, "back"))
    if not points:                       # pass or fail per test, nothing counted: the portal's own page
        return page("pass_fail.html", session=session, title=f"Attempt {found.number}", back=back,
                    result=pages.visible_result(result, level, inputs))
    return HTMLResponse(pages.feedback_page(result, level, inputs, back),
                        headers={"content-security-policy": pages.REPORT_CSP})


@student_page
@own_attempt
async def attempt_notebook(request: Request, session, found):
    path = uploads.path(portal_of(request).course, found.student_id, found.assignment, found.sha256)
    data = await run_in_threadpool(path.read_bytes)
    return Response(data, media_type="application/x-ipynb+json", headers={
        "content-disposition": f'attachment; filename="{found.notebook}-attempt-{found.number}.ipynb"'})


# --- the instructor ------------------------------------------------------------------------------------

async def instructor(request: Request):
    session = await instructor_session(request)
    if session is None:
        presession = auth.new_secret()
        return set_presession(page("instructor_signin.html", title="Instructor sign-in", presession=presession),
                              request, presession, "/instructor")
    portal = portal_of(request)
    progress = await run_in_threadpool(portal.progress)
    counted = record_of_attempts.RULES[settings.load(portal.course).course.counted_attempt]
    return page("instructor.html", session=session, title="Instructor", p=progress, assignments=portal.assignments,
                notice=notice_of(request), counted=counted, levels=rules.FEEDBACK_LEVELS,
                limit_seconds=portal.worker.limits.notebook_seconds)


async def instructor_sign_in(request: Request):
    form = await request.form(max_files=0, max_fields=4)
    if not presession_ok(request, form):
        return message("Form expired", "Reload the sign-in page and try again.", 403)
    outcome, cookie = await run_in_threadpool(portal_of(request).instructor_sign_in, form.get("secret"),
                                              client_of(request))
    if outcome == "blocked":
        return message("Too many attempts", "Too many sign-in attempts failed from here; wait a quarter of an "
                       "hour.", 429)
    if outcome == "invalid":
        return message("Wrong secret", "That is not the instructor's secret.", 403, None, ("/instructor", "try again"))
    response = signed_in_redirect(cookie, request, "/instructor")
    response.delete_cookie(PRESESSION, path="/instructor")
    return response


@instructor_form
async def set_policy(request: Request, form):
    name = request.path_params["assignment"]
    if name not in portal_of(request).assignments:
        return message("Not found", "No such assignment.", 404)
    try:
        values = policy_values(form)
    except ValueError as exc:
        return message("Not saved", f"The policy was not saved: {exc}.", 400, None, ("/instructor", "back"))
    await run_in_threadpool(portal_of(request).set_policy, name, values)
    return saved("policy-saved")


@instructor_form
async def set_extension(request: Request, form):
    portal, name, student = portal_of(request), form.get("assignment"), form.get("student", "")
    try:
        deadline = parse_time(form.get("deadline"), "the extended deadline")
    except ValueError as exc:
        return message("Not saved", f"The extension was not saved: {exc}.", 400, None, ("/instructor", "back"))
    if name not in portal.assignments or not await run_in_threadpool(portal.set_extension, student, name, deadline):
        return message("Not saved", "No such student or assignment.", 400, None, ("/instructor", "back"))
    return saved("extension-saved")


@instructor_form
async def revoke(request: Request, form):
    if not await run_in_threadpool(portal_of(request).revoke, str(form.get("student", ""))):
        return message("Not found", "No such student.", 404, None, ("/instructor", "back"))
    return saved("link-revoked")


@instructor_form
async def new_link(request: Request, form):
    student = str(form.get("student", ""))
    if not is_safe_id(student):
        return message("Not saved", "Not a safe student id.", 400, None, ("/instructor", "back"))
    token = await run_in_threadpool(portal_of(request).new_link, student)
    link = str(request.url_for("sign_in", token=token))
    return message("New sign-in link", f"Send this link to {student} (it is shown once; earlier links of theirs "
                   f"no longer work): {link}", 200, None, ("/instructor", "back"))


async def progress_json(request: Request):
    if await instructor_session(request) is None:
        return JSONResponse({"error": "instructor only"}, status_code=403)
    progress = await run_in_threadpool(portal_of(request).progress)
    return JSONResponse({"counts": progress["counts"], "rows": progress["rows"]})


@instructor_page
async def class_dashboard(request: Request, session):
    page_text = await run_in_threadpool(write_class_files, portal_of(request))
    return HTMLResponse(page_text, headers={"content-security-policy": pages.REPORT_CSP})


async def too_large(request: Request, exc: Exception):
    return message("File too large", _too_large_text(portal_of(request).upload_bytes), 413)


async def too_slow(request: Request, exc: Exception):
    return message("Too slow", "The request arrived too slowly and was cut off; try again.", 408)


ROUTES = [
    Route("/", home),
    Route("/s/{token}", sign_in, name="sign_in", methods=["GET", "POST"]),
    Route("/sign-out", sign_out, methods=["POST"]),
    Route("/hub/login", hub_login),
    Route("/oauth_callback", hub_callback),
    Route("/assignments/{assignment}", assignment),
    Route("/assignments/{assignment}" + UPLOAD_SUFFIX, upload, methods=["POST"]),
    Route("/attempts/{attempt_id:int}", attempt),
    Route("/attempts/{attempt_id:int}/status.json", attempt_status),
    Route("/attempts/{attempt_id:int}/feedback", attempt_feedback),
    Route("/attempts/{attempt_id:int}/notebook", attempt_notebook),
    Route("/instructor", instructor),
    Route("/instructor/sign-in", instructor_sign_in, methods=["POST"]),
    Route("/instructor/policy/{assignment}", set_policy, methods=["POST"]),
    Route("/instructor/extension", set_extension, methods=["POST"]),
    Route("/instructor/revoke", revoke, methods=["POST"]),
    Route("/instructor/link", new_link, methods=["POST"]),
    Route("/instructor/progress.json", progress_json),
    Route("/instructor/dashboard", class_dashboard),
    *lti_routes.ROUTES,
    Mount("/static", StaticFiles(directory=pages.STATIC), name="static"),
]


def create_app(portal: Portal, *, start_worker: bool = True) -> Starlette:
    """The ASGI application on this portal (the handlers read it from the app's state); `start_worker=False`
    serves pages only (tests drive the worker themselves)."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        if start_worker:
            await run_in_threadpool(portal.start)
        try:
            yield
        finally:
            if start_worker:
                await run_in_threadpool(portal.stop)

    app = Starlette(routes=ROUTES, exception_handlers={BodyTooLarge: too_large, RequestTimeout: too_slow},
                    lifespan=lifespan)
    app.state.portal, app.state.checkers = portal, weakref.WeakKeyDictionary()
    app.add_middleware(Guard, upload_bytes=portal.upload_bytes, frame_ancestors=portal.lti.frame_ancestors)
    if portal.hub is not None:                      # outermost: everything inside sees paths without the prefix
        app.add_middleware(hub.Prefixed, prefix=portal.hub.prefix)
    return app


class _Token:
    """Stands for a session in csrf_ok when the expected token is the pre-session cookie (double submit)."""
    def __init__(self, csrf: str):
        self.csrf = csrf


def parse_time(value, what: str) -> dt.datetime | None:
    """A datetime-local field (UTC); empty means none."""
    text = str(value or "").strip()
    if not text:
        return None
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=None, second=0, microsecond=0)
    except ValueError:
        raise ValueError(f"{what} is not a date and time (YYYY-MM-DDTHH:MM)") from None


def _whole(form, key: str, what: str) -> int:
    text = str(form.get(key) or "0").strip()
    if not text.isdigit() or int(text) > 10**6:
        raise ValueError(f"{what} must be a whole number from 0")
    return int(text)


def policy_values(form) -> dict:
    """The policy form, checked (ValueError says what is wrong)."""
    level = form.get("feedback_before")
    if level not in rules.FEEDBACK_LEVELS:
        raise ValueError("choose how much feedback shows")
    values = {"opens_at": parse_time(form.get("opens_at"), "the opening"),
              "deadline": parse_time(form.get("deadline"), "the deadline"),
              "grace_minutes": _whole(form, "grace_minutes", "the grace period"),
              "late_days": _whole(form, "late_days", "the days late uploads are accepted"),
              "max_attempts": _whole(form, "max_attempts", "attempts in all"),
              "max_per_day": _whole(form, "max_per_day", "attempts per day"),
              "min_seconds_between": _whole(form, "min_seconds_between", "the time between attempts"),
              "feedback_before": level,
              "inputs_before_deadline": form.get("inputs_before_deadline") == "on"}
    if form.get("points_before_deadline") is not None:    # a select: a form without it keeps what is saved
        values["points_before_deadline"] = form.get("points_before_deadline") == "yes"
    for key, what in (("notebook_seconds", "the seconds a notebook may run"),
                      ("max_queued", "uploads waiting at once")):
        if form.get(key) is not None:                    # a form without the field keeps what is saved
            values[key] = _whole(form, key, what)
    if values["opens_at"] and values["deadline"] and values["opens_at"] > values["deadline"]:
        raise ValueError("the opening is after the deadline")
    if values.get("notebook_seconds") == 0:
        raise ValueError("a notebook needs some seconds to run")
    return values


def write_class_files(portal: Portal) -> str:
    """grades.csv, the LMS files, the run report and the dashboard, from the stored results, as `make feedback`
    writes them; the dashboard's page."""
    rebuild_class_files(portal.course)
    return dashboard.path(portal.course).read_text()

