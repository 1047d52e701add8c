"""What every handler answers with (pages, messages, redirects), who is asking (the session, the CSRF checks), and
the decorators that let a handler run only for whom it serves: every student URL finds its data through the
signed-in student (`student_page`, `own_attempt`), so another student's attempt, feedback or file is simply not
found; every instructor URL needs the instructor's session (`instructor_page`, `instructor_form`, which also checks
the CSRF token)."""
from __future__ import annotations

import functools
import urllib.parse

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from posenc_autograder.portal import auth, pages
from posenc_autograder.portal.service import Portal

COOKIE, PRESESSION = auth.SESSION_COOKIE, "portal_presession"
MAX_ID = 2**63 - 1                   # the largest id a database integer column holds
NOTICES = {"policy-saved": "The policy was saved.", "extension-saved": "The extension was saved.",
           "link-revoked": "The sign-in link was revoked; the student's open sessions have ended."}


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
    presession = request.cookies.get(PRESESSION)      # the expected token (double submit)
    return bool(presession) and auth.tokens_match(str(presession), form.get("csrf"))


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


def own_attempt(handler=None, *, status: bool = False):
    """handler(request, session, attempt) for one of the signed-in student's own attempts (with `status`:
    handler(request, session, attempt, its live status)); another's is not found, anyone not signed in is told to
    sign in. Who asks, the attempt and its status are read on one database session, in one turn of the thread
    pool (a page a student reloads as their attempt is graded)."""
    def decorate(handler):
        @functools.wraps(handler)
        async def wrapped(request: Request):
            session, found, shown = await run_in_threadpool(portal_of(request).signed_in_attempt,
                                                            request.cookies.get(COOKIE), attempt_id_of(request),
                                                            status)
            if session is None or session.student_id is None:
                return not_signed_in()
            if found is None:
                return not_found(session)
            return await (handler(request, session, found, shown) if status else handler(request, session, found))
        return wrapped
    return decorate if handler is None else decorate(handler)


def attempt_id_of(request: Request) -> int | None:
    """The attempt id in the URL, None when no database integer holds it (no such attempt)."""
    attempt_id = request.path_params["attempt_id"]
    return attempt_id if 0 < attempt_id <= MAX_ID else None


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
