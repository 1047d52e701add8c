"""The portal as an LTI tool end to end, grading for real: `make lti-register`'s command registers a simulated LTI 1.3
platform (tests/support/lti_platform.py, its own JWKS, authorisation, token, NRPS and AGS endpoints on 127.0.0.1);
the portal runs under uvicorn with its worker and outbox; an instructor's launch reads the class list, deep linking
returns the chosen assignment, a student launches that link, uploads a solved notebook that the sandbox grades, and
the score arrives at the platform's line item. Prints the time from the graded attempt to the score at the platform.
"""
import datetime as dt
import re
import time

import httpx
import nbformat
import pytest
import requests
import served_portal
from fixture_submissions import ASSIGNMENT, FULL, NOTEBOOK, make_course, solved_notebook
from lti_platform import CLIENT_ID, DEPLOYMENT, INSTRUCTOR, LEARNER, Platform, authorise
from sqlalchemy import select

from posenc_autograder import cli
from posenc_autograder.course import Course
from posenc_autograder.grading.execute import execute_task
from posenc_autograder.portal.lti.models import LtiScore, LtiUser
from posenc_autograder.portal.models import Attempt, Status
from posenc_autograder.portal.service import Portal

pytestmark = pytest.mark.slow
WAIT = 120.0


def wait_for(check, what: str, seconds: float = WAIT):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"waited {seconds:g} s for {what}")


def browser_launch(browser: httpx.Client, platform: Platform, claims: dict) -> httpx.Response:
    started = browser.post("/lti/login", data={"iss": platform.issuer, "login_hint": "h", "client_id": CLIENT_ID,
                                               "target_link_uri": str(browser.base_url) + "/lti/launch",
                                               "lti_deployment_id": DEPLOYMENT})
    assert started.status_code == 302, started.text
    fields = authorise(platform, started.headers["location"],
                       lambda nonce: platform.sign(platform.claims(nonce, **claims)))
    return browser.post("/lti/launch", data=fields)


@pytest.fixture
def served(tmp_path):
    course = Course(make_course(tmp_path / "course"))
    platform = Platform().start()
    found = platform.registration()
    assert cli.main(["lti-register", "--course", str(course.root), "--issuer", platform.issuer, "--client-id",
                     CLIENT_ID, "--deployment-id", DEPLOYMENT, "--auth-login-url", found["auth_login_url"],
                     "--auth-token-url", found["auth_token_url"], "--key-set-url", found["key_set_url"]]) == 0
    portal = Portal(course, jobs=1, worker_options={"execute": execute_task}, register=False)
    platform.tool_jwks = portal.lti.jwks
    with served_portal.served(portal) as url:
        yield url, portal, platform
    platform.stop()


def test_login_launch_deep_linking_roster_graded_upload_and_score_at_the_platform(served, capsys):
    base, portal, platform = served
    platform.members = [{"user_id": "stu-1", "name": "Ada Student", "email": "ada@example.edu", "status": "Active",
                         "roles": [LEARNER]},
                        {"user_id": "prof", "name": "Pat Teacher", "email": "pat@example.edu", "status": "Active",
                         "roles": [INSTRUCTOR]}]
    teacher = httpx.Client(base_url=base, timeout=30)

    # the instructor's launch: the class list is read from the platform (two pages)
    assert browser_launch(teacher, platform, {"sub": "prof", "roles": [INSTRUCTOR]}).headers["location"] == \
        "/instructor"

    def roster():
        with portal.sessions() as db:
            return {u.sub: (u.name, u.email) for u in db.execute(select(LtiUser)).scalars()}
    assert wait_for(lambda: len(roster()) == 2 and roster(), "the class list")["stu-1"] == ("Ada Student",
                                                                                           "ada@example.edu")

    # deep linking: the instructor picks the assignment; the signed response goes back to the platform
    picker = browser_launch(teacher, platform, {"sub": "prof", "roles": [INSTRUCTOR], "kind": "LtiDeepLinkingRequest",
                                                "deep_link": True})
    fields = dict(re.findall(r'name="(csrf|choice)" value="([^"]+)"', picker.text))
    back = teacher.post("/lti/deep-link", data={**fields, "assignment": ASSIGNMENT})
    token = re.search(r'name="JWT" value="([^"]+)"', back.text).group(1)
    assert requests.post(platform.base + "/deep_link_return", data={"JWT": token}, timeout=10).status_code == 200
    item, = platform.deep_link_responses[-1]["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]

    # the student follows that link: signed in on the assignment, uploads, the sandbox grades
    student = httpx.Client(base_url=base, timeout=30)
    landed = browser_launch(student, platform, {"sub": "stu-1", "custom": item["custom"],
                                                "line_item": platform.base + "/lineitems/42"})
    assert landed.headers["location"] == f"/assignments/{ASSIGNMENT}"
    page = student.get(landed.headers["location"])
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    sent = student.post(f"/assignments/{ASSIGNMENT}/upload", data={"csrf": csrf},
                        files={"notebook": (f"{NOTEBOOK}.ipynb", nbformat.writes(solved_notebook()).encode())})
    assert sent.status_code == 303

    def graded():
        with portal.sessions() as db:
            return db.execute(select(Attempt).where(Attempt.status == Status.GRADED)).scalar_one_or_none()
    attempt = wait_for(graded, "the grading")
    score = wait_for(lambda: platform.scores[:1], "the score at the platform")[0]
    assert score.path == "/lineitems/42/scores"
    assert (score.body["userId"], score.body["scoreGiven"], score.body["scoreMaximum"]) == ("stu-1", FULL, FULL)
    assert (score.body["activityProgress"], score.body["gradingProgress"]) == ("Completed", "FullyGraded")
    graded_at = attempt.finished_at.replace(tzinfo=dt.timezone.utc).timestamp()           # stored as naive UTC
    with portal.sessions() as db:
        owed_at = db.execute(select(LtiScore.timestamp)).scalar_one().replace(tzinfo=dt.timezone.utc).timestamp()
    with capsys.disabled():
        print(f"\nLTI passback: graded attempt -> score at the platform in {score.at - graded_at:.3f} s, of which "
              f"{owed_at - graded_at:.3f} s storing it as the counting attempt (gradebook, feedback, record) and "
              f"{score.at - owed_at:.3f} s token and post (grading took "
              f"{(attempt.finished_at - attempt.started_at).total_seconds():.1f} s)")
    assert score.at - graded_at < 10
