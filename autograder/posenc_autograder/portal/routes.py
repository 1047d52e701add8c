"""The portal's URLs (Starlette) and the application: the handlers are module-level functions in web/, grouped by
who uses them (signing_in, students, instructor; portal/lti/ the LMS's), reading the portal from the app's state;
web/middleware.py's Guard wraps them all (body caps and time limits, security headers, plain error pages)."""
from __future__ import annotations

import contextlib
import weakref

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from posenc_autograder.portal import hub, pages
from posenc_autograder.portal.lti import routes as lti_routes
from posenc_autograder.portal.service import Portal
from posenc_autograder.portal.web import instructor as teaching
from posenc_autograder.portal.web import signing_in, students
from posenc_autograder.portal.web.answers import message, portal_of
from posenc_autograder.portal.web.middleware import UPLOAD_SUFFIX, BodyTooLarge, Guard, RequestTimeout, too_large_text

ROUTES = [
    Route("/", signing_in.home),
    Route("/s/{token}", signing_in.sign_in, name="sign_in", methods=["GET", "POST"]),
    Route("/sign-out", signing_in.sign_out, methods=["POST"]),
    Route("/hub/login", signing_in.hub_login),
    Route("/oauth_callback", signing_in.hub_callback),
    Route("/assignments/{assignment}", students.assignment),
    Route("/assignments/{assignment}" + UPLOAD_SUFFIX, students.upload, methods=["POST"]),
    Route("/attempts/{attempt_id:int}", students.attempt),
    Route("/attempts/{attempt_id:int}/status.json", students.attempt_status),
    Route("/attempts/{attempt_id:int}/status.events", students.attempt_events),
    Route("/attempts/{attempt_id:int}/feedback", students.attempt_feedback),
    Route("/attempts/{attempt_id:int}/notebook", students.attempt_notebook),
    Route("/instructor", teaching.instructor),
    Route("/instructor/sign-in", signing_in.instructor_sign_in, methods=["POST"]),
    Route("/instructor/policy/{assignment}", teaching.set_policy, methods=["POST"]),
    Route("/instructor/extension", teaching.set_extension, methods=["POST"]),
    Route("/instructor/revoke", teaching.revoke, methods=["POST"]),
    Route("/instructor/link", teaching.new_link, methods=["POST"]),
    Route("/instructor/progress.json", teaching.progress_json),
    Route("/instructor/dashboard", teaching.class_dashboard),
    *lti_routes.ROUTES,
    Mount("/static", StaticFiles(directory=pages.STATIC), name="static"),
]


async def too_large(request: Request, exc: Exception):
    return message("File too large", too_large_text(portal_of(request).upload_bytes), 413)


async def too_slow(request: Request, exc: Exception):
    return message("Too slow", "The request arrived too slowly and was cut off; try again.", 408)


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
