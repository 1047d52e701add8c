"""Shared fixtures: the repository root, a built book (built once per test session), the book served over
HTTP and Chromium. Browser fixtures are defined here only: a second definition in a test module would start a
second Playwright, which its sync API refuses in the same session.
"""
import functools
import http.server
import os
import pathlib
import subprocess
import sys
import threading

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = pathlib.Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def book_build(repo_root):
    """Build the book exactly as `make book` does; return (completed process, html dir).

    POSENC_BOOK_OUTPUT=<dir> builds into <dir>/_build instead (jupyter-book's --path-output), so
    that people testing in one work tree do not overwrite each other's _build.
    """
    output = pathlib.Path(os.environ.get("POSENC_BOOK_OUTPUT", repo_root))
    proc = subprocess.run(
        [str(VENV_BIN / "jupyter-book"), "build", ".", "--path-output", str(output), "-W", "-n", "--keep-going"],
        cwd=repo_root, capture_output=True, text=True, timeout=1200,
    )
    return proc, output / "_build" / "html"


def toc_files(repo_root: pathlib.Path) -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    toc = yaml.safe_load((repo_root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site(book_build):
    proc, html_dir = book_build
    assert proc.returncode == 0, "the book did not build"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=html_dir))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", html_dir
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    if not pathlib.Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
