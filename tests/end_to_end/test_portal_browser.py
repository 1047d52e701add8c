"""The submission portal in Chromium, grading for real in the sandbox: a student signs in by link, uploads, sees
the status change and reads the feedback; the instructor changes a policy, and students meet the attempt limit, a
missed deadline, late marking and an extension; a hostile notebook through the portal changes no other grade.

The portal runs in this process under uvicorn (the `make portal` command refuses root unless --allow-root; its
application does not check, so tests run as root in CI call it directly). Student code still runs only in the
sandbox's subprocesses.
"""
import datetime as dt
import hashlib
import re
import threading
import time

import nbformat
import pytest
import served_portal
from fixture_submissions import ASSIGNMENT, FULL, NOTEBOOK, make_course, solved_notebook
from hostile_notebooks import ATTACKS
from notebook_tools import ROOT
from sqlalchemy import select

from posenc_autograder.course import Course
from posenc_autograder.grading.execute import execute_task
from posenc_autograder.portal.models import Attempt
from posenc_autograder.portal.service import Portal
from posenc_autograder.records import gradebook, results_store

GRADED = 90_000                     # ms a test waits for a real grading (a loaded 2-core machine)
ATTACKS_USED = ["gradebook_sqlite", "forge_results_files", "read_other_students"]


class Gate:
    """Holds grading until the test opens it, so a page can be seen while its attempt is still queued."""

    def __init__(self):
        self.open = threading.Event()
        self.open.set()

    def __call__(self, task):
        self.open.wait(GRADED / 1000)
        return execute_task(task)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("portal")))
    gate = Gate()
    portal = Portal(course, jobs=2, worker_options={"execute": gate}, register=False)
    with served_portal.served(portal) as url:
        yield url, portal, gate


@pytest.fixture
def files(tmp_path):
    def write(name, nb):
        path = tmp_path / name / f"{NOTEBOOK}.ipynb"
        path.parent.mkdir()
        nbformat.write(nb, path)
        return path
    return write


def release():
    return nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


def with_cells(nb, *sources):
    nb.cells += [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def student(browser, served, name):
    """A browser context signed in by the student's link; console errors are collected (CSP violations show there)."""
    base, portal, _ = served
    context = browser.new_context()
    page = context.new_page()
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.goto(f"{base}/s/{portal.new_link(name, name.title())}")
    assert page.locator("h1").inner_text() == "Your assignments"
    return page


def instructor(browser, served):
    base, portal, _ = served
    page = browser.new_context().new_page()
    page.goto(f"{base}/instructor")
    page.fill("#secret", portal.secret_file.read_text().strip())
    page.click("button:has-text('Sign in')")
    assert page.locator("h1").inner_text() == "Instructor"
    return page


def set_policy(page, **fields):
    form = page.locator(f"#policy-{ASSIGNMENT}")
    for name, value in fields.items():
        form.locator(f"[name={name}]").fill(str(value))
    form.locator("button").click()
    assert "saved" in page.locator("#notice").inner_text()


def upload(page, served, path):
    page.goto(f"{served[0]}/assignments/{ASSIGNMENT}")
    page.set_input_files("#notebook", str(path))
    page.click("#upload-button")


def utc(delta: dt.timedelta) -> str:
    return (dt.datetime.now(dt.timezone.utc) + delta).strftime("%Y-%m-%dT%H:%M")


def test_sign_in_upload_watch_the_status_and_read_feedback(browser, served, files):
    _, _, gate = served
    page = student(browser, served, "ada")
    gate.open.clear()                                      # grading waits until the queued status was seen
    started = time.monotonic()
    upload(page, served, files("ada", solved_notebook()))
    status = page.locator("#status")
    assert status.get_attribute("data-status") in ("queued", "running")
    assert re.search(r"Queued: \d+ ahead of yours|Running", status.inner_text())
    gate.open.set()
    page.locator("#feedback-link").wait_for(timeout=GRADED)   # the page followed the status by itself
    seconds = time.monotonic() - started
    assert f"Graded: {FULL:g} / {FULL:g}" in status.inner_text()
    page.click("#feedback-link")
    assert f"Score: {FULL:g} / {FULL:g}" in page.content()
    assert "hidden_pe_shapes" in page.content()
    page.click("text=back to your attempts")
    assert "counts" in page.locator("#attempts").inner_text()
    assert page.errors == []
    print(f"upload to feedback in the browser: {seconds:.1f} s")


def test_instructor_policy_attempt_limit_deadline_late_and_extension(browser, served, files):
    teacher = instructor(browser, served)
    set_policy(teacher, max_attempts=2)
    bea = student(browser, served, "bea")
    for marker in ("one", "two"):
        upload(bea, served, files(f"bea-{marker}", with_cells(release(), f"# {marker}")))
        assert bea.locator("#status").is_visible()
    bea.goto(f"{served[0]}/assignments/{ASSIGNMENT}")
    assert "used all 2 attempts" in bea.locator("#refused").inner_text()
    assert bea.locator("#notebook").count() == 0

    set_policy(teacher, max_attempts=0, deadline=utc(-dt.timedelta(hours=1)), late_days=0)
    cyd = student(browser, served, "cyd")
    cyd.goto(f"{served[0]}/assignments/{ASSIGNMENT}")
    assert "has passed" in cyd.locator("#refused").inner_text()

    set_policy(teacher, late_days=2)
    upload(cyd, served, files("cyd", release()))
    assert "late" in cyd.locator("p:has-text('uploaded')").inner_text()

    dan = student(browser, served, "dan")
    teacher.fill("#extension-form [name=student]", "dan")
    teacher.select_option("#extension-form [name=assignment]", ASSIGNMENT)
    teacher.fill("#extension-form [name=deadline]", utc(dt.timedelta(days=3)))
    teacher.click("#extension-form button")
    assert "The extension was saved." in teacher.locator("#notice").inner_text()
    dan.goto(served[0] + "/")
    assert "extended" in dan.locator(f"tr:has-text('{ASSIGNMENT}')").inner_text()
    upload(dan, served, files("dan", release()))
    assert "late" not in dan.locator("p:has-text('uploaded')").inner_text()
    assert all(p.errors == [] for p in (bea, cyd, dan))
    set_policy(teacher, deadline="", late_days=0)         # open again for the next test


def stored(portal, student: str) -> None:
    """Wait until the student's counting attempt is stored in the gradebook and results (the page shows
    "graded" as soon as the result is recorded; storing where `make grade` stores follows it)."""
    deadline = time.monotonic() + GRADED / 1000
    while time.monotonic() < deadline:
        with portal.sessions() as db:
            if db.execute(select(Attempt).where(Attempt.student_id == student, Attempt.promoted.is_(True))).first():
                return
        time.sleep(0.1)
    raise AssertionError(f"{student}'s counting attempt was not stored")


def test_hostile_notebook_through_the_portal_changes_no_other_grade(browser, served, files):
    base, portal, _ = served
    course = portal.course
    victim = student(browser, served, "vic")
    upload(victim, served, files("vic", solved_notebook()))
    victim.locator("#feedback-link").wait_for(timeout=GRADED)
    stored(portal, "vic")
    record = results_store.path(course, "vic", ASSIGNMENT, NOTEBOOK)
    before = hashlib.sha256(record.read_bytes()).hexdigest()
    with gradebook.open_gradebook(course) as gb:
        victim_score = gradebook.final_scores(gb, "vic", ASSIGNMENT)
    attacker = student(browser, served, "mallory")
    upload(attacker, served, files("mallory", with_cells(release(), *(ATTACKS[a] for a in ATTACKS_USED))))
    attacker.locator("#feedback-link").wait_for(timeout=GRADED)
    assert "Graded: 0 /" in attacker.locator("#status").inner_text()
    stored(portal, "mallory")
    with gradebook.open_gradebook(course) as gb:
        assert gradebook.final_scores(gb, "vic", ASSIGNMENT) == victim_score == (FULL, FULL)
        assert gradebook.final_scores(gb, "mallory", ASSIGNMENT)[0] == 0
    assert hashlib.sha256(record.read_bytes()).hexdigest() == before
