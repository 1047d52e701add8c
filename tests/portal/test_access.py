"""No one where they do not belong: every student URL with another student's ids, the instructor's pages, forged
and revoked tokens, the failed sign-in limit, CSRF on every form, and the headers of every page."""
import datetime as dt
import re

import pytest
from fixture_submissions import ASSIGNMENT
from sqlalchemy import func, select

from conftest import CSRF, client_for, csrf_of, notebook_bytes, upload
from posenc_autograder.portal import auth
from posenc_autograder.portal.models import Attempt, Policy, Session, Student

ATTEMPT_URLS = ["/attempts/{id}", "/attempts/{id}/status.json", "/attempts/{id}/status.events",
                "/attempts/{id}/feedback", "/attempts/{id}/notebook"]
INSTRUCTOR_POSTS = {"/instructor/policy/" + ASSIGNMENT: {"counts": "last", "feedback_before": "none",
                                                          "max_attempts": "1"},
                    "/instructor/extension": {"student": "bob", "assignment": ASSIGNMENT,
                                              "deadline": "2030-01-01T00:00"},
                    "/instructor/revoke": {"student": "bob"}, "/instructor/link": {"student": "bob"},
                    "/instructor/lti/roster": {}, "/instructor/lti/send": {},
                    "/lti/deep-link": {"choice": "x", "assignment": ASSIGNMENT}}
INSTRUCTOR_GETS = ["/instructor/progress.json", "/instructor/dashboard", "/instructor/lti"]
LTI_DOOR = {"/lti/login", "/lti/launch", "/lti/jwks", "/lti/config"}      # an LMS's: tests/portal/test_lti.py
HUB_DOOR = {"/hub/login", "/oauth_callback"}                             # JupyterHub's: tests/portal/test_hub.py


def instructor_client(app, portal):
    client = client_for(app)
    csrf = CSRF.search(client.get("/instructor").text).group(1)
    secret = portal.secret_file.read_text().strip()
    assert client.post("/instructor/sign-in", data={"csrf": csrf, "secret": secret}).status_code == 200
    return client


def attempts_in(portal) -> int:
    with portal.sessions() as db:
        return db.execute(select(func.count()).select_from(Attempt)).scalar_one()


@pytest.fixture
def two_students(app, portal):
    """alice and bob signed in; bob has one graded attempt."""
    alice, bob = client_for(app, portal, "alice"), client_for(app, portal, "bob")
    assert upload(bob, notebook_bytes("bob's")).status_code == 303
    portal.worker.run_until_idle()
    with portal.sessions() as db:
        bobs = db.execute(select(Attempt.id).where(Attempt.student_id == "bob")).scalar_one()
    return alice, bob, bobs


def test_every_url_is_tested_here(app):
    """A new URL must be added to these tests: the routes are compared with the lists above."""
    paths = {route.path for route in app.routes if route.path != "/static"}
    tested = ({p.replace("{id}", "{attempt_id:int}") for p in ATTEMPT_URLS} | set(INSTRUCTOR_POSTS)
              | set(INSTRUCTOR_GETS) | LTI_DOOR | HUB_DOOR
              | {"/", "/s/{token}", "/sign-out", "/assignments/{assignment}", "/assignments/{assignment}/upload",
                 "/instructor", "/instructor/sign-in"})
    tested = {p.replace("/" + ASSIGNMENT, "/{assignment}") if p.startswith("/instructor/policy") else p for p in tested}
    assert paths == tested


def test_another_students_attempt_feedback_and_file_are_not_found(two_students):
    alice, bob, bobs = two_students
    for url in ATTEMPT_URLS:
        assert bob.get(url.format(id=bobs)).status_code == 200, url          # the owner reaches each
        answer = alice.get(url.format(id=bobs))
        assert answer.status_code == 404, url
        assert "bob" not in answer.text and "# bob's" not in answer.text
    assert "bob" not in alice.get("/").text
    assert "bob" not in alice.get(f"/assignments/{ASSIGNMENT}").text


def test_signed_out_visitors_reach_nothing(two_students, app):
    _, _, bobs = two_students
    anonymous = client_for(app)
    for url in ATTEMPT_URLS:
        assert anonymous.get(url.format(id=bobs)).status_code == 403, url
    assert anonymous.get(f"/assignments/{ASSIGNMENT}").status_code == 403
    assert upload(anonymous, notebook_bytes("anon"), csrf="x").status_code == 403


def test_instructor_pages_need_the_instructors_session(two_students, app, portal):
    alice, _, _ = two_students
    for client in (alice, client_for(app)):
        for url in INSTRUCTOR_GETS:
            assert client.get(url).status_code == 403, url
        assert "secret" in client.get("/instructor").text                   # the sign-in form, nothing more
        for url, fields in INSTRUCTOR_POSTS.items():
            assert client.post(url, data={**fields, "csrf": csrf_of(alice)}).status_code == 403, url
    with portal.sessions() as db:
        assert db.get(Policy, ASSIGNMENT) is None
    assert alice.get(f"/assignments/{ASSIGNMENT}").status_code == 200       # bob's and alice's links still work
    teacher = instructor_client(app, portal)
    for url in INSTRUCTOR_GETS:
        assert teacher.get(url).status_code == 200, url


def test_a_wrong_instructor_secret_is_refused(app):
    client = client_for(app)
    csrf = CSRF.search(client.get("/instructor").text).group(1)
    assert client.post("/instructor/sign-in", data={"csrf": csrf, "secret": "guess" * 8}).status_code == 403
    assert client.get("/instructor/progress.json").status_code == 403


def test_forged_and_revoked_tokens_sign_no_one_in(app, portal):
    token = portal.new_link("carol")
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    client = client_for(app)
    assert client.get(f"/s/{forged}").status_code == 403
    assert client.get(f"/assignments/{ASSIGNMENT}").status_code == 403
    assert client.get(f"/s/{token}").status_code == 200
    assert client.get(f"/assignments/{ASSIGNMENT}").status_code == 200
    portal.revoke("carol")
    assert client.get(f"/assignments/{ASSIGNMENT}").status_code == 403     # the open session ends with the link
    assert client_for(app).get(f"/s/{token}").status_code == 403
    with portal.sessions() as db:
        assert db.get(Student, "carol").token_hash is None


def test_tokens_are_long_random_and_stored_hashed(portal):
    tokens = [portal.new_link(f"s{i}") for i in range(3)]
    assert len(set(tokens)) == 3 and all(len(t) >= 43 for t in tokens)       # 256 random bits each
    with portal.sessions() as db:
        stored = [db.get(Student, f"s{i}").token_hash for i in range(3)]
    assert stored == [auth.digest(t) for t in tokens] and not set(stored) & set(tokens)


def test_bad_tokens_from_one_address_lock_out_no_classmate(app, portal, monkeypatch):
    monkeypatch.setattr(auth, "MAX_ADDRESS_FAILURES", 25 + auth.MAX_FAILURES)
    dave, erin = portal.new_link("dave"), portal.new_link("erin")
    lab = client_for(app)                                      # one address: a campus NAT
    for i in range(25):
        assert lab.get(f"/s/{i:08d}-not-a-token").status_code == 403     # each a different prefix
    assert client_for(app).get(f"/s/{erin}").status_code == 200   # a classmate behind the same NAT
    for i in range(auth.MAX_FAILURES):                         # guesses completing dave's link's first characters
        assert lab.get(f"/s/{dave[:auth.PREFIX_CHARACTERS]}guess{i}").status_code in (403, 429)
    assert client_for(app).get(f"/s/{dave}").status_code == 429   # his prefix is locked, from anywhere
    assert client_for(app).get(f"/s/{erin}").status_code == 200
    assert lab.get("/s/one-more-bad-token").status_code == 429      # the address's own limit: not even checked
    portal.now = lambda: auth.utcnow() + auth.FAILURE_WINDOW + dt.timedelta(seconds=1)
    assert client_for(app).get(f"/s/{dave}").status_code == 200


def test_students_bad_tokens_do_not_lock_out_the_instructor(app, portal):
    lab = client_for(app)
    for i in range(auth.MAX_FAILURES * 2):
        lab.get(f"/s/{i:08d}-bad")
    instructor_client(app, portal)                             # signs in (asserts it)
    for _ in range(auth.MAX_FAILURES):
        csrf = CSRF.search(lab.get("/instructor").text).group(1)
        lab.post("/instructor/sign-in", data={"csrf": csrf, "secret": "wrong" * 4})
    csrf = CSRF.search(lab.get("/instructor").text).group(1)
    secret = portal.secret_file.read_text().strip()
    assert lab.post("/instructor/sign-in", data={"csrf": csrf, "secret": secret}).status_code == 429


def test_a_link_from_another_site_never_silently_switches_accounts(app, portal):
    alice = client_for(app, portal, "alice")
    bobs_link = "/s/" + portal.new_link("bob")
    asked = alice.get(bobs_link)                               # opened from a mail or another site
    assert asked.status_code == 200 and "signed in as alice" in asked.text
    assert "alice" in alice.get("/").text                      # still alice
    forged = client_for(app)
    forged.cookies.set("portal_session", alice.cookies.get("portal_session"))
    assert forged.post(bobs_link, data={"csrf": "guessed"}).status_code == 403      # no SameSite=Strict cookie
    assert "alice" in alice.get("/").text
    csrf = CSRF.search(asked.text.split('id="confirm-sign-in"', 1)[1]).group(1)
    switched = alice.post(bobs_link, data={"csrf": csrf}, follow_redirects=False)
    assert switched.status_code == 303
    assert "bob" in alice.get("/").text                        # the browser now holds bob's session
    with portal.sessions() as db:                              # alice's old session is closed
        assert db.get(Session, auth.digest(forged.cookies.get("portal_session"))) is None


def test_forms_without_the_csrf_token_change_nothing(two_students, app, portal):
    alice, _, _ = two_students
    assert upload(alice, notebook_bytes("no csrf"), csrf=None).status_code == 403
    assert upload(alice, notebook_bytes("wrong csrf"), csrf="x" * 43).status_code == 403
    assert attempts_in(portal) == 1
    assert alice.post("/sign-out", data={}).status_code == 403
    assert alice.get(f"/assignments/{ASSIGNMENT}").status_code == 200       # still signed in
    teacher = instructor_client(app, portal)
    for url, fields in INSTRUCTOR_POSTS.items():
        assert teacher.post(url, data=fields).status_code == 403, url
    with portal.sessions() as db:
        assert db.get(Policy, ASSIGNMENT) is None
    assert alice.get(f"/assignments/{ASSIGNMENT}").status_code == 200       # bob's revoke did not happen either
    fresh = client_for(app)
    assert fresh.post("/instructor/sign-in", data={"secret": portal.secret_file.read_text().strip()}).status_code == 403


def test_every_page_has_a_strict_policy_and_no_inline_script(two_students, app, portal):
    alice, bob, bobs = two_students
    pages = [bob.get("/"), bob.get(f"/assignments/{ASSIGNMENT}"), bob.get(f"/attempts/{bobs}"),
             instructor_client(app, portal).get("/instructor"), client_for(app).get("/")]
    for page in pages:
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "default-src 'none'" in policy
        assert page.headers["referrer-policy"] == "no-referrer"
        assert not re.search(r"<script(?![^>]*\bsrc=)", page.text), "inline script"
        assert not re.search(r"\son[a-z]+=", page.text), "inline event handler"
    feedback = bob.get(f"/attempts/{bobs}/feedback")
    assert "script-src" not in feedback.headers["content-security-policy"]   # report pages: no script at all
    assert "<script" not in feedback.text
