"""The portal as an LTI 1.3 tool, driven by a simulated platform on 127.0.0.1 (tests/support/lti_platform.py): the
flows (resource-link launch, deep linking, roster, score passback with retries) and, one test each, the attacks the
launch must refuse with a 4xx, a reason and no session."""
import datetime as dt
import json
import re
import shutil
import subprocess
import time

import jwt
import pytest
from fixture_submissions import ASSIGNMENT, FULL, make_course
from lti_platform import (
    CLIENT_ID,
    DEPLOYMENT,
    INSTRUCTOR,
    LEARNER,
    Platform,
    authorise,
    launch_browser,
    login,
    new_key,
    query_of,
)
from notebook_tools import ROOT
from sqlalchemy import func, select, update

from conftest import client_for, notebook_bytes, upload
from posenc_autograder.course import Course
from posenc_autograder.intake import attempts, roster
from posenc_autograder.portal import auth
from posenc_autograder.portal.lti import adapter, registration
from posenc_autograder.portal.lti.models import LtiLogin, LtiScore, LtiUser
from posenc_autograder.portal.models import Session, Student
from posenc_autograder.portal.routes import create_app
from posenc_autograder.records import gradebook


@pytest.fixture(scope="module")
def platform():
    running = Platform().start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def tool_keys(tmp_path_factory):
    """The folder of a tool key pair made once a module by `make lti-register`'s own code (2048-bit RSA, ~0.1 CPU-s:
    a pair made for each test was half the file's CPU). Each course starts with a copy, so its registration finds
    its keys made; test_lti_register_writes_... makes a pair of its own."""
    course = Course(make_course(tmp_path_factory.mktemp("tool-keys") / "course"))
    registration.ensure_keys(course)
    return registration.config_path(course).parent


@pytest.fixture
def tool(course, portal, platform, tool_keys):
    """The portal registered with the platform (as `make lti-register` does) and a browser on it over https."""
    folder = registration.config_path(course).parent
    folder.mkdir(parents=True, exist_ok=True)
    for name in (registration.PRIVATE_KEY, registration.PUBLIC_KEY):
        shutil.copy2(tool_keys / name, folder / name)              # the private key's mode (owner only) kept
    found = platform.registration()
    registration.register(course, found["issuer"], CLIENT_ID, [DEPLOYMENT],
                          {k: found[k] for k in ("auth_login_url", "auth_token_url", "key_set_url")})
    platform.tool_jwks = portal.lti.jwks
    platform.scores.clear()
    platform.members = []
    platform.fail_scores = 0
    app = create_app(portal, start_worker=False)
    browser = client_for(app)
    browser.base_url = "https://testserver"
    return browser


def sessions_in(portal) -> int:
    with portal.sessions() as db:
        return db.execute(select(func.count()).select_from(Session)).scalar_one()


def refused(answer, portal, status=400, reason=""):
    """A refusal: the status, its reason on the page, no session cookie and no session row."""
    assert answer.status_code == status, (answer.status_code, answer.text[-600:])
    assert reason in answer.text, answer.text[-600:]
    assert auth.SESSION_COOKIE not in answer.headers.get("set-cookie", "")
    assert sessions_in(portal) == 0


# --- flows ------------------------------------------------------------------------------------------------------

def test_a_student_lands_on_the_assignment_named_by_the_link_signed_in_as_the_lms_user(tool, portal, platform):
    answer, _ = launch_browser(tool, platform, sub="stu-7", custom={"assignment": ASSIGNMENT})
    assert answer.status_code == 303 and answer.headers["location"] == f"/assignments/{ASSIGNMENT}"
    assert "samesite=lax" in answer.headers["set-cookie"].lower() or "samesite=none" in \
        answer.headers["set-cookie"].lower()
    page = tool.get(f"/assignments/{ASSIGNMENT}")
    assert page.status_code == 200 and "Upload" in page.text
    launch_browser(tool, platform, sub="stu-7", custom={"assignment": ASSIGNMENT})
    assert sessions_in(portal) == 1                                  # a new launch closes the session it replaces
    with portal.sessions() as db:
        assert db.get(Student, "stu-7").name == "Name of stu-7"
        user = db.execute(select(LtiUser)).scalar_one()
        assert (user.sub, user.student_id, user.email) == ("stu-7", "stu-7", "stu-7@example.edu")


def test_a_target_link_uri_ending_in_the_assignment_names_it_too(tool, platform):
    answer, _ = launch_browser(tool, platform, target=f"https://testserver/assignments/{ASSIGNMENT}")
    assert answer.headers["location"] == f"/assignments/{ASSIGNMENT}"
    other, _ = launch_browser(tool, platform, sub="stu-2", target="https://testserver/assignments/no_such_thing")
    assert other.headers["location"] == "/"                    # a name the portal does not offer opens nothing


def test_the_lms_user_is_tied_to_the_rosters_student_with_that_lms_id(tool, course, portal, platform):
    roster.save(course, {("alice", ASSIGNMENT): {"student_id": "alice", "assignment": ASSIGNMENT, "lms": "canvas",
                                                 "lms_user_id": "4242", "name": "Alice A"}})
    launch_browser(tool, platform, sub="0c8e-uuid-of-alice", custom={"assignment": ASSIGNMENT,
                                                                     "canvas_user_id": "4242"})
    with portal.sessions() as db:
        assert db.execute(select(LtiUser.student_id)).scalar_one() == "alice"
    assert "alice" in tool.get("/").text


def test_instructors_by_role_reach_the_instructor_pages_and_students_never_do(tool, portal, platform):
    teacher, _ = launch_browser(tool, platform, sub="prof", roles=[INSTRUCTOR])
    assert teacher.headers["location"] == "/instructor"
    assert "Class progress" in tool.get("/instructor").text
    for role in [LEARNER, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor",
                 "urn:made-up#Instructor", "http://purl.imsglobal.org/vocab/lis/v2/membership#InstructorX"]:
        student = client_for(create_app(portal, start_worker=False))
        student.base_url = "https://testserver"
        answer, _ = launch_browser(student, platform, sub="s-" + str(abs(hash(role)) % 1000), roles=[role],
                                   custom={"assignment": ASSIGNMENT, "role": "Instructor"})
        assert answer.headers["location"] == f"/assignments/{ASSIGNMENT}", role
        assert "Class progress" not in student.get("/instructor").text
        assert student.get("/instructor/progress.json").status_code == 403
        assert student.get("/instructor/lti").status_code == 403
        assert student.get("/instructor/dashboard").status_code == 403


def test_deep_linking_returns_a_signed_resource_link_for_the_chosen_assignment(tool, portal, platform):
    answer, _ = launch_browser(tool, platform, sub="prof", roles=[INSTRUCTOR], kind="LtiDeepLinkingRequest",
                               deep_link=True)
    assert answer.status_code == 200 and ASSIGNMENT in answer.text
    fields = dict(re.findall(r'name="(csrf|choice)" value="([^"]+)"', answer.text))
    back = tool.post("/lti/deep-link", data={**fields, "assignment": ASSIGNMENT})
    assert back.status_code == 200
    policy = back.headers["content-security-policy"]
    assert f"form-action 'self' {platform.base}" in policy             # the form may post to the platform
    assert "frame-ancestors 'self' " + platform.base in policy
    action = re.search(r'<form method="post" action="([^"]+)" data-auto-submit', back.text).group(1)
    token = re.search(r'name="JWT" value="([^"]+)"', back.text).group(1)
    assert action == platform.base + "/deep_link_return"
    import requests
    assert requests.post(action, data={"JWT": token}, timeout=10).status_code == 200   # verified with the tool's key
    claims = platform.deep_link_responses[-1]
    assert claims["https://purl.imsglobal.org/spec/lti/claim/message_type"] == "LtiDeepLinkingResponse"
    assert claims["https://purl.imsglobal.org/spec/lti/claim/version"] == "1.3.0"
    assert claims["iss"] == CLIENT_ID and claims["aud"] == [platform.issuer]
    assert claims["https://purl.imsglobal.org/spec/lti/claim/deployment_id"] == DEPLOYMENT
    assert claims["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-data"
    item, = claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    assert item["type"] == "ltiResourceLink" and item["custom"] == {"assignment": ASSIGNMENT}
    assert item["url"] == "https://testserver/lti/launch" and item["lineItem"]["scoreMaximum"] == FULL
    again = tool.post("/lti/deep-link", data={**fields, "assignment": ASSIGNMENT})
    assert again.status_code == 403                                    # a choice is returned once


def test_a_deep_linking_request_that_names_its_assignment_is_answered_at_once(tool, platform):
    answer, _ = launch_browser(tool, platform, sub="prof", roles=[INSTRUCTOR], kind="LtiDeepLinkingRequest",
                               deep_link=True, custom={"assignment": ASSIGNMENT})
    assert f"form-action 'self' {platform.base}" in answer.headers["content-security-policy"]
    token = re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1)
    claims = jwt.decode(token, options={"verify_signature": False})
    item, = claims["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    assert item["custom"] == {"assignment": ASSIGNMENT}


def test_a_student_cannot_deep_link(tool, portal, platform):
    answer, _ = launch_browser(tool, platform, kind="LtiDeepLinkingRequest", deep_link=True)
    refused(answer, portal, 403, "only an instructor")


def test_names_and_roles_fill_the_roster_from_every_page(tool, portal, platform):
    platform.members = [{"user_id": f"m{i}", "name": f"Member {i}", "email": f"m{i}@example.edu", "status": "Active",
                         "roles": [LEARNER]} for i in range(5)] + [
        {"user_id": "gone", "name": "Dropped", "status": "Inactive", "roles": [LEARNER]}]
    launch_browser(tool, platform, sub="prof", roles=[INSTRUCTOR])
    synced = portal.lti.sync_roster()
    assert synced == [("Positional encoding 101", 5, "")]
    with portal.sessions() as db:
        users = {u.sub: (u.student_id, u.name, u.email) for u in db.execute(select(LtiUser)).scalars()}
        assert db.get(Student, "m4").name == "Member 4"
    assert users["m0"] == ("m0", "Member 0", "m0@example.edu") and "m4" in users and "gone" not in users
    page = tool.get("/instructor/lti").text
    assert "Positional encoding 101" in page and "Member 3" in page and "m3@example.edu" in page


def graded_launch(tool, portal, platform, line_item, sub="stu-1"):
    launch_browser(tool, platform, sub=sub, custom={"assignment": ASSIGNMENT}, line_item=line_item)
    assert upload(tool, notebook_bytes(sub)).status_code == 303
    portal.worker.run_until_idle()


def test_a_graded_attempt_sends_the_counted_score_to_the_line_item(tool, course, portal, platform):
    graded_launch(tool, portal, platform, platform.base + "/lineitems/9")
    recorded, = attempts.of(course, "stu-1", ASSIGNMENT)           # the one record, under the LTI door
    assert recorded.door == "lti" and recorded.source == "portal attempt 1"
    assert portal.lti.outbox.send_due().sent == 1
    got, = platform.scores
    assert got.path == "/lineitems/9/scores" and got.content_type == "application/vnd.ims.lis.v1.score+json"
    assert {k: got.body[k] for k in ("userId", "scoreGiven", "scoreMaximum", "activityProgress", "gradingProgress")} \
        == {"userId": "stu-1", "scoreGiven": 0, "scoreMaximum": FULL, "activityProgress": "Completed",
            "gradingProgress": "FullyGraded"}
    stamp = dt.datetime.fromisoformat(got.body["timestamp"])
    assert stamp.utcoffset() == dt.timedelta(0) and abs(time.time() - stamp.timestamp()) < 60
    assert portal.lti.outbox.sync() == 0 and portal.lti.outbox.send_due().sent == 0     # nothing new: nothing sent


def test_the_tools_key_is_parsed_once_for_every_token_request_it_signs(tool, portal, platform, monkeypatch):
    """Each send of scores asks the platform for a token with an assertion signed by the tool's key (which the
    platform checks against the tool's key set): the key's PEM is parsed once, not at every signature (~40 ms each)."""
    parsed = []          # the private keys' PEMs parsed (pyjwt and jwcrypto try a public key's as private first)

    def counting(parse):
        def parsing(data, *args, **kwargs):
            key = parse(data, *args, **kwargs)
            parsed.append(data)
            return key
        return parsing
    monkeypatch.setattr(jwt.algorithms, "load_pem_private_key", counting(jwt.algorithms.load_pem_private_key))
    monkeypatch.setattr(registration.serialization, "load_pem_private_key",
                        counting(registration.serialization.load_pem_private_key))
    registration.signing_key.cache_clear()
    for student in ("stu-1", "stu-2"):
        graded_launch(tool, portal, platform, platform.base + "/lineitems/9", sub=student)
        assert portal.lti.outbox.send_due().sent == 1              # a new connector each send: a new token request
    assert [got.body["userId"] for got in platform.scores] == ["stu-1", "stu-2"]
    assert len(parsed) == 1


def test_a_moodle_line_item_gets_scores_before_its_query(tool, portal, platform):
    graded_launch(tool, portal, platform, platform.base + "/mod/lti/services.php/2/lineitems/7/lineitem?type_id=1")
    portal.lti.outbox.send_due()
    got, = platform.scores
    assert (got.path, got.query) == ("/mod/lti/services.php/2/lineitems/7/lineitem/scores", "type_id=1")


def test_a_link_without_a_line_item_finds_or_makes_the_assignments_in_the_container(tool, portal, platform):
    platform.line_items.clear()
    graded_launch(tool, portal, platform, "")
    portal.lti.outbox.send_due()
    made, = platform.line_items
    assert (made["tag"], made["scoreMaximum"]) == (ASSIGNMENT, FULL)
    assert [s.path for s in platform.scores] == [made["id"].removeprefix(platform.base) + "/scores"]
    graded_launch(tool, portal, platform, "", sub="stu-2")            # a second student: the same line item
    portal.lti.outbox.send_due()
    assert len(platform.line_items) == 1 and platform.scores[-1].path == platform.scores[0].path


def test_a_manual_grade_or_regrade_that_changes_the_counted_score_is_sent_again(tool, course, portal, platform):
    graded_launch(tool, portal, platform, platform.base + "/lineitems/3")
    portal.lti.outbox.send_due()
    with gradebook.open_gradebook(course) as gb:                 # the instructor grades a test by hand
        grade = min((g for g in gb.find_submission(ASSIGNMENT, "stu-1").notebooks[0].grades if g.max_score),
                    key=lambda g: g.name)              # a test worth points: the gradebook's order is not fixed
        grade.manual_score = grade.max_score
        gb.db.commit()
        expected = grade.max_score
    assert portal.lti.outbox.sync() == 1
    portal.lti.outbox.send_due()
    assert [s.body["scoreGiven"] for s in platform.scores] == [0, expected]


def test_a_failed_passback_is_kept_shown_to_the_instructor_and_retried_with_backoff(tool, portal, platform):
    platform.fail_scores = 2
    graded_launch(tool, portal, platform, platform.base + "/lineitems/5")
    outbox = portal.lti.outbox
    assert outbox.send_due().failed == 1 and platform.scores == []
    unsent, = outbox.unsent()
    assert "503" in unsent["error"] and unsent["tries"] == 1
    assert outbox.send_due().failed == 0                         # not due yet: it waits
    launch_browser(tool, platform, sub="prof", roles=[INSTRUCTOR])
    assert 'href="/instructor/lti"' in tool.get("/instructor").text
    page = tool.get("/instructor/lti").text
    assert "Scores not yet in the LMS" in page and "503" in page and "stu-1" in page
    waits = []
    for _ in range(2):
        with portal.sessions() as db:
            row = db.execute(select(LtiScore)).scalar_one()
            waits.append((row.next_try - outbox.now()).total_seconds())
            db.execute(update(LtiScore).values(next_try=outbox.now()))
            db.commit()
        outbox.send_due()
    assert waits[0] < waits[1] if len(platform.scores) == 1 else False      # the wait doubled, then it went through
    assert len(platform.scores) == 1 and outbox.unsent() == []


# --- attacks: each refused with a 4xx, its reason, and no session --------------------------------------------

def forged(platform, change=None, **sign):
    def make(nonce):
        claims = platform.claims(nonce)
        if change:
            change(claims)
        return platform.sign(claims, **sign)
    return make


def test_a_token_signed_by_another_key_is_refused(tool, portal, platform):
    answer, _ = launch_browser(tool, platform, make=forged(platform, key=new_key()))
    refused(answer, portal, 401, "Signature verification failed")


def test_an_unknown_key_id_refreshes_the_key_set_and_a_key_not_in_it_is_refused(tool, portal, platform):
    now = [0.0]
    portal.lti.key_sets.clock = lambda: now[0]                    # the key sets' clock, moved by the test
    assert launch_browser(tool, platform)[0].status_code == 303
    fetched = platform.jwks_fetches
    assert launch_browser(tool, platform)[0].status_code == 303
    assert platform.jwks_fetches == fetched                       # cached
    platform.rotate()
    now[0] += adapter.KEYS_REFETCH_SECONDS + 0.1                  # past the shortest wait between two fetches
    answer, _ = launch_browser(tool, platform, sub="stu-9")
    assert answer.status_code == 303 and platform.jwks_fetches == fetched + 1      # rotated: fetched again
    with portal.sessions() as db:
        db.execute(Session.__table__.delete())
        db.commit()
    now[0] += adapter.KEYS_REFETCH_SECONDS + 0.1
    answer, _ = launch_browser(tool, platform, make=forged(platform, key=new_key(), kid="no-such-kid"))
    refused(answer, portal, 401, "no key")


def test_unsigned_and_symmetric_tokens_are_refused(tool, portal, platform):
    public = b"a shared secret the platform never had" * 2              # PyJWT will not sign with a public key
    for make in (lambda n: jwt.encode(platform.claims(n), None, algorithm="none", headers={"kid": platform.kid}),
                 lambda n: jwt.encode(platform.claims(n), public, algorithm="HS256", headers={"kid": platform.kid})):
        answer, _ = launch_browser(tool, platform, make=make)
        refused(answer, portal, 400, "RS256")


@pytest.mark.parametrize("change, reason", [
    (lambda c: c.update(iss="https://evil.example"), "not a registered platform"),
    (lambda c: c.update(aud="someone-else"), "client id"),
    (lambda c: c.update(aud=[CLIENT_ID, "other"]), "several audiences"),
    (lambda c: c.update(aud=[CLIENT_ID, "other"], azp="other"), "client id"),
    (lambda c: c.update(aud=CLIENT_ID, azp="other"), "authorised party"),
    (lambda c: c.update(exp=int(time.time()) - 120), "expired"),
    (lambda c: c.update(iat=int(time.time()) + 600, exp=int(time.time()) + 900), "not yet valid"),
    (lambda c: c.pop("exp"), "exp"),
    (lambda c: c.update({"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "other-deployment"}),
     "deployment"),
    (lambda c: c.update({"https://purl.imsglobal.org/spec/lti/claim/message_type": "LtiSomethingElse"}),
     "message type"),
    (lambda c: c.update({"https://purl.imsglobal.org/spec/lti/claim/version": "1.1"}), "version"),
    (lambda c: c.update(nonce="a-nonce-of-my-own"), "nonce"),
], ids=["iss", "aud", "several-aud-no-azp", "azp-other-client", "azp-not-aud", "expired", "iat-future",
        "no-exp", "deployment", "message-type", "version", "nonce"])
def test_a_token_with_a_bad_claim_is_refused(tool, portal, platform, change, reason):
    answer, _ = launch_browser(tool, platform, make=forged(platform, change))
    refused(answer, portal, 400, reason)


def test_small_clock_skew_is_allowed_and_several_audiences_with_azp_are_accepted(tool, portal, platform):
    def skewed(claims):
        claims.update(iat=int(time.time()) + 20, exp=int(time.time()) - 20, aud=["other", CLIENT_ID], azp=CLIENT_ID)
    answer, _ = launch_browser(tool, platform, make=forged(platform, skewed))
    assert answer.status_code == 303


def test_an_id_token_posted_a_second_time_is_refused(tool, portal, platform):
    answer, fields = launch_browser(tool, platform)
    assert answer.status_code == 303
    with portal.sessions() as db:
        db.execute(Session.__table__.delete())
        db.commit()
    refused(tool.post("/lti/launch", data=fields, follow_redirects=False), portal, 400, "already used")


def test_the_nonce_is_bound_to_the_login_that_asked_for_it(tool, portal, platform):
    """An attacker's own login gives them a nonce and an id_token; posted in the victim's browser with the victim's
    state it is refused, though that nonce is one the tool issued and has not seen used."""
    attacker = client_for(create_app(portal, start_worker=False))
    attacker.base_url = "https://testserver"
    theirs = authorise(platform, login(attacker, platform).headers["location"],
                       lambda n: platform.sign(platform.claims(n, sub="attacker")))
    mine = login(tool, platform)
    state = query_of(mine.headers["location"])["state"]
    refused(tool.post("/lti/launch", data={"id_token": theirs["id_token"], "state": state}, follow_redirects=False),
            portal, 400, "nonce")


def test_the_state_is_bound_to_the_browser_that_started_the_login(tool, portal, platform):
    started = login(tool, platform)
    fields = authorise(platform, started.headers["location"], lambda n: platform.sign(platform.claims(n)))
    other = client_for(create_app(portal, start_worker=False))         # a browser without the state cookie
    other.base_url = "https://testserver"
    refused(other.post("/lti/launch", data=fields, follow_redirects=False), portal, 400, "State not found")
    tool.cookies.clear()
    for name, value in [("lti1p3-" + fields["state"], "state-someone-else")]:
        tool.cookies.set(name, value)
    refused(tool.post("/lti/launch", data=fields, follow_redirects=False), portal, 400, "State not found")


def test_a_login_from_an_unregistered_platform_is_refused(tool, portal, platform):
    answer = login(tool, platform, iss="https://evil.example")
    refused(answer, portal, 400, "not a registered platform")
    with portal.sessions() as db:
        assert db.execute(select(func.count()).select_from(LtiLogin)).scalar_one() == 0


# --- cookies, frames, registration --------------------------------------------------------------------------

def test_the_state_cookie_survives_a_cross_site_post_with_its_fallback(tool, portal, platform):
    cookies = login(tool, platform).headers.get_list("set-cookie")
    state, legacy = (next(c for c in cookies if re.match(rf"lti1p3-{kind}state-", c)) for kind in ("", "legacy-"))
    assert "samesite=none" in state.lower() and "secure" in state.lower() and "httponly" in state.lower()
    assert "samesite" not in legacy.lower()          # for browsers that drop SameSite=None cookies
    plain_http = client_for(create_app(portal, start_worker=False))
    only = login(plain_http, platform).headers.get_list("set-cookie")
    assert len(only) == 1 and "lti1p3-legacy-state-" in only[0] and "samesite" not in only[0].lower()
    fields = authorise(platform, login(tool, platform).headers["location"],
                       lambda n: platform.sign(platform.claims(n)))
    for name in list(tool.cookies):
        if not name.startswith("lti1p3-legacy-"):
            del tool.cookies[name]
    answer = tool.post("/lti/launch", data=fields, follow_redirects=False)
    assert answer.status_code == 303                 # the fallback cookie alone carries the state
    assert "samesite=none" in answer.headers["set-cookie"].lower()       # the session works inside the LMS's frame


def test_registered_platforms_may_frame_the_portal_and_no_one_else(course, portal, tool, platform):
    answer = tool.get("/")
    assert f"frame-ancestors 'self' {platform.base}" in answer.headers["content-security-policy"]
    assert "x-frame-options" not in answer.headers
    registration.config_path(course).unlink()
    answer = tool.get("/")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert answer.headers["x-frame-options"] == "DENY"


def test_a_broken_registration_file_stops_the_lms_door_only(tool, course, portal, platform):
    registration.config_path(course).write_text("{not json")
    assert "lti.json cannot be read" in login(tool, platform).text
    assert tool.get("/").status_code == 200 and tool.get("/instructor").status_code == 200


def test_a_private_link_still_signs_in_beside_the_lti_door(tool, portal):
    token = portal.new_link("carol", "Carol")
    assert tool.get(f"/s/{token}").status_code == 200 and "carol" in tool.get("/").text


def test_jwks_and_canvas_configuration_name_the_tools_key_and_urls(tool, course, portal, platform):
    keys = tool.get("/lti/jwks").json()["keys"]
    assert len(keys) == 1 and keys[0]["kty"] == "RSA" and keys[0]["alg"] == "RS256" and "d" not in keys[0]
    path = registration.config_path(course)
    written = json.loads(path.read_text())
    for entry in written[platform.issuer]:
        del entry["public_key_file"]                               # a registration written with its private key only
    path.write_text(json.dumps(written))
    assert tool.get("/lti/jwks").json()["keys"] == keys              # the same key, from the private half
    config = tool.get("/lti/config").json()
    assert (config["oidc_initiation_url"], config["target_link_uri"], config["public_jwk_url"]) == (
        "https://testserver/lti/login", "https://testserver/lti/launch", "https://testserver/lti/jwks")
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in config["scopes"]


def test_lti_register_writes_the_registration_and_keys_out_of_git_and_says_what_to_paste(tmp_path, capsys):
    from conftest import make_course
    from posenc_autograder import cli
    root = make_course(tmp_path / "c")
    assert cli.main(["lti-register", "--course", str(root), "--issuer", "https://moodle.example.edu",
                     "--client-id", "abc", "--deployment-id", "7", "--base-url", "https://grader.example.edu"]) == 0
    said = capsys.readouterr().out
    assert "https://grader.example.edu/lti/config" in said and "Initiate login URL: https://grader.example.edu" \
        "/lti/login" in said and "Canvas" in said and "Moodle" in said
    written = json.loads((root / "autograder" / "lti.json").read_text())
    entry, = written["https://moodle.example.edu"]
    assert entry["auth_login_url"] == "https://moodle.example.edu/mod/lti/auth.php"
    assert entry["private_key_file"] == "lti_private.key" and entry["deployment_ids"] == ["7"]
    assert (root / "autograder" / "lti_private.key").stat().st_mode & 0o077 == 0
    from pylti1p3.tool_config import ToolConfJsonFile
    assert ToolConfJsonFile(str(root / "autograder" / "lti.json")).find_registration_by_params(
        "https://moodle.example.edu", "abc").get_tool_private_key().startswith("-----BEGIN PRIVATE KEY")
    ignored = subprocess.run(["git", "check-ignore", "autograder/lti.json", "autograder/lti_private.key",
                              "autograder/lti_public.key"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    assert ignored == ["autograder/lti.json", "autograder/lti_private.key", "autograder/lti_public.key"]
