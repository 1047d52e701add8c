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
import tempfile
import time

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



# --- each test leaves its process as it found it ----------------------------------------------------------------
# A test that leaves an environment variable, the working folder, the umask, tempfile's folder or a child process
# behind changes what every later test on its worker sees: which tests those are depends on how xdist spreads the
# files, so the failure shows elsewhere and only sometimes (CI failed on a test that counted an earlier test's
# zygote; a Chromium test on a TMPDIR another test had left). Each such leak fails the test that made it, at its
# teardown, naming what it left (a warning in the run's summary was read past: a Dask cluster's variables stayed
# run after run), and what can be put back is put back, so no later test sees it. A process keeps one zygote
# (sandbox/warm.py) and multiprocessing's fork server and resource tracker by design: those are not leaks.
from posenc_autograder.course import _venv_tools_on_path  # noqa: E402

_venv_tools_on_path()            # the one change of the environment the grader makes for good, made before any test


def child_processes() -> set[int]:
    """This process's children (every thread's), from /proc: a fraction of a millisecond."""
    found: set[int] = set()
    for thread in os.listdir("/proc/self/task"):
        try:
            found.update(int(pid) for pid in pathlib.Path(f"/proc/self/task/{thread}/children").read_text().split())
        except OSError:                       # the thread ended meanwhile
            pass
    return found


def kept_by_design() -> set[int]:
    """The children a process keeps for the rest of its life: its zygote, multiprocessing's fork server and
    resource tracker."""
    import multiprocessing.forkserver
    import multiprocessing.resource_tracker
    kept = {multiprocessing.forkserver._forkserver._forkserver_pid,
            multiprocessing.resource_tracker._resource_tracker._pid}
    warm = sys.modules.get("posenc_autograder.sandbox.warm")
    zygote = warm and warm._current
    if zygote:
        kept.add(zygote.process.pid)
    return {pid for pid in kept if pid}


def process_state() -> dict:
    mask = os.umask(0)
    os.umask(mask)
    environment = {key: value for key, value in os.environ.items() if key != "PYTEST_CURRENT_TEST"}  # pytest's own
    # tempfile's folder worked out (from TMPDIR) if nothing asked for it yet: the first test to ask for it in a
    # process (a run without workers, on the in-memory folder) is not leaving it changed
    return {"environment": environment, "working folder": os.getcwd(), "umask": mask,
            "tempfile.tempdir": tempfile.gettempdir() and tempfile.tempdir}


ENDING_GRACE = 2.0      # seconds a child the test ended (killed, terminated) may take to be gone


def running(pid: int) -> bool:
    """Whether the child still runs: an ended child not yet reaped (a zombie, 'Z') holds nothing a later test sees."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def still_running(pids: set[int], grace: float = ENDING_GRACE) -> set[int]:
    """The children of `pids` still running after at most `grace` seconds: a child killed at the test's end is
    often still exiting when its teardown returns, and is no leak."""
    ends = time.monotonic() + grace
    left = {pid for pid in pids if running(pid)}
    while left and time.monotonic() < ends:
        time.sleep(0.05)
        left = {pid for pid in left if running(pid)}
    return left


def left_behind(before: dict, children: set[int]) -> str | None:
    """What changed in this process since `before` and `children` were taken, in words; None when nothing did."""
    before, after = dict(before), process_state()
    left = still_running(child_processes() - children - kept_by_design())
    old, new = before.pop("environment"), after.pop("environment")
    changed = {key: (old.get(key), new.get(key)) for key in sorted({*old, *new}) if old.get(key) != new.get(key)}
    said = [f"environment: {changed}"] if changed else []
    said += [f"{name}: {before[name]!r} -> {after[name]!r}" for name in before if before[name] != after[name]]
    said += [f"child process {pid} still running: {command_line(pid)}" for pid in sorted(left)]
    return "; ".join(said) or None


def command_line(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "(ended)"


def put_back(before: dict) -> None:
    """The environment, working folder, umask and tempfile's folder as `before` (process_state) had them; a child
    process is the test's to end."""
    os.environ.clear()
    os.environ.update(before["environment"])
    os.chdir(before["working folder"])
    os.umask(before["umask"])
    tempfile.tempdir = before["tempfile.tempdir"]


def as_found(before: dict, children: set[int]) -> None:
    """Fails (at the test's teardown) when the process is not as `before` and `children` were taken, naming what
    changed, after putting back what can be."""
    found = left_behind(before, children)
    if found:
        put_back(before)
        pytest.fail(f"left for the next tests of this process: {found}", pytrace=False)


@pytest.fixture(autouse=True)
def leaves_its_process_as_it_found_it():
    """Around every test and its function fixtures (set up before them, torn down after them); the fixtures of a
    module or session outlive it, and are not its leaks."""
    before, children = process_state(), child_processes()
    yield
    as_found(before, children)
