"""The portal as a JupyterHub service, against a real JupyterHub (and its configurable-http-proxy, `make hub-proxy`)
started here once for the module: the hub starts the portal with its service environment (as the README's hub
config snippet says), signs a student in through HubOAuth under /services/portal/, and a member of the course's
instructor group reaches the instructor's pages while a student does not."""
import os
import re
import shutil
import subprocess
import sys
import time

import httpx
import pytest
from fixture_submissions import ASSIGNMENT, make_course
from notebook_tools import ROOT
from served import free_port

from posenc_autograder.devtools.portal_load import stop

pytestmark = pytest.mark.hub
CHP = ROOT / ".venv" / "node" / "node_modules" / ".bin" / "configurable-http-proxy"
PREFIX = "/services/portal"
XSRF = re.compile(r'name="_xsrf" value="([^"]+)"')


def wait_until(check, what: str, seconds: float = 60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{what} did not come up in {seconds:g} s")


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not CHP.exists():
        pytest.fail("configurable-http-proxy is missing: run `make hub-proxy` (make test does)")
    where = tmp_path_factory.mktemp("hub")
    course = make_course(where / "course")
    public, api, proxy_api, service = free_port(), free_port(), free_port(), free_port()
    (where / "jupyterhub_config.py").write_text(f"""
c = get_config()  # noqa
c.JupyterHub.bind_url = "http://127.0.0.1:{public}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{api}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api}"
c.ConfigurableHTTPProxy.command = [{str(CHP)!r}]
c.JupyterHub.db_url = "sqlite:///{where}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{where}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = "pw-for-tests"
c.Authenticator.allow_all = True
c.JupyterHub.load_groups = {{"instructors": {{"users": ["prof"]}}}}
c.JupyterHub.services = [{{
    "name": "portal", "url": "http://127.0.0.1:{service}", "oauth_no_confirm": True,
    "command": [{sys.executable!r}, "-m", "posenc_autograder", "portal", "--course", {str(course)!r},
                "--jobs", "1", "--allow-root"],
}}]
c.JupyterHub.load_roles = [{{"name": "portal-reads-groups", "scopes": ["read:users:groups"],
                            "services": ["portal"]}},
                           {{"name": "user", "scopes": ["self", "access:services!service=portal"]}}]
""")
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}"}
    log = open(where / "hub.log", "w")
    process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(where / "jupyterhub_config.py")],
                               cwd=where, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{public}"
    try:
        wait_until(lambda: httpx.get(f"{base}/hub/api/").status_code == 200, "the hub")
        wait_until(lambda: httpx.get(f"{base}{PREFIX}/static/portal.css").status_code == 200, "the portal service")
        yield base
    except AssertionError:
        log.flush()
        raise AssertionError((where / "hub.log").read_text()[-4000:]) from None
    finally:
        stop(process, 20)       # the hub and every process it started: a hub stopped while starting leaves its services
        log.close()
        shutil.rmtree(where / "course" / "autograder" / "uploads", ignore_errors=True)


def signed_in(base: str, user: str) -> tuple[httpx.Client, httpx.Response]:
    """A browser that opens the portal under the hub, signs in at the hub's form and comes back to the portal."""
    browser = httpx.Client(base_url=base, follow_redirects=True, timeout=30)
    login_page = browser.get(f"{PREFIX}/")
    assert "/hub/login" in str(login_page.url), login_page.url
    form = {"username": user, "password": "pw-for-tests", "_xsrf": XSRF.search(login_page.text).group(1)}
    landed = browser.post(str(login_page.url), data=form)
    return browser, landed


def test_a_hub_user_is_signed_in_as_the_student_under_the_service_prefix(hub):
    browser, landed = signed_in(hub, "ada")
    assert str(landed.url) == f"{hub}{PREFIX}/" and "Your assignments" in landed.text and "ada" in landed.text
    page = browser.get(f"{PREFIX}/assignments/{ASSIGNMENT}")
    assert page.status_code == 200
    assert f'action="{PREFIX}/assignments/{ASSIGNMENT}/upload"' in page.text          # links carry the prefix
    assert f'href="{PREFIX}/static/portal.css"' in page.text
    assert "Class progress" not in browser.get(f"{PREFIX}/instructor").text            # a student is no instructor
    assert browser.get(f"{PREFIX}/instructor/progress.json").status_code == 403


def test_a_member_of_the_instructor_group_reaches_the_instructor_pages(hub):
    browser, landed = signed_in(hub, "prof")
    assert str(landed.url) == f"{hub}{PREFIX}/instructor" and "Class progress" in landed.text


def test_a_callback_this_browser_did_not_start_signs_no_one_in(hub):
    browser, _ = signed_in(hub, "bea")
    stranger = httpx.Client(base_url=hub, timeout=30)
    answer = stranger.get(f"{PREFIX}/oauth_callback", params={"code": "stolen", "state": "not-mine"})
    assert answer.status_code == 403 and "portal_session" not in answer.headers.get("set-cookie", "")
