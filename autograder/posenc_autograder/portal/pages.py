"""Server-rendered pages (Jinja2, autoescaped; templates/ beside this file) and the headers every response
carries: a strict Content-Security-Policy (scripts and styles from the portal's own static files only, no
inline script anywhere), no framing, no referrer (sign-in links never leak through one), no caching."""
from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import hashlib
import pathlib

import jinja2

from posenc_autograder import settings
from posenc_autograder.portal import auth
from posenc_autograder.portal import policy as rules
from posenc_autograder.reports import dashboard, feedback, templating
from posenc_autograder.results import GradedTest, NotebookResult, Problem, ProblemKind, Told

HERE = pathlib.Path(__file__).parent
STATIC = HERE / "static"
# The reports' templates too: a sentence's backticked code is set by their one macro (code_spans.html) on every page.
ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader([HERE / "templates", templating.TEMPLATES]),
                                 autoescape=True, undefined=jinja2.StrictUndefined)


@jinja2.pass_context
def _stamp(context, when) -> str:
    """A time on a page in the zone the page was given (the course's: every student page passes it), else UTC."""
    return rules.stamp(when, context.get("zone") or dt.timezone.utc)


ENVIRONMENT.filters["stamp"] = _stamp
ENVIRONMENT.filters["zone_name"] = settings.zone_name
ENVIRONMENT.filters["code_spans"] = templating.code_spans


# The static files (style, script, icon: the same for everyone) may be kept by a browser for a while, instead of being
# fetched again with every page (no-store, as every page is): after a portal's upgrade, a browser may use the old ones
# this long.
STATIC_KEPT = "public, max-age=300"

PORTAL_CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
              "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def _style_hash(css: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(css.encode()).digest()).decode() + "'"


# The reports' pages keep their one inline <style>: allowed by its hash, nothing else inline.
REPORT_CSP = (f"default-src 'none'; style-src {_style_hash(feedback.STYLE)} {_style_hash(dashboard.STYLE)}; "
              f"img-src data:; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"x-content-type-options": "nosniff", "referrer-policy": "no-referrer", "x-frame-options": "DENY",
           "cache-control": "no-store", "cross-origin-opener-policy": "same-origin"}


def with_frame_ancestors(policy: str, ancestors: list[str]) -> str:
    """A Content-Security-Policy that lets the registered LMSs show the page in their frames (an LTI launch in an
    iframe); with none registered, no one may frame it."""
    return policy.replace("frame-ancestors 'none'", "frame-ancestors 'self' " + " ".join(ancestors)) if ancestors \
        else policy


def set_session_cookie(response, cookie: str, secure: bool, embeddable: bool = False):
    """The session cookie: HttpOnly, Secure over https, SameSite=Lax; a session opened inside an LMS (embeddable)
    must reach the portal from the LMS's frame, a third-party context, so behind https it is SameSite=None (its
    forms still carry their CSRF tokens)."""
    response.set_cookie(auth.SESSION_COOKIE, cookie, max_age=int(auth.SESSION_LIFETIME.total_seconds()), httponly=True,
                        samesite="none" if embeddable and secure else "lax", secure=secure, path="/")
    return response


def render(name: str, **context) -> str:
    return ENVIRONMENT.get_template(name).render(**context)


# --- feedback, as much as the policy shows now -----------------------------------------------------

WITHHELD = Problem("failed (the diagnosis is shown after the deadline)", kind=ProblemKind.WITHHELD)


def without_inputs(problem: Problem) -> Problem:
    """A problem without the failing case's own inputs (kept for after the deadline)."""
    return dataclasses.replace(problem, inputs=None)


def visible_result(result: NotebookResult, level: str, inputs: bool, points: bool = True) -> NotebookResult:
    """The result as the student may see it now: full diagnoses, pass or fail per test, with or without inputs, and
    the notes the view shows (withheld: those that tell what it withholds, by NoteKind.tells, the diagnosis with
    pass or fail only, points where `points` is False). A new result (the one given is left as it is) sharing its
    frozen problems and notes: nothing deep-copied, which was most of a feedback page's CPU."""
    def shown(test: GradedTest) -> GradedTest:
        if level == "tests" and test.problems:
            return dataclasses.replace(test, problems=[WITHHELD])
        return dataclasses.replace(test, problems=list(test.problems) if inputs else
                                   [without_inputs(p) for p in test.problems])
    withheld = {Told.DIAGNOSIS} if level == "tests" else set()
    withheld |= set() if points else {Told.POINTS}
    notes = [n for n in result.notes if n.kind.tells not in withheld]
    return dataclasses.replace(result, tests=[shown(t) for t in result.tests], notes=notes)


def feedback_page(result: NotebookResult, level: str, inputs: bool, back: str, **shown) -> str:
    """The page `make grade` writes (reports.feedback; `shown`: its scores, late, comments and counted), with a way
    back to the portal."""
    return feedback.render(visible_result(result, level, inputs), back=back, **shown)
