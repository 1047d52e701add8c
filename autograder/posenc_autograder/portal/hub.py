"""The portal as a JupyterHub service: the hub signs its users in (OAuth, jupyterhub's HubOAuth), the hub user is
the student (their name is the student id, as nbgrader's exchange has it), and members of the hub group named in
course.toml ([hub] instructor_group) are the instructor.

The hub starts `make portal` (or `python -m posenc_autograder portal`) with its service environment
(JUPYTERHUB_API_TOKEN, JUPYTERHUB_SERVICE_URL, JUPYTERHUB_SERVICE_PREFIX, ...); the portal then listens where the hub
routes the service and serves it under the service's prefix (/services/<name>/): `Prefixed` strips the prefix from
requests and adds it to the portal's own absolute links, redirects and cookie paths. Without that environment there
is no hub door and the portal works as before (sign-in links, LTI).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
import time
import urllib.parse

import requests

from posenc_autograder import settings
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.portal import auth
from posenc_autograder.portal.models import Student

DOOR = "hub"
STATE_COOKIE = "portal_hub_state"
STATE_SECONDS = 600
API_TIMEOUT = 10.0
LINK_ATTRIBUTE = re.compile(rb'((?:href|src|action|data-url|data-events)=")/(?!/)')


def configured() -> bool:
    """Whether the hub started this portal as its service (its environment is set)."""
    return bool(os.environ.get("JUPYTERHUB_API_TOKEN") and os.environ.get("JUPYTERHUB_SERVICE_PREFIX"))


def service_address() -> tuple[str, int] | None:
    """Where the hub routes its service (JUPYTERHUB_SERVICE_URL), when it set one."""
    url = urllib.parse.urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", ""))
    return (url.hostname, url.port or 80) if configured() and url.hostname else None


@dataclasses.dataclass
class Pending:
    next_url: str
    verifier: str
    expires: float


class HubDoor:
    """Sign-in through the hub: the OAuth dance, then a portal session for the hub user."""

    def __init__(self, course, sessions):
        from jupyterhub.services.auth import HubOAuth  # only where the hub runs the portal

        self.course, self.sessions = course, sessions
        self.oauth = HubOAuth(cache_max_age=0)
        self.prefix = os.environ["JUPYTERHUB_SERVICE_PREFIX"].rstrip("/")
        self.pending: dict[str, Pending] = {}

    @property
    def instructor_group(self) -> str:
        return settings.load(self.course).hub.instructor_group

    def start(self, next_url: str) -> tuple[str, str]:
        """(the hub's authorisation URL, the state to keep in the browser's cookie)."""
        verifier, challenge, method = self.oauth.generate_pkce_code_challenge()
        state = secrets.token_urlsafe(24)
        now = time.monotonic()
        self.pending = {k: v for k, v in self.pending.items() if v.expires > now}
        self.pending[state] = Pending(next_url if next_url.startswith("/") and not next_url.startswith("//")
                                      else "/", verifier, now + STATE_SECONDS)
        query = urllib.parse.urlencode({"client_id": self.oauth.oauth_client_id, "response_type": "code",
                                        "redirect_uri": self.oauth.oauth_redirect_uri, "state": state,
                                        "code_challenge": challenge, "code_challenge_method": method})
        return f"{self.oauth.oauth_authorization_url}?{query}", state

    def finish(self, code: str, state: str, cookie_state: str | None) -> tuple[str | None, str]:
        """(a portal session cookie or None, where to go): the state must be the one this browser's cookie holds."""
        pending = self.pending.pop(state, None) if state and cookie_state == state else None
        if pending is None or pending.expires < time.monotonic() or not code:
            return None, "the sign-in through JupyterHub expired or did not start in this browser; open it again"
        token = self.oauth.token_for_code(code, code_verifier=pending.verifier, sync=True)
        user = self.oauth.user_for_token(token, use_cache=False, sync=True)
        name = user.get("name") if isinstance(user, dict) else None
        if not isinstance(name, str) or not name:
            return None, "JupyterHub did not say who you are"
        teaches = self.instructor_group in self.groups_of(name, user)
        with self.sessions() as db:
            if teaches:
                cookie = auth.open_session(db, None, instructor=True, door=DOOR)
            else:
                student = student_id(name)
                if db.get(Student, student) is None:
                    db.add(Student(id=student, name=name))
                cookie = auth.open_session(db, student, door=DOOR)
            db.commit()
        return cookie, "/instructor" if teaches else pending.next_url

    def groups_of(self, name: str, user: dict) -> list[str]:
        """The user's hub groups: from their model when the token may read them, else asked of the hub's API with
        the service's own token (the service's role: read:users:groups)."""
        groups = user.get("groups")
        if isinstance(groups, list):
            return [g for g in groups if isinstance(g, str)]
        answer = requests.get(f"{self.oauth.api_url.rstrip('/')}/users/{urllib.parse.quote(name)}",
                              headers={"Authorization": f"token {self.oauth.api_token}"}, timeout=API_TIMEOUT)
        return [g for g in answer.json().get("groups", []) if isinstance(g, str)] if answer.ok else []


def student_id(name: str) -> str:
    """The course's id for a hub user: their name when it is a safe id, else one made from it."""
    return name if is_safe_id(name) and len(name) <= 64 else "hub-" + hashlib.sha256(name.encode()).hexdigest()[:16]


class Prefixed:
    """ASGI middleware serving the portal under the hub's service prefix: requests arrive with it (the hub's proxy
    keeps it) and are routed without it; the portal's absolute links, redirects and cookie paths get it back."""

    def __init__(self, app, prefix: str):
        self.app, self.prefix = app, prefix.rstrip("/")

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not self.prefix:
            return await self.app(scope, receive, send)
        path = scope["path"]
        if path == self.prefix or path.startswith(self.prefix + "/"):
            path = path[len(self.prefix):] or "/"
        scope = {**scope, "path": path, "raw_path": path.encode()}
        prefix = self.prefix.encode()
        html = False

        async def prefixed(message):
            nonlocal html
            if message["type"] == "http.response.start":
                headers = []
                for name, value in message.get("headers", []):
                    lowered = name.lower()
                    if lowered == b"location" and value.startswith(b"/") and not value.startswith(b"//"):
                        value = prefix + value
                    elif lowered == b"set-cookie":
                        value = value.replace(b"Path=/", b"Path=" + prefix + b"/")
                    elif lowered == b"content-type":
                        html = value.startswith(b"text/html")
                    headers.append((name, value))
                if html:                                    # the body grows: sent without a length
                    headers = [(n, v) for n, v in headers if n.lower() != b"content-length"]
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body" and html:
                message = {**message, "body": LINK_ATTRIBUTE.sub(rb"\1" + prefix + b"/", message.get("body", b""))}
            await send(message)

        await self.app(scope, receive, prefixed)
