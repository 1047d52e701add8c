"""`make formgrader` (python -m posenc_autograder formgrader): nbgrader's formgrader answers on 127.0.0.1 and,
in Chromium with every other host cut off, shows an autograded submission with its diagnoses wrapped and
its formulas typeset by the locally served MathJax. Graded without the sandbox (trusted notebooks)."""
import pathlib
import subprocess
import sys
import urllib.parse
import urllib.request

import nbformat
import pytest
from fixture_submissions import NOTEBOOK, make_course, solved_notebook

from posenc_autograder.checks.positional_encoding.catalogue import MISTAKES
from posenc_autograder.course import Course
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.records import gradebook
from posenc_autograder.settings import Limits

SWAPPED = next(m for m in MISTAKES if m.name == "sin and cos swapped")
SHOTS = pathlib.Path(__file__).resolve().parents[2] / "_build" / "screenshots"


def with_mistake(code: str):
    """The solved notebook with one function redefined, after the solution, the way the student wrote it."""
    nb = solved_notebook()
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")
                and "def sinusoidal_positional_encoding" in c.source)
    cell.source += "\n\n" + code
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("formgrader") / "course"))
    folder = course.submitted / "swapper" / NOTEBOOK
    folder.mkdir(parents=True)
    nbformat.write(with_mistake(SWAPPED.code), folder / f"{NOTEBOOK}.ipynb")
    [result] = grade_all(course, jobs=1, isolate=False, limits=Limits(cell_seconds=8, notebook_seconds=30), quiet=True)
    assert any(t.cell_id == SWAPPED.failing_check and not t.passed for t in result.tests)
    return course


@pytest.fixture(scope="module")
def formgrader(course):
    """The command as `make formgrader` runs it; yields the address it printed."""
    process = subprocess.Popen([sys.executable, "-m", "posenc_autograder", "formgrader", "--course", str(course.root)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = []
        for line in process.stdout:                  # the address comes once the server answers
            lines.append(line)
            if "/formgrader?token=" in line:
                break
        address = next((line.strip() for line in lines if "/formgrader?token=" in line), None)
        assert address, "".join(lines)
        yield address
    finally:
        process.terminate()
        process.wait(timeout=60)
        assert not server_alive(course.root), "the server outlived `make formgrader`"


def server_alive(root) -> bool:
    """Is a jupyter server for this course still running (any process whose command line names its root)?"""
    for cmdline in pathlib.Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"--ServerApp.root_dir={root}".encode() in cmdline.read_bytes():
                return True
        except OSError:
            continue
    return False


def test_formgrader_answers_on_loopback(formgrader):
    address = urllib.parse.urlsplit(formgrader)
    assert address.hostname == "127.0.0.1"
    browser_like = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())    # the token sets a cookie
    with browser_like.open(formgrader, timeout=30) as page:
        assert page.status == 200 and "Manage Assignments" in page.read().decode()
    with urllib.request.urlopen(f"{address.scheme}://{address.netloc}/formgrader", timeout=30) as page:
        assert "/login" in page.url and "Manage Assignments" not in page.read().decode()     # the token lets one in


def test_submission_shows_wrapped_diagnoses_and_typeset_formulas_offline(course, formgrader, browser):
    address = urllib.parse.urlsplit(formgrader)
    base = f"{address.scheme}://{address.netloc}"
    with gradebook.open_gradebook(course) as gb:
        submission = gb.find_submission_notebook(NOTEBOOK, NOTEBOOK, "swapper").id
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    elsewhere = []
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
               else (elsewhere.append(route.request.url), route.abort()))
    page.goto(formgrader, wait_until="networkidle")                  # the printed address, as the instructor opens it
    page.goto(f"{base}/formgrader/gradebook/{NOTEBOOK}/{NOTEBOOK}", wait_until="networkidle")
    page.get_by_text("Submission #1").wait_for(timeout=60_000)       # the list is filled in by script
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "formgrader-assignment.png"))

    page.goto(f"{base}/formgrader/submissions/{submission}/", wait_until="networkidle")
    page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=60_000)
    assert page.evaluate("document.querySelectorAll('mjx-container mjx-math').length") > 5      # typeset, not raw $...$
    assert "$M_k$" not in page.inner_text("body") and elsewhere == []
    cell = page.locator(".cell", has_text=SWAPPED.failing_check).filter(has=page.locator(".output_area")).first
    diagnosis = cell.locator(".output_area pre").first
    assert "swapped" in diagnosis.inner_text()
    overflowing = ("() => [...document.querySelectorAll('.output_area pre')]"
                   ".filter(p => p.scrollWidth > p.clientWidth + 1).length")
    assert page.evaluate(overflowing) == 0
    cell.scroll_into_view_if_needed()
    cell.screenshot(path=str(SHOTS / "formgrader-diagnosis.png"))
    page.screenshot(path=str(SHOTS / "formgrader-submission.png"))
    page.add_style_tag(content=".output_area pre { white-space: pre !important; }")      # nbgrader's own rule
    assert page.evaluate(overflowing) > 0, "no diagnosis is long enough to show that wrapping matters"
    page.close()
