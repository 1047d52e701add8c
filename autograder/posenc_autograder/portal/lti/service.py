"""What the tool does, apart from HTTP (the routes run it in Starlette's thread pool): logins, launches, deep-linking
responses, its key set and configuration, the roster and the outbox."""
from __future__ import annotations

import dataclasses
import logging
import secrets
import threading
import time
import typing as t

from pylti1p3.deep_link import DeepLink
from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.lineitem import LineItem
from starlette.responses import Response

from posenc_autograder.checks import total_points
from posenc_autograder.portal import auth
from posenc_autograder.portal.lti import launch as meaning
from posenc_autograder.portal.lti import registration, roster
from posenc_autograder.portal.lti.adapter import (
    KeySets,
    LaunchRefused,
    LoginStore,
    NotSigned,
    StarletteCookies,
    StarletteLogin,
    StarletteRequest,
    StrictLaunch,
    forget_old_logins,
)
from posenc_autograder.portal.lti.passback import Outbox
from posenc_autograder.portal.models import utcnow

DOOR = "lti"
log = logging.getLogger(__name__)
DEEP_LINK_SECONDS = 3600.0              # an instructor's deep-linking choice must be made within this


@dataclasses.dataclass
class Landing:
    """Where a valid launch takes its user, with the session it opened."""
    cookie: str
    to: str                                     # a portal path, or "" for the deep-linking picker
    instructor: bool
    deep_link: str | None = None                # the picker's key (a deep-linking request)
    chosen: str | None = None                   # the assignment the deep-linking request itself names


@dataclasses.dataclass
class PendingDeepLink:
    registration: t.Any
    deployment_id: str
    settings: dict
    session_digest: str
    expires: float


class LtiTool:
    def __init__(self, course, sessions, assignments: list[str]):
        self.course, self.sessions, self.assignments = course, sessions, assignments
        self.key_sets = KeySets()
        self.outbox = Outbox(course, sessions, self.tool_config)
        self.deep_links: dict[str, PendingDeepLink] = {}
        self._lock = threading.Lock()
        self._roster_lock = threading.Lock()           # one class-list read at a time (a launch starts one too)
        self.problem = ""                              # why lti.json cannot be read, when it cannot
        self._config: tuple | None = None            # (lti.json's mtime, pylti1p3's config, origins)

    # --- registrations ------------------------------------------------------------------------------

    def tool_config(self):
        """pylti1p3's view of lti.json, read again when the file changes (None: the tool is not set up, or lti.json
        cannot be read: then every launch says why, and the rest of the portal works on)."""
        path = registration.config_path(self.course)
        stamp = path.stat().st_mtime_ns if path.is_file() else None
        if self._config is None or self._config[0] != stamp:
            try:
                self._config = (stamp, registration.tool_config(self.course) if stamp is not None else None,
                                registration.platform_origins(self.course))
                self.problem = ""
            except Exception as exc:  # noqa: BLE001 - a broken lti.json or key file must not stop the portal
                log.error("%s cannot be read: %s", registration.CONFIG_FILE, exc)
                self._config, self.problem = (stamp, None, []), f"{registration.CONFIG_FILE} cannot be read ({exc})"
        return self._config[1]

    def issuers(self) -> set[str]:
        return set(registration.registrations(self.course))

    def frame_ancestors(self) -> list[str]:
        """The registered platforms' origins, which may show the portal in a frame."""
        self.tool_config()
        return self._config[2]

    def jwks(self) -> dict:
        config = self.tool_config()
        keys = {}
        if config is not None:
            for issuer, entries in registration.registrations(self.course).items():
                for entry in entries:
                    for key in config.get_jwks(issuer, entry.get("client_id")).get("keys", []):
                        keys[key.get("kid")] = key
        return {"keys": list(keys.values())}

    # --- login and launch ---------------------------------------------------------------------------

    def login(self, params: dict, cookies: dict, secure: bool, launch_url: str) -> Response:
        """The OIDC third-party initiated login: a redirect to the platform's authorisation URL, with the state set
        as this browser's cookie and kept (with its nonce) for the launch."""
        config = self.tool_config()
        if config is None:
            raise LaunchRefused(self.problem or "this portal is not registered with any LMS (no autograder/lti.json)",
                                404)
        issuer = params.get("iss")
        if issuer not in self.issuers():
            raise LaunchRefused("the issuer (iss) is not a registered platform", 400)
        request = StarletteRequest(params, cookies, secure)
        login = StarletteLogin(request, config, LoginStore(request), StarletteCookies(request))
        try:
            with self.sessions() as db:
                forget_old_logins(db, utcnow())
                return login.begin(db, launch_url)
        except (OIDCException, LtiException) as exc:
            raise LaunchRefused(f"the login was refused: {exc}", 400) from None
        except Exception as exc:  # noqa: BLE001 - pylti1p3 raises plain Exception for an unknown client id
            raise LaunchRefused(f"the login was refused: the client id is not registered ({type(exc).__name__})",
                                400) from None

    def launch(self, params: dict, cookies: dict, secure: bool) -> Landing:
        """Validate the launch (LaunchRefused, a 4xx with its reason, otherwise) and open its session."""
        config = self.tool_config()
        if config is None:
            raise LaunchRefused(self.problem or "this portal is not registered with any LMS (no autograder/lti.json)",
                                404)
        request = StarletteRequest(params, cookies, secure)
        with self.sessions() as db:
            checked = StrictLaunch(request, config, self.issuers(), db, self.key_sets)
            try:
                checked.validate()
            except LtiException as exc:
                db.rollback()
                raise LaunchRefused(f"the launch was refused: {exc}", 401 if isinstance(exc, NotSigned) else 400) \
                    from None
            body = dict(checked.get_launch_data())
            return self._land(db, checked, body)

    def _land(self, db, checked: StrictLaunch, body: dict) -> Landing:
        reg = checked.registration()
        issuer, client_id = reg.get_issuer(), reg.get_client_id()
        teacher = meaning.teaches(body.get(meaning.CLAIM + "roles"))
        kind = body.get(meaning.CLAIM + "message_type")
        context = meaning.keep_context(db, issuer, client_id, body)
        if kind == "LtiDeepLinkingRequest":
            if not teacher:
                db.rollback()
                raise LaunchRefused("only an instructor chooses what a link opens (deep linking)", 403)
            cookie = auth.open_session(db, None, instructor=True, door=DOOR)
            db.commit()
            key = secrets.token_urlsafe(24)
            with self._lock:
                now = time.monotonic()
                self.deep_links = {k: v for k, v in self.deep_links.items() if v.expires > now}
                self.deep_links[key] = PendingDeepLink(
                    reg, str(body[meaning.CLAIM + "deployment_id"]),
                    dict(body["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"]),
                    auth.digest(cookie), now + DEEP_LINK_SECONDS)
            return Landing(cookie, "", True, key, meaning.assignment_of(body, self.assignments))
        if teacher:
            cookie = auth.open_session(db, None, instructor=True, door=DOOR)
            db.commit()
            context_id = context.id if context is not None else None
            if context_id is not None:
                threading.Thread(target=self.sync_roster, args=(context_id,), daemon=True).start()
            return Landing(cookie, "/instructor", True)
        sub = str(body["sub"])
        student = meaning.student_for(db, self.course, issuer, sub, meaning.lms_ids(body),
                                      meaning.display_name(body), str(body.get("email") or ""))
        assignment = meaning.assignment_of(body, self.assignments)
        if assignment is not None:
            meaning.keep_line_item(db, student, assignment, issuer, client_id, body)
        cookie = auth.open_session(db, student, door=DOOR)
        db.commit()
        return Landing(cookie, f"/assignments/{assignment}" if assignment else "/", False)

    # --- deep linking -------------------------------------------------------------------------------

    def deep_link_response(self, key: str, session_cookie: str | None, assignment: str,
                           base_url: str) -> tuple[str, str]:
        """(the platform's return URL, the signed LtiDeepLinkingResponse) for the chosen assignment, for the
        session the deep-linking launch opened only."""
        with self._lock:
            pending = self.deep_links.get(key)
            if pending is None or pending.expires < time.monotonic() or not session_cookie \
                    or auth.digest(session_cookie) != pending.session_digest:
                raise LaunchRefused("this choice has expired; open the tool from the LMS again", 403)
            if assignment not in self.assignments:
                raise LaunchRefused("no such assignment", 400)
            del self.deep_links[key]
        resource = (DeepLinkResource().set_url(base_url.rstrip("/") + registration.LAUNCH).set_title(assignment)
                    .set_custom_params({"assignment": assignment})
                    .set_lineitem(LineItem().set_tag(assignment).set_score_maximum(total_points(assignment))
                                  .set_label(assignment)))
        # the platform's deep_linking_settings claim as it came: pylti1p3 types it as its TypedDict
        link = DeepLink(pending.registration, pending.deployment_id, pending.settings)  # type: ignore[arg-type]
        return pending.settings["deep_link_return_url"], link.get_response_jwt([resource])

    # --- roster and scores --------------------------------------------------------------------------

    def sync_roster(self, context_id: int | None = None):
        config = self.tool_config()
        if config is None:
            return []
        with self._roster_lock:
            return self._sync_roster(config, context_id)

    def _sync_roster(self, config, context_id: int | None):
        if context_id is not None:
            return [roster.sync_context(self.course, self.sessions, config, context_id)]
        return roster.sync_all(self.course, self.sessions, config)

    def start(self) -> None:
        self.outbox.start()

    def stop(self) -> None:
        self.outbox.stop()
