"""Signing in and out, for everyone who arrives: the home page, a student's sign-in link (asking first before it
replaces another account's session), JupyterHub's door, the instructor's secret."""
from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse

from posenc_autograder.portal import auth, hub
from posenc_autograder.portal.web.answers import (
    COOKIE,
    PRESESSION,
    client_of,
    current,
    message,
    not_found,
    page,
    portal_of,
    presession_ok,
    set_presession,
    signed_in_redirect,
)


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
                assignments=views, zone=portal_of(request).zone)


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
    assert cookie is not None                                    # "ok" comes with the session's cookie
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
    assert cookie is not None                                    # "ok" comes with the session's cookie
    response = signed_in_redirect(cookie, request, "/instructor")
    response.delete_cookie(PRESESSION, path="/instructor")
    return response
