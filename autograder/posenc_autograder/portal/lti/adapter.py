"""pylti1p3 on Starlette: the request, cookie, session and redirect classes its Django and Flask adapters provide,
and the launch with the checks a stock pylti1p3 2.0 tool leaves out.

What the library alone does not do, done here:
- the nonce is bound to the login that asked for it (the login's row holds it) and used once, so an id_token is
  never accepted twice, in this browser or another;
- `aud` must name the client id; with several audiences `azp` must be present and be the client id;
- `exp` and `iat` are checked with a small leeway (PyJWT's), iss and aud by PyJWT too;
- the platform's keys are cached and fetched again when a token names a key id the cache lacks (key rotation);
- the state cookie survives the LMS's cross-site form POST: behind https it is SameSite=None; Secure, with a
  second cookie without any SameSite attribute for browsers that reject SameSite=None (the fallback the LTI
  security framework's cookie guidance allows); over plain http only that second cookie is set.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
import time
import typing as t

import jwt
import requests
from jwcrypto.jwk import JWK
from pylti1p3.cookie import CookieService
from pylti1p3.exception import LtiException
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.request import Request as LtiRequest
from pylti1p3.session import SessionService
from sqlalchemy import delete, update
from starlette.responses import RedirectResponse, Response

from posenc_autograder.portal.lti.models import LtiLogin
from posenc_autograder.portal.models import utcnow

LEEWAY_SECONDS = 60                    # clock skew allowed on exp and iat
LOGIN_LIFETIME = dt.timedelta(minutes=10)   # from the login to the launch (the state cookie lives as long)
KEYS_LIFETIME_SECONDS = 3600.0         # a platform's key set is fetched again after this
KEYS_REFETCH_SECONDS = 0.5             # ... or at once on an unknown key id, but not more often than this
FETCH_TIMEOUT = 10.0
LEGACY = "legacy-"                     # the fallback state cookie's name: lti1p3-legacy-state-<uuid>


class LaunchRefused(Exception):
    """A login or launch refused: `status` (a 4xx) and the reason the page says."""

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.reason, self.status = reason, status


class NotSigned(LtiException):
    """The id_token's signature is not the platform's (no such key, or the signature does not verify)."""


class StarletteRequest(LtiRequest):
    """A Starlette request as pylti1p3 sees it: its parameters (query or form, read by the route), cookies, scheme."""

    def __init__(self, params: t.Mapping[str, str], cookies: t.Mapping[str, str], secure: bool):
        super().__init__()
        self._params, self._cookies, self._secure = dict(params), dict(cookies), secure

    @property
    def session(self):          # the library's session storage is replaced by the database (LoginStore)
        return {}

    def get_param(self, key: str):
        value = self._params.get(key)
        return value if isinstance(value, str) else None

    def get_cookie(self, key: str):
        return self._cookies.get(key)

    def is_secure(self) -> bool:
        return self._secure


class StarletteCookies(CookieService):
    """Cookies pylti1p3 sets (the state), put on the Starlette response; read back from either of the pair."""

    def __init__(self, request: StarletteRequest):
        self._request, self.to_set = request, {}

    def _get_key(self, key: str) -> str:
        return f"{self._cookie_prefix}-{key}"

    def get_cookie(self, name: str):
        return (self._request.get_cookie(self._get_key(name))
                or self._request.get_cookie(self._get_key(LEGACY + name)))

    def set_cookie(self, name: str, value: str | int, exp: int | None = 3600):
        self.to_set[name] = (value, exp)

    def state(self) -> str | None:
        """The state this login set (its cookie's value)."""
        return next((value for name, (value, _) in self.to_set.items() if name.startswith("state-")), None)

    def update_response(self, response: Response) -> Response:
        secure = self._request.is_secure()
        for name, (value, exp) in self.to_set.items():
            if secure:
                response.set_cookie(self._get_key(name), value, max_age=exp, path="/", httponly=True, secure=True,
                                    samesite="none")
            response.set_cookie(self._get_key(LEGACY + name), value, max_age=exp, path="/", httponly=True,
                                secure=secure, samesite=None)
        return response


class LoginStore(SessionService):
    """pylti1p3's session service on the database: the nonce a login sends is kept with the login's state."""

    def __init__(self, request: StarletteRequest):
        super().__init__(request)
        self.nonce: str | None = None
        self.launch_data: dict[str, t.Any] = {}

    def save_nonce(self, nonce: str):
        self.nonce = nonce

    def check_nonce(self, nonce: str) -> bool:          # done by StrictLaunch.consume_login, bound to the state
        return False

    def save_launch_data(self, key: str, jwt_body):
        self.launch_data[key] = jwt_body

    def get_launch_data(self, key: str):
        return self.launch_data.get(key)

    def check_state_is_valid(self, state: str, id_token_hash: str) -> bool:
        return False                                     # only the browser's state cookie proves the state

    def save_state_params(self, state, params):
        pass


class StarletteRedirect(Redirect):
    def __init__(self, location: str, cookies: StarletteCookies):
        super().__init__()
        self._location, self._cookies = location, cookies

    def do_redirect(self) -> Response:
        return self._cookies.update_response(RedirectResponse(self._location, status_code=302))

    def do_js_redirect(self) -> Response:               # no inline script under the portal's CSP: a plain redirect
        return self.do_redirect()

    def set_redirect_url(self, location: str):
        self._location = location

    def get_redirect_url(self) -> str:
        return self._location


class StarletteLogin(OIDCLogin):
    """The OIDC third-party initiated login; `begin` also keeps the login (state, nonce) for its launch."""

    def get_redirect(self, url: str) -> StarletteRedirect:
        return StarletteRedirect(url, self._cookie_service)

    def begin(self, db, launch_url: str) -> Response:
        redirect = self.get_redirect_object(launch_url)
        state, nonce = self._cookie_service.state(), self._session_service.nonce
        db.add(LtiLogin(state=state, nonce=nonce, issuer=self._registration.get_issuer(),
                        client_id=self._registration.get_client_id(), created=utcnow()))
        db.commit()
        return redirect.do_redirect()


class KeySets:
    """Platforms' public keys by key set URL, shared by every launch of the portal: cached, and fetched again when
    a token names a key id the cached set lacks (a platform that rotated its keys)."""

    def __init__(self, session: requests.Session | None = None, clock=time.monotonic):
        self.session, self.clock = session or requests.Session(), clock
        self.cached: dict[str, tuple[float, dict]] = {}
        self.lock = threading.Lock()
        self.fetches = 0

    def key(self, url: str, kid: str) -> str:
        """The PEM of the RS256 key `kid` of the set at `url`; LtiException when there is none even after a fetch."""
        with self.lock:
            fetched, keys = self.cached.get(url, (None, None))
            stale = fetched is None or self.clock() - fetched > KEYS_LIFETIME_SECONDS
            if stale or (self._find(keys, kid) is None and self.clock() - fetched > KEYS_REFETCH_SECONDS):
                keys = self._fetch(url)
            found = self._find(keys, kid)
        if found is None:
            raise NotSigned(f"no key {kid!r} in the platform's key set")
        try:
            return JWK.from_json(json.dumps(found)).export_to_pem().decode()
        except (ValueError, TypeError) as exc:
            raise LtiException("the platform's key is not an RSA public key") from exc

    def _fetch(self, url: str) -> dict:
        try:
            answer = self.session.get(url, timeout=FETCH_TIMEOUT)
            answer.raise_for_status()
            keys = answer.json()
        except (requests.RequestException, ValueError) as exc:
            raise LtiException(f"the platform's key set could not be read ({type(exc).__name__})") from exc
        if not isinstance(keys, dict) or not isinstance(keys.get("keys"), list):
            raise LtiException("the platform's key set is not a JWKS")
        self.fetches += 1
        self.cached[url] = (self.clock(), keys)
        return keys

    @staticmethod
    def _find(keys: dict | None, kid: str) -> dict | None:
        for key in (keys or {}).get("keys", []):
            if isinstance(key, dict) and key.get("kid") == kid and key.get("kty") == "RSA" \
                    and key.get("alg", "RS256") == "RS256" and key.get("use", "sig") == "sig":
                return key
        return None


class StrictLaunch(MessageLaunch):
    """pylti1p3's launch with every check the spec asks for, in an order that spends the login only on a token
    that passed all the others."""

    def __init__(self, request: StarletteRequest, tool_config, issuers: t.Collection[str], db, key_sets: KeySets):
        store, cookies = LoginStore(request), StarletteCookies(request)
        super().__init__(request, tool_config, session_service=store, cookie_service=cookies)
        self._issuers, self._db, self._key_sets = issuers, db, key_sets

    def _get_request_param(self, key: str):
        return self._request.get_param(key)

    def validate(self) -> "StrictLaunch":
        if self._restored:
            raise LtiException("Can't validate restored launch")
        self._validated = True
        try:
            self.validate_state().validate_jwt_format().validate_registration().validate_jwt_signature()
            self.validate_deployment().validate_message().consume_login()
            return self
        except Exception:
            self._validated = False
            raise

    def validate_jwt_format(self) -> "StrictLaunch":
        super().validate_jwt_format()
        header, body = self._jwt.get("header"), self._jwt.get("body")
        if not isinstance(header, dict) or not isinstance(body, dict):
            raise LtiException("the id_token's header and body must be JSON objects")
        if header.get("alg") != "RS256":
            raise LtiException(f"the id_token must be signed with RS256, not {str(header.get('alg'))[:20]!r}")
        if not isinstance(header.get("kid"), str):
            raise LtiException("the id_token names no key id (kid)")
        return self

    def get_client_id(self) -> str:
        """The client the token is for: its only audience, or with several audiences the authorised party (azp),
        which must then be one of them."""
        body = self._jwt.get("body", {})
        aud, azp = body.get("aud"), body.get("azp")
        given = aud if isinstance(aud, list) else [aud]
        audiences = [a for a in given if isinstance(a, str) and a]
        if not audiences or len(audiences) != len(given):
            raise LtiException("the id_token has no audience (aud)")
        if len(audiences) > 1:
            if not isinstance(azp, str) or azp not in audiences:
                raise LtiException("the id_token has several audiences and no authorised party (azp) among them")
            return azp
        if azp is not None and azp != audiences[0]:
            raise LtiException("the id_token's authorised party (azp) is not its audience")
        return audiences[0]

    def validate_registration(self) -> "StrictLaunch":
        issuer = self._jwt.get("body", {}).get("iss")
        if not isinstance(issuer, str) or issuer not in self._issuers:
            raise LtiException("the issuer (iss) is not a registered platform")
        try:
            super().validate_registration()
        except LtiException:
            raise
        except Exception as exc:          # pylti1p3's lookups raise plain Exception for an unknown client
            raise LtiException("the client id (aud) is not registered for this issuer") from exc
        return self

    def validate_jwt_signature(self) -> "StrictLaunch":
        registration = self._registration
        url = registration.get_key_set_url()
        if not url or not url.startswith(("http://", "https://")):
            raise LtiException("the platform's key set URL is not registered")
        public_key = self._key_sets.key(url, self._jwt["header"]["kid"])
        try:
            jwt.decode(self._get_id_token(), public_key, algorithms=["RS256"], audience=self.get_client_id(),
                       issuer=registration.get_issuer(), leeway=LEEWAY_SECONDS,
                       options={"require": ["exp", "iat", "iss", "aud", "sub", "nonce"]})
        except jwt.InvalidSignatureError as exc:
            raise NotSigned(f"the id_token is not signed by the platform: {exc}") from exc
        except jwt.InvalidTokenError as exc:
            raise LtiException(f"the id_token is not valid: {exc}") from exc
        return self

    def validate_deployment(self) -> "StrictLaunch":
        try:
            super().validate_deployment()
        except LtiException:
            raise LtiException("the deployment (deployment_id) is not registered") from None
        return self

    def validate_message(self) -> "StrictLaunch":
        body = self._jwt["body"]
        kind = body.get("https://purl.imsglobal.org/spec/lti/claim/message_type")
        if kind not in ("LtiResourceLinkRequest", "LtiDeepLinkingRequest"):
            raise LtiException(f"the message type {str(kind)[:40]!r} is not one this tool takes")
        if body.get("https://purl.imsglobal.org/spec/lti/claim/version") != "1.3.0":
            raise LtiException("the LTI version must be 1.3.0")
        super().validate_message()
        return self

    def consume_login(self) -> "StrictLaunch":
        """The login this browser started (its state) must be the one whose nonce the token carries, unused and
        recent; it is used up here, once (a second post of the token, or of another token on this login, fails)."""
        state, nonce = self._get_request_param("state"), self._jwt["body"].get("nonce")
        login = self._db.get(LtiLogin, state)
        if login is None or not isinstance(nonce, str) or login.nonce != nonce:
            raise LtiException("the id_token's nonce is not the one this login sent")
        if login.issuer != self._registration.get_issuer() or login.client_id != self._registration.get_client_id():
            raise LtiException("the id_token is from another platform than the login")
        if utcnow() - login.created > LOGIN_LIFETIME:
            raise LtiException("the login is too old; open the link in the LMS again")
        used = self._db.execute(update(LtiLogin).where(LtiLogin.state == state, LtiLogin.used.is_(None))
                                .values(used=utcnow())).rowcount
        self._db.commit()
        if used != 1:
            raise LtiException("this id_token was already used (a launch is accepted once)")
        return self

    def registration(self):
        return self._registration


def forget_old_logins(db, now: dt.datetime) -> None:
    """Logins past their lifetime are of no more use (a used one's token has expired too by then)."""
    db.execute(delete(LtiLogin).where(LtiLogin.created < now - LOGIN_LIFETIME - dt.timedelta(hours=1)))
