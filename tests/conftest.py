"""Shared fixtures: the repository root, a built book (built once per test run, by the first worker that asks), the
book served over HTTP and Chromium. Browser fixtures are defined here only: a second definition in a test module would
start a second Playwright, which its sync API refuses in the same session.
"""
import fcntl
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = pathlib.Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "_ext"))
from print_book import CHROMIUM, CHROMIUM_ARGS, print_book, serve  # noqa: E402  (the book's own printer)


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def book_build(repo_root, tmp_path_factory):
    """Build the book exactly as `make book` does, once a run; return (completed process, html dir).

    The first worker that asks builds, the other waits for it and reads the same _build (the tests that read the
    book are groups of their own, spread over both workers: conftest.py at the root).
    POSENC_BOOK_OUTPUT=<dir> builds into <dir>/_build instead (jupyter-book's --path-output), so
    that people testing in one work tree do not overwrite each other's _build.
    """
    output = pathlib.Path(os.environ.get("POSENC_BOOK_OUTPUT", repo_root))
    built = once_a_run(tmp_path_factory, "book-build", lambda: build_book(repo_root, output, "html"))
    return built, output / "_build" / "html"


def once_a_run(tmp_path_factory, name: str, run) -> subprocess.CompletedProcess:
    """`run()`'s completed process, run by the first worker of this test run that asks, read by the others.

    xdist's workers share the parent of their base temporary folders (a new one each run); a run without xdist owns
    its base folder alone.
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    done = shared / f"{name}.json"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # released when the file closes, also if the run stops here
        if not done.exists():
            proc = run()
            done.write_text(json.dumps({"args": proc.args, "returncode": proc.returncode, "stdout": proc.stdout,
                                        "stderr": proc.stderr}))
        return subprocess.CompletedProcess(**json.loads(done.read_text()))


def build_book(repo_root: pathlib.Path, output: pathlib.Path, builder: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(VENV_BIN / "jupyter-book"), "build", ".", "--path-output", str(output), "--builder", builder,
         "-W", "-n", "--keep-going"],
        cwd=repo_root, capture_output=True, text=True, timeout=1200,
    )


@pytest.fixture(scope="session")
def book_pdf(book_build, browser, repo_root):
    """The book as one PDF, made as `make pdf` makes it, beside the HTML pages (the intro links it).

    The single-page build shares the HTML build's environment and execution cache: it only writes.
    """
    proc, html_dir = book_build
    assert proc.returncode == 0, "the book did not build"
    single = build_book(repo_root, html_dir.parent.parent, "singlehtml")
    assert single.returncode == 0, f"the single-page build failed:\n{single.stdout[-3000:]}\n{single.stderr[-3000:]}"
    return print_book(html_dir.parent / "singlehtml", html_dir, browser=browser), html_dir.parent / "singlehtml"


@pytest.fixture(scope="session")
def site(book_build):
    proc, html_dir = book_build
    assert proc.returncode == 0, "the book did not build"
    with serve(html_dir) as base:
        yield base, html_dir


@pytest.fixture(scope="session")
def playwright_driver():
    """The one Playwright of the session (its sync API refuses a second)."""
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        yield playwright


@pytest.fixture(scope="session")
def browser(playwright_driver):
    chromium = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()


@pytest.fixture(scope="session")
def browser_with_scrollbars(playwright_driver):
    """Chromium as Windows and most desktops show pages: Playwright's headless default, --hide-scrollbars, left out."""
    chromium = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                 ignore_default_args=["--hide-scrollbars"])
    yield chromium
    chromium.close()


@pytest.fixture
def postgres_url():
    """The URL of a fresh PostgreSQL database on a server of the test's own (removed afterwards)."""
    from posenc_autograder.devtools.postgres import PostgresMissing, postgres_server
    try:
        with postgres_server() as url:
            yield url
    except PostgresMissing as exc:
        pytest.fail(str(exc))
