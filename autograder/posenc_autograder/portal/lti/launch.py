"""What a validated launch means for the course: who the user is (the LMS user id, tied to the roster's LMS ids),
whether they teach (by LTI role only), which assignment the link names, and where their score goes."""
from __future__ import annotations

import hashlib
import re
import urllib.parse

from sqlalchemy import select

from posenc_autograder.intake import roster
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.portal.lti.models import LtiContext, LtiLineItem, LtiUser
from posenc_autograder.portal.models import Student

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINE_ITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"

# Roles that reach the instructor's pages, by exact name: teaching roles in this course (context), as full LIS URIs or
# the simple names LTI 1.3 still allows, and administrators of the institution or the system. An institution role
# such as person#Instructor does not count (one may teach elsewhere and study here); Learner, Mentor, a made-up
# role and any lookalike are a student's.
LIS = "http://purl.imsglobal.org/vocab/lis/v2/"
CONTEXT_TEACHING = ("Instructor", "Administrator", "ContentDeveloper", "TeachingAssistant")
TEACHING = frozenset([*CONTEXT_TEACHING, *(LIS + "membership#" + r for r in CONTEXT_TEACHING),
                      LIS + "membership/Instructor#TeachingAssistant", LIS + "institution/person#Administrator",
                      LIS + "system/person#Administrator", LIS + "system/person#SysAdmin"])
ASSIGNMENT_PATH = re.compile(r"/assignments/([^/?#]+)/?$")


def teaches(roles) -> bool:
    """Whether the LTI roles claim holds a teaching role."""
    return isinstance(roles, list) and any(isinstance(role, str) and role in TEACHING for role in roles)


def assignment_of(body: dict, offered: list[str]) -> str | None:
    """The assignment a resource link names: its custom parameter `assignment`, else a target_link_uri ending in
    /assignments/<assignment>; None when it names none the portal offers."""
    custom = body.get(CLAIM + "custom")
    named = custom.get("assignment") if isinstance(custom, dict) else None
    if not isinstance(named, str) or not named:
        target = body.get(CLAIM + "target_link_uri")
        path = urllib.parse.urlsplit(target).path if isinstance(target, str) else ""
        found = ASSIGNMENT_PATH.search(path)
        named = urllib.parse.unquote(found.group(1)) if found else None
    return named if named in offered else None


def lms_ids(body: dict) -> list[str]:
    """The ids an LMS's downloads know this user by: Canvas's user id (custom canvas_user_id, which /lti/config asks
    Canvas to send), the LIS person sourcedid, and the subject itself (Moodle's user id)."""
    custom = body.get(CLAIM + "custom")
    lis = body.get(CLAIM + "lis")
    found = [custom.get("canvas_user_id") if isinstance(custom, dict) else None,
             lis.get("person_sourcedid") if isinstance(lis, dict) else None, body.get("sub")]
    return [str(i) for i in found if isinstance(i, (str, int)) and str(i) and not str(i).startswith("$")]


def student_for(db, course, issuer: str, sub: str, ids: list[str], name: str = "", email: str = "") -> str:
    """The course's student id for an LMS user: the one already tied to them; else the roster's student with one of
    their LMS ids (a student collected from that LMS's zips); else their subject when it is a safe id no one else
    holds; else a stable id made from the issuer and subject. The tie is kept."""
    user = db.execute(select(LtiUser).where(LtiUser.issuer == issuer, LtiUser.sub == sub)).scalar_one_or_none()
    if user is None:
        rows = roster.load(course).values()
        known = next((r["student_id"] for i in ids for r in rows if r.get("lms_user_id") == i and i), None)
        taken = known is None and (db.get(Student, sub) is not None or db.execute(
            select(LtiUser.id).where(LtiUser.student_id == sub)).first() is not None)
        student = known or (sub if is_safe_id(sub) and len(sub) <= 64 and not taken
                            else "lti-" + hashlib.sha256(f"{issuer}\n{sub}".encode()).hexdigest()[:16])
        user = LtiUser(issuer=issuer, sub=sub, student_id=student)
        db.add(user)
    user.name, user.email = name[:200] or user.name or "", email[:320] or user.email or ""
    user.lms_user_id = next((i for i in ids if i != sub), user.lms_user_id or sub)[:255]
    student = db.get(Student, user.student_id)
    if student is None:
        db.add(Student(id=user.student_id, name=user.name))
    elif user.name:
        student.name = user.name
    return user.student_id


def display_name(body: dict) -> str:
    name = body.get("name") or " ".join(str(body.get(k, "")) for k in ("given_name", "family_name")).strip()
    return str(name)[:200]


def is_url(value) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def keep_line_item(db, student: str, assignment: str, issuer: str, client_id: str, body: dict) -> None:
    """Where this student's score for the assignment goes: the launch's line item, when the platform gave one and
    the score scope; or, for a link without one, the context's line items, where the outbox finds (or makes) the
    assignment's by its tag."""
    endpoint = body.get(AGS)
    if not isinstance(endpoint, dict):
        return
    line_item, container, scopes = endpoint.get("lineitem"), endpoint.get("lineitems"), endpoint.get("scope")
    line_item = line_item if is_url(line_item) else ""
    container = container if is_url(container) and LINE_ITEM_SCOPE in (scopes or []) else ""
    if not (line_item or container) or not isinstance(scopes, list) or SCORE_SCOPE not in scopes:
        return                          # no line item, and none the tool may find or make: no score goes back
    kept = db.execute(select(LtiLineItem).where(
        LtiLineItem.student_id == student, LtiLineItem.assignment == assignment, LtiLineItem.issuer == issuer,
        LtiLineItem.client_id == client_id)).scalar_one_or_none()
    if kept is None:
        kept = LtiLineItem(student_id=student, assignment=assignment, issuer=issuer, client_id=client_id)
        db.add(kept)
    kept.sub, kept.line_item, kept.line_items = str(body["sub"]), line_item[:2000], container[:2000]
    kept.scopes = " ".join(s for s in scopes if isinstance(s, str))


def keep_context(db, issuer: str, client_id: str, body: dict) -> LtiContext | None:
    """The course (context) whose memberships the tool may read, when the launch offers Names and Role
    Provisioning."""
    service, context = body.get(NRPS), body.get(CLAIM + "context")
    url = service.get("context_memberships_url") if isinstance(service, dict) else None
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or not isinstance(context, dict):
        return None
    context_id = str(context.get("id", ""))[:255]
    kept = db.execute(select(LtiContext).where(LtiContext.issuer == issuer, LtiContext.client_id == client_id,
                                               LtiContext.context_id == context_id)).scalar_one_or_none()
    if kept is None:
        kept = LtiContext(issuer=issuer, client_id=client_id, context_id=context_id)
        db.add(kept)
    kept.memberships_url, kept.title = url[:2000], str(context.get("title") or context.get("label") or "")[:400]
    return kept
