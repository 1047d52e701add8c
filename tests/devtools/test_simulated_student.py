"""A simulated student of `make bench-portal` asks the portal for what a browser on the portal's pages asks: the
redirect after signing in followed, the attempt's page the upload redirects to, its status stream, the page
reloaded once graded, the feedback. A request it skipped would be CPU the bench never counts."""
from __future__ import annotations

import datetime as dt
import time

import pytest
from own_loop import run_in_own_loop
from served import server_of, serving
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from posenc_autograder.devtools import portal_load
from posenc_autograder.devtools.bench import ASSIGNMENT
from posenc_autograder.devtools.student_client import StudentClient
from posenc_autograder.intake.attempts import RULES
from posenc_autograder.portal import pages
from posenc_autograder.portal.models import Attempt

ATTEMPT = 7


class Portal:
    """A stand-in with the portal's URLs: the attempt is graded once its status stream has been read."""

    def __init__(self):
        self.asked: list[str] = []
        self.graded = False

    def app(self) -> Starlette:
        async def noted(request: Request) -> Response:
            self.asked.append(f"{request.method} {request.url.path}")
            path = request.url.path
            if path.startswith("/s/"):
                answer = RedirectResponse("/", status_code=303)
                answer.set_cookie("portal_session", "s")
                return answer
            if path == f"/assignments/{ASSIGNMENT}":
                return HTMLResponse('<input type="hidden" name="csrf" value="c1">')
            if path.endswith("/upload"):
                await request.form()
                return RedirectResponse(f"/attempts/{ATTEMPT}", status_code=303)
            if path == f"/attempts/{ATTEMPT}":
                return HTMLResponse(attempt_page("graded" if self.graded else "queued"))
            if path.endswith("/status.events"):
                self.graded = True
                return Response('data: {"status": "queued", "wait_seconds": 4.0}\n\n'
                                'data: {"status": "graded", "wait_seconds": 0.0}\n\n', media_type="text/event-stream")
            if path.endswith("/feedback"):
                return HTMLResponse("Score: 3 / 4")
            return HTMLResponse("home")
        return Starlette(routes=[Route("/{path:path}", noted, methods=["GET", "POST"])])


def attempt_page(status: str) -> str:
    """The portal's own attempt page (its template), showing `status`."""
    attempt = Attempt(id=ATTEMPT, number=1, assignment=ASSIGNMENT, uploaded_at=dt.datetime(2026, 1, 1), late=False)
    shown = {"status": status, "ahead": 2, "wait_seconds": 12.0, "full_run": False, "score": None, "max_score": None,
             "counted": None, "not_counted": None, "counted_rule": RULES["best_on_time"]}    # points hidden: the rule
    return pages.render("attempt.html", session=None, signed_in=True, csrf="c1", title="Attempt 1", attempt=attempt,
                        s=shown, again=False)


@pytest.fixture
def served():
    portal = Portal()
    with serving(server_of(portal.app(), log_level="error")) as server:
        yield portal, server.url


def test_a_simulated_student_asks_for_every_page_a_browser_loads(served):
    """Fails on the bench's old student: no home page after signing in, the status's JSON instead of the attempt's
    page, no reload once graded."""
    portal, base = served

    async def student():
        client = StudentClient(base, timeout=30)
        try:
            return await portal_load.one_student(client, "/s/token", b"{}", 0.0, time.monotonic() + 30)
        finally:
            await client.aclose()
    outcome = run_in_own_loop(student())
    assert outcome["done"] and outcome["shown_wait"] == 12.0        # the wait the attempt's page showed first
    assert portal.asked == ["GET /s/token", "GET /", f"GET /assignments/{ASSIGNMENT}",
                            f"POST /assignments/{ASSIGNMENT}/upload", f"GET /attempts/{ATTEMPT}",
                            f"GET /attempts/{ATTEMPT}/status.events", f"GET /attempts/{ATTEMPT}",
                            f"GET /attempts/{ATTEMPT}/feedback"]


def test_the_status_an_attempts_page_shows_is_read_from_the_portals_template():
    for status in ("queued", "running", "graded", "error"):
        page = portal_load.shown_status(type("Page", (), {"status_code": 200, "text": attempt_page(status)}))
        assert page == {"status": status, "wait_seconds": 12.0 if status == "queued" else 0.0}
