"""The platforms the tool trusts: autograder/lti.json in pylti1p3's ToolConfJsonFile format (issuer -> list of
{default, client_id, auth_login_url, auth_token_url, key_set_url, private_key_file, public_key_file,
deployment_ids}; key paths relative to autograder/), and the tool's key pair beside it. Both stay out of git.

`make lti-register ISSUER=... CLIENT_ID=... [DEPLOYMENT_ID=...]` (`python -m posenc_autograder lti-register`) makes
the key pair once, adds or replaces the registration, and prints what to paste into Canvas and Moodle.
"""
from __future__ import annotations

import functools
import json
import os
import pathlib
import sys
import urllib.parse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pylti1p3.service_connector import ServiceConnector
from pylti1p3.tool_config import ToolConfJsonFile

from posenc_autograder.course import Course, course_for_command

CONFIG_FILE = "autograder/lti.json"
PRIVATE_KEY, PUBLIC_KEY = "lti_private.key", "lti_public.key"      # relative to autograder/, as lti.json says
TOOL_TITLE = "posenc-course grader"

# The tool's URLs (a held-out platform drives exactly these): paths on the portal's public address.
LOGIN, LAUNCH, JWKS, CONFIG = "/lti/login", "/lti/launch", "/lti/jwks", "/lti/config"

SCOPES = ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score",
          "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"]

# Canvas Cloud's endpoints (one issuer for every Canvas school); other platforms are Moodle-like: below the issuer.
CANVAS = {"auth_login_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
          "auth_token_url": "https://sso.canvaslms.com/login/oauth2/token",
          "key_set_url": "https://sso.canvaslms.com/api/lti/security/jwks"}
MOODLE = {"auth_login_url": "/mod/lti/auth.php", "auth_token_url": "/mod/lti/token.php",
          "key_set_url": "/mod/lti/certs.php"}


def config_path(course: Course) -> pathlib.Path:
    return course.path(CONFIG_FILE)


def tool_config(course: Course) -> ToolConfJsonFile | None:
    """The registrations, or None where the tool is not set up (no lti.json). A registration that names no public
    key file gets the public half of its private key (its key set and key id come from it)."""
    path = config_path(course)
    if not path.is_file():
        return None
    config = ToolConfJsonFile(str(path))
    for issuer, entries in registrations(course).items():
        for entry in entries:
            client = entry.get("client_id") if config.check_iss_has_many_clients(issuer) else None
            if not entry.get("public_key_file"):
                private = signing_key(config.get_private_key(issuer, client))
                config.set_public_key(issuer, private.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode(), client)
    return config


@functools.lru_cache(maxsize=8)
def signing_key(pem: str):
    """The tool's private key, parsed once for each PEM it is given as (pyjwt parsed the PEM again at every signature,
    ~40 ms of CPU for a 2,048-bit key: each score sent and each class list read signs a token request)."""
    return serialization.load_pem_private_key(pem.encode(), None)


class ToolServiceConnector(ServiceConnector):
    """pylti1p3's connector to the platform's services (scores, class lists), signing its token requests with the
    parsed key (signing_key) instead of the PEM text."""

    def encode_jwt(self, message, private_key: str, headers: dict[str, str]) -> str:
        return jwt.encode(message, signing_key(private_key), algorithm="RS256", headers=headers)


def registrations(course: Course) -> dict[str, list[dict]]:
    """issuer -> its registrations, as lti.json holds them ({} without the file)."""
    path = config_path(course)
    if not path.is_file():
        return {}
    found = json.loads(path.read_text())
    return {issuer: entries if isinstance(entries, list) else [entries] for issuer, entries in found.items()}


def origin(url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else None


def platform_origins(course: Course) -> list[str]:
    """Where registered platforms show the tool from (their issuer's and login page's origins): the pages that may
    frame the portal (CSP frame-ancestors)."""
    found = set()
    for issuer, entries in registrations(course).items():
        found.add(origin(issuer))
        found |= {origin(entry.get("auth_login_url", "")) for entry in entries}
    return sorted(o for o in found if o)


# --- make lti-register ---------------------------------------------------------------------------------------

def ensure_keys(course: Course) -> bool:
    """The tool's RSA key pair beside lti.json (private key readable by its owner only); True if made now."""
    folder = config_path(course).parent
    private, public = folder / PRIVATE_KEY, folder / PUBLIC_KEY
    if private.is_file() and public.is_file():
        return False
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    folder.mkdir(parents=True, exist_ok=True)
    private.unlink(missing_ok=True)
    with open(os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
        handle.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return True


def platform_urls(issuer: str, given: dict[str, str | None]) -> dict[str, str]:
    """The platform's login, token and key set URLs: those given, else Canvas Cloud's or Moodle's under the issuer."""
    canvas = urllib.parse.urlsplit(issuer).hostname in ("canvas.instructure.com", "canvas.beta.instructure.com",
                                                        "canvas.test.instructure.com")
    defaults = CANVAS if canvas else {k: issuer.rstrip("/") + v for k, v in MOODLE.items()}
    return {key: given.get(key) or value for key, value in defaults.items()}


def register(course: Course, issuer: str, client_id: str, deployment_ids: list[str],
             urls: dict[str, str | None]) -> dict:
    """Add (or replace) one registration in lti.json, making the key pair if there is none; the entry written."""
    ensure_keys(course)
    found = registrations(course)
    entry = {"default": True, "client_id": client_id, **platform_urls(issuer, urls),
             "private_key_file": PRIVATE_KEY, "public_key_file": PUBLIC_KEY, "deployment_ids": deployment_ids}
    others = [e for e in found.get(issuer, []) if e.get("client_id") != client_id]
    for other in others:
        other["default"] = False
    found[issuer] = others + [entry]
    path = config_path(course)
    path.touch(mode=0o600, exist_ok=True)
    path.write_text(json.dumps(found, indent=2) + "\n")
    return entry


def canvas_configuration(base_url: str) -> dict:
    """The JSON a Canvas developer key takes ("Enter URL": <base>/lti/config)."""
    base = base_url.rstrip("/")
    return {
        "title": TOOL_TITLE,
        "description": "Upload exercise notebooks, read hidden-test feedback; scores go to the gradebook.",
        "oidc_initiation_url": base + LOGIN, "target_link_uri": base + LAUNCH, "public_jwk_url": base + JWKS,
        "scopes": SCOPES,
        "custom_fields": {"canvas_user_id": "$Canvas.user.id"},       # ties a launch to the collected zips' ids
        "extensions": [{"platform": "canvas.instructure.com", "privacy_level": "public", "domain":
                        urllib.parse.urlsplit(base).netloc, "settings": {"placements": [
                            {"placement": "assignment_selection", "message_type": "LtiDeepLinkingRequest",
                             "target_link_uri": base + LAUNCH},
                            {"placement": "link_selection", "message_type": "LtiDeepLinkingRequest",
                             "target_link_uri": base + LAUNCH},
                            {"placement": "course_navigation", "message_type": "LtiResourceLinkRequest",
                             "target_link_uri": base + LAUNCH, "text": TOOL_TITLE}]}}],
    }


def instructions(base_url: str, issuer: str, client_id: str, entry: dict) -> str:
    """What to paste into Canvas and Moodle (and what the tool was told of the platform)."""
    base = base_url.rstrip("/")
    return "\n".join([
        f"Registered {issuer} (client id {client_id}, deployments {', '.join(entry['deployment_ids']) or 'none yet'})"
        f" in {CONFIG_FILE}; the tool's keys are autograder/{PRIVATE_KEY} and autograder/{PUBLIC_KEY} (keep them "
        f"private; both are git-ignored).",
        f"  platform login {entry['auth_login_url']}", f"  platform token {entry['auth_token_url']}",
        f"  platform keys  {entry['key_set_url']}", "",
        "Canvas (Admin > Developer Keys > + Developer Key > + LTI Key):",
        f"  Method: Enter URL   JSON URL: {base + CONFIG}",
        f"  Redirect URIs: {base + LAUNCH}",
        "  Save, turn the key ON, copy its Client ID (the number under Details) into CLIENT_ID; then Settings > Apps >",
        "  + App > By Client ID in the course, and put the deployment id it shows into DEPLOYMENT_ID.", "",
        "Moodle (Site administration > Plugins > Activity modules > External tool > Manage tools > configure a tool",
        "manually):",
        f"  Tool URL: {base + LAUNCH}   LTI version: LTI 1.3   Public key type: Keyset URL",
        f"  Public keyset: {base + JWKS}",
        f"  Initiate login URL: {base + LOGIN}   Redirection URI(s): {base + LAUNCH}",
        "  Supports Deep Linking (Content-Item Message): on   Content Selection URL: " + base + LAUNCH,
        "  Services: IMS LTI Assignment and Grade Services 'Use this service for grade sync and column management';",
        "  IMS LTI Names and Role Provisioning 'Use this service to retrieve members' information as per privacy",
        "  settings'   Privacy: share launcher's name and email 'Always'.",
        "  Save, then 'View configuration details' gives the Client ID and Deployment ID for this command.", "",
        "Run this command again with CLIENT_ID and DEPLOYMENT_ID once the platform has given them; then restart "
        "`make portal`."])


def arguments(parser) -> None:
    parser.add_argument("--issuer", default="", help="the platform's issuer (Canvas: https://canvas.instructure.com;"
                        " Moodle: the site's address)")
    parser.add_argument("--client-id", default="", help="the client id the platform gave the tool")
    parser.add_argument("--deployment-id", action="append", default=[], help="a deployment id (repeatable)")
    parser.add_argument("--auth-login-url", help="the platform's OIDC authorisation URL (default: Canvas's, Moodle's)")
    parser.add_argument("--auth-token-url", help="the platform's OAuth2 token URL")
    parser.add_argument("--key-set-url", help="the platform's JWKS URL")
    parser.add_argument("--base-url", default=os.environ.get("PORTAL_URL", "http://127.0.0.1:8080"),
                        help="the portal's public address (default $PORTAL_URL or http://127.0.0.1:8080)")


def run_command(args) -> int:
    course = course_for_command(args.course)
    if not args.client_id:
        print("error: give the client id the platform gave the tool (--client-id; CLIENT_ID=... with make)",
              file=sys.stderr)
        return 2
    if not origin(args.issuer):
        print(f"error: the issuer must be an http(s) address, not {args.issuer!r}", file=sys.stderr)
        return 2
    urls = {"auth_login_url": args.auth_login_url, "auth_token_url": args.auth_token_url,
            "key_set_url": args.key_set_url}
    entry = register(course, args.issuer, args.client_id, [d for d in args.deployment_id if d], urls)
    print(instructions(args.base_url, args.issuer, args.client_id, entry))
    return 0
