"""The class list from the LMS (Names and Role Provisioning Services): every active member of a course the tool was
launched from, with name, email and LMS ids, tied to the course's student ids as a launch ties them
(launch.student_for), so a student is known to the portal (and the instructor's pages) before their first launch."""
from __future__ import annotations

import requests
from pylti1p3.names_roles import NamesRolesProvisioningService, TMember
from sqlalchemy import select

from posenc_autograder.portal.lti import launch
from posenc_autograder.portal.lti.models import LtiContext, LtiUser
from posenc_autograder.portal.lti.passback import describe
from posenc_autograder.portal.lti.registration import ToolServiceConnector
from posenc_autograder.portal.models import utcnow

MAX_MEMBERS = 20_000                  # pages are followed up to this many members (a course, not a directory)


def sync_context(course, sessions, tool_config, context_id: int) -> tuple[int, str]:
    """Fill the roster from one context's memberships: (members kept, error or '')."""
    with sessions() as db:
        context = db.get(LtiContext, context_id)
    try:
        registration = tool_config.find_registration_by_params(context.issuer, context.client_id)
        connector = ToolServiceConnector(registration, requests.Session())
        service = NamesRolesProvisioningService(connector, {"context_memberships_url": context.memberships_url})
        members = members_of(service)
    except Exception as exc:  # noqa: BLE001 - shown to the instructor on the context's row
        error = describe(exc)
        with sessions() as db:
            db.get(LtiContext, context_id).error = error[:2000]
            db.commit()
        return 0, error
    kept = 0
    with sessions() as db:
        for member in members:
            if member.get("status", "Active") != "Active" or not isinstance(member.get("user_id"), str):
                continue
            name = str(member.get("name") or " ".join(str(member.get(k, "")) for k in ("given_name", "family_name"))
                       ).strip()
            ids = [str(i) for i in (member.get("lis_person_sourcedid"), member.get("user_id")) if i]
            student = launch.student_for(db, course, context.issuer, member["user_id"], ids, name,
                                         str(member.get("email") or ""))
            user = db.execute(select(LtiUser).where(LtiUser.issuer == context.issuer,
                                                    LtiUser.sub == member["user_id"])).scalar_one()
            roles = member.get("roles") if isinstance(member.get("roles"), list) else []
            user.roles = " ".join(r for r in roles if isinstance(r, str))[:4000]
            kept += bool(student)
        row = db.get(LtiContext, context_id)
        row.synced, row.members, row.error = utcnow(), kept, ""
        db.commit()
    return kept, ""


def members_of(service: NamesRolesProvisioningService) -> list[TMember]:
    """Every member, page after page (the Link header's rel=next), up to MAX_MEMBERS."""
    members: list[TMember] = []
    url = None
    while len(members) < MAX_MEMBERS:
        page, url = service.get_members_page(url)
        members += [m for m in page if isinstance(m, dict)]
        if not url:
            break
    return members


def sync_all(course, sessions, tool_config) -> list[tuple[str, int, str]]:
    """Every known context's roster: (its title, members kept, error) each."""
    with sessions() as db:
        contexts = list(db.execute(select(LtiContext.id, LtiContext.title, LtiContext.context_id)).all())
    return [(title or context, *sync_context(course, sessions, tool_config, cid)) for cid, title, context in contexts]
