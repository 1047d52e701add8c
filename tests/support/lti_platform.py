"""A simulated LTI 1.3 platform (an LMS) on 127.0.0.1, for the tool's tests: its own key set (rotatable), OIDC
authorisation endpoint, OAuth2 token endpoint (which checks the tool's RFC 7523 assertion against the tool's
public key), Names and Role Provisioning (two pages), line items' /scores (Canvas-like and Moodle-like URLs, with
failures on demand) and a deep-linking return endpoint that checks the tool's signed response.

`Platform.start()` serves it with uvicorn in a thread; `launch_browser(client, platform, ...)` plays the browser:
the tool's login, the platform's authorisation (an auto-posting form), the post to the tool's launch.
"""
from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import re
import secrets
import time
import urllib.parse
import uuid

import jwt
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from served import server_of, serving
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
CLIENT_ID, DEPLOYMENT = "tool-client-1", "deployment-1"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
AGS_SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
              "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
              "https://purl.imsglobal.org/spec/lti-ags/scope/score"]
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


def new_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key, kid: str) -> dict:
    found = json.loads(RSAAlgorithm.to_jwk(key.public_key()))
    return {**found, "kid": kid, "alg": "RS256", "use": "sig"}


@dataclasses.dataclass
class Received:
    path: str
    query: str
    body: dict
    at: float                         # time.time() when the platform took it
    content_type: str


class Platform:
    def __init__(self, tool_jwks=None):
        self.key, self.kid = new_key(), "platform-key-1"
        self.tool_jwks = tool_jwks                # callable: the tool's JWKS (to check its assertions and responses)
        self.base = ""
        self.members: list[dict] = []
        self.scores: list[Received] = []
        self.deep_link_responses: list[dict] = []
        self.line_items: list[dict] = []         # the context's line items (GET and POST /lineitems)
        self.tokens: dict[str, list[str]] = {}    # access token -> its scopes
        self.token_requests = 0
        self.fail_scores = 0                      # the next n score posts are answered 503
        self.jwks_fetches = 0
        self.serving = contextlib.ExitStack()     # the server, once started

    # --- keys and tokens ------------------------------------------------------------------------------

    @property
    def issuer(self) -> str:
        return self.base

    def rotate(self) -> None:
        """A new signing key under a new kid; the key set serves only the new one."""
        self.key, self.kid = new_key(), f"platform-key-{uuid.uuid4().hex[:8]}"

    def sign(self, claims: dict, key=None, kid: str | None = "default", alg: str = "RS256", headers=None) -> str:
        header = dict(headers or {})
        if kid is not None:
            header["kid"] = self.kid if kid == "default" else kid
        # the key object itself: pyjwt signs with it as it is, where a PEM would be parsed again at every signature
        # (RS256 with a 2,048-bit key: ~42 ms a signature from a PEM, 0.3 ms from the key object)
        return jwt.encode(claims, (key or self.key) if alg.startswith("RS") else key, algorithm=alg,
                          headers=header)

    def claims(self, nonce: str, *, sub="stu-1", roles=(LEARNER,), kind="LtiResourceLinkRequest", custom=None,
               target=None, line_item: str | None = None, nrps=True, deep_link=False, **extra) -> dict:
        """An id_token's claims as a platform sends them for a launch in context `course-1`."""
        now = int(time.time())
        body = {"iss": self.issuer, "aud": CLIENT_ID, "sub": sub, "nonce": nonce, "iat": now, "exp": now + 300,
                "name": f"Name of {sub}", "email": f"{sub}@example.edu",
                CLAIM + "message_type": kind, CLAIM + "version": "1.3.0", CLAIM + "deployment_id": DEPLOYMENT,
                CLAIM + "roles": list(roles), CLAIM + "target_link_uri": target or "https://tool/lti/launch",
                CLAIM + "context": {"id": "course-1", "title": "Positional encoding 101"},
                CLAIM + "resource_link": {"id": "link-1"}}
        if custom is not None:
            body[CLAIM + "custom"] = custom
        if line_item is not None:                 # "": a link without a line item (the context's container only)
            body["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = {
                "scope": AGS_SCOPES, "lineitems": self.base + "/lineitems", **({"lineitem": line_item} if line_item
                                                                                   else {})}
        if nrps:
            body["https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"] = {
                "context_memberships_url": self.base + "/nrps/course-1", "service_versions": ["2.0"]}
        if deep_link:
            body["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"] = {
                "deep_link_return_url": self.base + "/deep_link_return", "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"], "data": "opaque-data"}
        body.update(extra)
        return body

    # --- the platform's endpoints ---------------------------------------------------------------------

    async def jwks(self, request: Request):
        self.jwks_fetches += 1
        return JSONResponse({"keys": [public_jwk(self.key, self.kid)]})

    async def auth(self, request: Request):
        """The OIDC authorisation endpoint: an auto-posting form to the redirect_uri with the id_token that the
        pending launch (set by the test) makes for this login's nonce."""
        params = dict(request.query_params)
        if params.get("client_id") != CLIENT_ID or params.get("response_type") != "id_token" \
                or params.get("scope") != "openid" or params.get("response_mode") != "form_post":
            return Response("bad authorisation request", status_code=400)
        make = self.pending
        token = make(params["nonce"])
        form = (f'<form method="post" action="{html.escape(params["redirect_uri"])}">'
                f'<input type="hidden" name="id_token" value="{html.escape(token)}">'
                f'<input type="hidden" name="state" value="{html.escape(params["state"])}"></form>')
        return HTMLResponse(form)

    pending = None                                # nonce -> id_token, set before a launch

    def tool_key(self, token: str):
        kid = jwt.get_unverified_header(token).get("kid")
        for key in self.tool_jwks()["keys"]:
            if key.get("kid") == kid:
                return RSAAlgorithm.from_jwk(json.dumps(key))
        raise jwt.InvalidTokenError("unknown tool key")

    async def token(self, request: Request):
        """client_credentials with the tool's JWT assertion (RFC 7523), checked against the tool's public key."""
        self.token_requests += 1
        form = await request.form()
        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != \
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        assertion = form.get("client_assertion", "")
        try:
            claims = jwt.decode(assertion, self.tool_key(assertion), algorithms=["RS256"],
                                audience=self.base + "/token", options={"require": ["exp", "iat", "jti"]})
        except jwt.InvalidTokenError as exc:
            return JSONResponse({"error": "invalid_client", "why": str(exc)}, status_code=401)
        if claims.get("iss") != CLIENT_ID or claims.get("sub") != CLIENT_ID:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        access = secrets.token_urlsafe(16)
        self.tokens[access] = str(form.get("scope", "")).split()
        return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 3600,
                             "scope": form.get("scope", "")})

    def authorised(self, request: Request, scope: str) -> bool:
        given = request.headers.get("authorization", "")
        return given.startswith("Bearer ") and scope in self.tokens.get(given[7:], [])

    async def memberships(self, request: Request):
        if not self.authorised(request, NRPS_SCOPE):
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        page = int(request.query_params.get("page", "1"))
        half = (len(self.members) + 1) // 2
        members = self.members[:half] if page == 1 else self.members[half:]
        headers = {"link": f'<{self.base}/nrps/course-1?page=2>; rel="next"'} if page == 1 else {}
        return JSONResponse({"id": "course-1", "context": {"id": "course-1"}, "members": members}, headers=headers,
                            media_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json")

    async def post_scores(self, request: Request):
        if not self.authorised(request, "https://purl.imsglobal.org/spec/lti-ags/scope/score"):
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        if self.fail_scores > 0:
            self.fail_scores -= 1
            return Response("busy", status_code=503)
        self.scores.append(Received(request.url.path, request.url.query, json.loads(await request.body()),
                                    time.time(), request.headers.get("content-type", "")))
        return Response(status_code=200)

    async def line_item_container(self, request: Request):
        if not self.authorised(request, "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"):
            return JSONResponse({"error": "unauthorised"}, status_code=401)
        if request.method == "GET":
            return JSONResponse(self.line_items, media_type="application/vnd.ims.lis.v2.lineitemcontainer+json")
        made = {**json.loads(await request.body()), "id": f"{self.base}/lineitems/{100 + len(self.line_items)}"}
        self.line_items.append(made)
        return JSONResponse(made, media_type="application/vnd.ims.lis.v2.lineitem+json")

    async def deep_link_return(self, request: Request):
        form = await request.form()
        token = form.get("JWT", "")
        claims = jwt.decode(token, self.tool_key(token), algorithms=["RS256"], audience=self.issuer)
        self.deep_link_responses.append(claims)
        return HTMLResponse("<p>added</p>")

    def app(self) -> Starlette:
        return Starlette(routes=[
            Route("/jwks", self.jwks), Route("/auth", self.auth), Route("/token", self.token, methods=["POST"]),
            Route("/nrps/course-1", self.memberships),
            Route("/lineitems", self.line_item_container, methods=["GET", "POST"]),
            Route("/lineitems/{item}/scores", self.post_scores, methods=["POST"]),
            Route("/mod/lti/services.php/{course}/lineitems/{item}/lineitem/scores", self.post_scores,
                  methods=["POST"]),
            Route("/deep_link_return", self.deep_link_return, methods=["POST"])])

    def start(self) -> "Platform":
        self.base = self.serving.enter_context(serving(server_of(self.app()))).url
        return self

    def stop(self) -> None:
        self.serving.close()

    def registration(self) -> dict:
        """What `make lti-register` is told of this platform."""
        return {"issuer": self.issuer, "client_id": CLIENT_ID, "deployment_ids": [DEPLOYMENT],
                "auth_login_url": self.base + "/auth", "auth_token_url": self.base + "/token",
                "key_set_url": self.base + "/jwks"}


FORM_FIELD = re.compile(r'name="(id_token|state)" value="([^"]*)"')


def login(client, platform: Platform, **params):
    """The platform's third-party initiated login at the tool: the tool's answer (a redirect to /auth)."""
    data = {"iss": platform.issuer, "login_hint": "hint-1", "target_link_uri": "https://testserver/lti/launch",
            "client_id": CLIENT_ID, "lti_deployment_id": DEPLOYMENT, **params}
    return client.post("/lti/login", data=data, follow_redirects=False)


def authorise(platform: Platform, location: str, make) -> dict[str, str]:
    """The browser at the platform's authorisation URL, with `make(nonce)` as the id_token it issues: the form's
    fields (id_token, state)."""
    platform.pending = make
    answer = requests.get(location, timeout=10)
    assert answer.status_code == 200, answer.text
    return {k: html.unescape(v) for k, v in FORM_FIELD.findall(answer.text)}


def launch_browser(client, platform: Platform, make=None, **claims):
    """Login, authorisation and launch as one browser does them: the tool's answer to the launch and the form
    posted (so a test can post it again)."""
    make = make or (lambda nonce: platform.sign(platform.claims(nonce, **claims)))
    started = login(client, platform)
    assert started.status_code == 302, started.text
    fields = authorise(platform, started.headers["location"], make)
    return client.post("/lti/launch", data=fields, follow_redirects=False), fields


def query_of(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
