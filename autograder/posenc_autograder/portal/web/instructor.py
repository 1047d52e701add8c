"""The instructor's pages: the policies, extensions and links, the class's progress live, the class dashboard."""
from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from posenc_autograder import settings
from posenc_autograder.intake import attempts as record_of_attempts
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.orchestration.class_files import rebuild_class_files
from posenc_autograder.portal import auth, pages
from posenc_autograder.portal import policy as rules
from posenc_autograder.portal.service import Portal
from posenc_autograder.portal.web.answers import (
    instructor_form,
    instructor_page,
    instructor_session,
    message,
    notice_of,
    page,
    portal_of,
    saved,
    set_presession,
)
from posenc_autograder.portal.web.forms import parse_time, policy_fields, policy_values, shown_time
from posenc_autograder.reports import dashboard


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
                notice=notice_of(request), counted=counted, fields=policy_fields(ceilings(portal)), zone=portal.zone,
                shown_time=shown_time, fixed={name: set_in_course_toml(portal, name) for name in portal.assignments})


def set_in_course_toml(portal: Portal, assignment: str) -> frozenset[str]:
    """The assignment's rules course.toml states: its form shows them, to be changed there."""
    return rules.set_in_course_toml(settings.load(portal.course), assignment)


def ceilings(portal: Portal) -> dict[str, int]:
    """The rules' bounds that are the portal's own: a notebook runs no longer than its sandbox allows."""
    return {"notebook_seconds": portal.worker.limits.notebook_seconds}


@instructor_form
async def set_policy(request: Request, form):
    portal, name = portal_of(request), request.path_params["assignment"]
    if name not in portal.assignments:
        return message("Not found", "No such assignment.", 404)
    try:
        values = policy_values(form, ceilings(portal), portal.zone, set_in_course_toml(portal, name))
    except ValueError as exc:
        return message("Not saved", f"The policy was not saved: {exc}.", 400, None, ("/instructor", "back"))
    await run_in_threadpool(portal.set_policy, name, values)
    return saved("policy-saved")


@instructor_form
async def set_extension(request: Request, form):
    portal, name, student = portal_of(request), form.get("assignment"), form.get("student", "")
    try:
        deadline = parse_time(form.get("deadline"), "the extended deadline", portal.zone)
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


def write_class_files(portal: Portal) -> str:
    """grades.csv, the LMS files, the run report and the dashboard, from the stored results, as `make feedback`
    writes them; the dashboard's page."""
    rebuild_class_files(portal.course)
    return dashboard.path(portal.course).read_text()
