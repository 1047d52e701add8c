"""The tool's URLs: `GET|POST /lti/login`, `POST /lti/launch`, `GET /lti/jwks`, `GET /lti/config` (fixed: platforms
are registered with them), the deep-linking choice, and the instructor's page of LMS courses and unsent scores.

A refused login or launch is a 4xx page that says why and sets no session. /lti/launch is the one cross-site POST
the portal takes without its CSRF token: the state cookie of the login this browser started stands in for it."""
from __future__ import annotations

from sqlalchemy import select, update
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.routing import Route

from posenc_autograder.portal import auth, pages
from posenc_autograder.portal.lti import registration
from posenc_autograder.portal.lti.adapter import LaunchRefused
from posenc_autograder.portal.lti.models import LtiContext, LtiScore, LtiUser

FIELDS = 32                                      # form fields a login or launch may carry


def tool_of(request: Request):
    return request.app.state.portal.lti


def secure(request: Request) -> bool:
    return request.url.scheme == "https"


def public_url(request: Request, path: str) -> str:
    """This portal's address as the browser sees it (behind a proxy: its forwarded scheme and host)."""
    return str(request.base_url).rstrip("/") + path


def plain(title: str, text: str, status: int, session=None, headers: dict | None = None) -> HTMLResponse:
    return HTMLResponse(pages.render("message.html", title=title, text=text, link=None,
                                     signed_in=session is not None, csrf=session.csrf if session else ""),
                        status_code=status, headers=headers)


def refused(exc: LaunchRefused) -> HTMLResponse:
    return plain("Not signed in", f"The LMS's sign-in was refused: {exc.reason}.", exc.status)


async def params_of(request: Request) -> dict[str, str]:
    """The query's parameters, and a form's over them (a login may come either way)."""
    found = dict(request.query_params)
    if request.method == "POST":
        form = await request.form(max_files=0, max_fields=FIELDS)
        found.update({k: v for k, v in form.items() if isinstance(v, str)})
    return found


async def login(request: Request):
    params = await params_of(request)
    try:
        return await run_in_threadpool(tool_of(request).login, params, dict(request.cookies), secure(request),
                                       public_url(request, registration.LAUNCH))
    except LaunchRefused as exc:
        return refused(exc)


async def launch(request: Request):
    form = await request.form(max_files=0, max_fields=FIELDS)
    params = {k: v for k, v in form.items() if isinstance(v, str)}
    tool = tool_of(request)
    try:
        landing = await run_in_threadpool(tool.launch, params, dict(request.cookies), secure(request))
    except LaunchRefused as exc:
        return refused(exc)
    await run_in_threadpool(request.app.state.portal.sign_out, request.cookies.get(auth.SESSION_COOKIE))  # replaced
    if landing.deep_link is not None:
        session = await run_in_threadpool(request.app.state.portal.session, landing.cookie)
        if landing.chosen is not None:              # the request names its assignment: no choice to make
            response = await returned_choice(request, session, landing.deep_link, landing.cookie, landing.chosen)
        else:
            response = HTMLResponse(pages.render("lti_pick.html", title="Choose an assignment", signed_in=True,
                                                 csrf=session.csrf, choice=landing.deep_link,
                                                 assignments=tool.assignments))
    else:
        response = RedirectResponse(landing.to, status_code=303)
    return pages.set_session_cookie(response, landing.cookie, secure(request), embeddable=True)


async def jwks(request: Request):
    return JSONResponse(await run_in_threadpool(tool_of(request).jwks))


async def config(request: Request):
    return JSONResponse(registration.canvas_configuration(public_url(request, "")))


async def instructor_session(request: Request):
    session = await run_in_threadpool(request.app.state.portal.session, request.cookies.get(auth.SESSION_COOKIE))
    return session if session is not None and session.instructor else None


async def instructor_post(request: Request):
    """The instructor's session and form, or None when either is missing (no session, wrong CSRF token)."""
    session = await instructor_session(request)
    form = await request.form(max_files=0, max_fields=8)
    return (session, form) if session is not None and auth.csrf_ok(session, form.get("csrf")) else (None, form)


async def deep_link(request: Request):
    """The instructor's choice, returned to the platform as a signed LtiDeepLinkingResponse: a form posted to the
    platform's return URL, which this page's Content-Security-Policy allows (form-action) and no other."""
    session, form = await instructor_post(request)
    if session is None:
        return plain("Instructor only", "Open the tool from the LMS as an instructor and choose again.", 403)
    return await returned_choice(request, session, str(form.get("choice", "")),
                                 request.cookies.get(auth.SESSION_COOKIE), str(form.get("assignment", "")))


async def returned_choice(request: Request, session, choice: str, cookie: str | None, assignment: str):
    """The page that posts the signed deep-linking response for `assignment` to the platform's return URL."""
    try:
        return_url, token = await run_in_threadpool(tool_of(request).deep_link_response, choice, cookie, assignment,
                                                    public_url(request, ""))
    except LaunchRefused as exc:
        return plain("Not added", f"Not added: {exc.reason}.", exc.status, session)
    target = registration.origin(return_url)
    if target is None:
        return plain("Not added", "Not added: the LMS gave no address to return to.", 400, session)
    policy = pages.PORTAL_CSP.replace("form-action 'self'", f"form-action 'self' {target}")
    return HTMLResponse(pages.render("lti_return.html", title="Back to the LMS", signed_in=True, csrf=session.csrf,
                                     assignment=assignment, return_url=return_url, jwt=token),
                        headers={"content-security-policy": policy})


async def status_page(request: Request):
    session = await instructor_session(request)
    if session is None:
        return plain("Instructor only", "Sign in as the instructor first.", 403)
    tool = tool_of(request)

    def read():
        with tool.sessions() as db:
            contexts = list(db.execute(select(LtiContext).order_by(LtiContext.id)).scalars())
            members = list(db.execute(select(LtiUser).order_by(LtiUser.student_id)).scalars())
        return contexts, members, tool.outbox.unsent()
    contexts, members, unsent = await run_in_threadpool(read)
    return HTMLResponse(pages.render("lti_status.html", title="LMS", signed_in=True, csrf=session.csrf,
                                     contexts=contexts, members=members, unsent=unsent))


async def read_rosters(request: Request):
    session, _ = await instructor_post(request)
    if session is None:
        return plain("Form expired", "Reload the page and try again.", 403)
    await run_in_threadpool(tool_of(request).sync_roster)
    return RedirectResponse("/instructor/lti", status_code=303)


async def send_scores(request: Request):
    session, _ = await instructor_post(request)
    if session is None:
        return plain("Form expired", "Reload the page and try again.", 403)
    outbox = tool_of(request).outbox

    def send_now():
        with outbox.sessions() as db:
            db.execute(update(LtiScore).where(LtiScore.state == "pending").values(next_try=outbox.now()))
            db.commit()
        outbox.sync()
        return outbox.send_due()
    await run_in_threadpool(send_now)
    return RedirectResponse("/instructor/lti", status_code=303)


ROUTES = [
    Route(registration.LOGIN, login, methods=["GET", "POST"]),
    Route(registration.LAUNCH, launch, methods=["POST"]),
    Route(registration.JWKS, jwks),
    Route(registration.CONFIG, config),
    Route("/lti/deep-link", deep_link, methods=["POST"]),
    Route("/instructor/lti", status_page),
    Route("/instructor/lti/roster", read_rosters, methods=["POST"]),
    Route("/instructor/lti/send", send_scores, methods=["POST"]),
]
