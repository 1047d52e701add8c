"""A course with a portal whose grading is a stand-in (no sandbox: these tests are about the portal's rules),
and signed-in test clients. The browser test (tests/end_to_end/test_portal_browser.py) grades for real."""
import functools
import hashlib
import pathlib
import re
import shutil
import threading
import warnings

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course, registered_gradebook
from notebook_tools import ROOT

from posenc_autograder.course import GRADEBOOK, Course
from posenc_autograder.grading.execute import Execution
from posenc_autograder.portal.models import open_database
from posenc_autograder.portal.routes import create_app
from posenc_autograder.portal.service import Portal

with warnings.catch_warnings():
    warnings.simplefilter("ignore")          # Starlette's note that a later httpx is preferred
    from starlette.testclient import TestClient

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class CountingExecute:
    """Stands in for the sandbox: records which jobs ran (a job is its (student, assignment, notebook) key and
    the notebook it carried) and returns an execution with no answers (every hidden test fails)."""

    def __init__(self):
        self.runs: list[tuple] = []
        self.lock = threading.Lock()

    def __call__(self, task):
        with self.lock:
            self.runs.append((task.key, task.notebook_json))
        return Execution(task.key, {}, [], {}, 0.01)


@functools.cache
def released_notebook() -> nbformat.NotebookNode:
    """The released notebook, read once a worker (notebook_bytes adds its cell to a copy of the list of cells)."""
    return nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)


def notebook_bytes(marker: str = "") -> bytes:
    """The released notebook, made distinct by a marker cell (so each is a new attempt)."""
    nb = nbformat.NotebookNode(released_notebook())
    if marker:
        cell = nbformat.v4.new_code_cell(f"# {marker}")
        cell.id = "m" + hashlib.sha256(marker.encode()).hexdigest()[:12]      # the same bytes for the same marker
        nb.cells = [*nb.cells, cell]
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="session")
def portal_gradebook(tmp_path_factory):
    """The registered gradebook with the portal's tables made as a portal's first start makes them, once a worker:
    each test's portal then opens a database already at its schema."""
    path = tmp_path_factory.mktemp("portal-gradebook") / pathlib.PurePath(GRADEBOOK).name
    shutil.copy(registered_gradebook(), path)
    open_database(f"sqlite:///{path}").kw["bind"].dispose()          # its write-ahead log folded into the file
    return path


@pytest.fixture
def course(tmp_path, portal_gradebook):
    course = Course(make_course(tmp_path / "course"))
    shutil.copy(portal_gradebook, course.root / GRADEBOOK)
    return course


def new_portal(course, execute=None, jobs=1) -> Portal:
    return Portal(course, jobs=jobs, worker_options={"execute": execute or CountingExecute()}, register=False)


@pytest.fixture
def portal(course):
    return new_portal(course)


@pytest.fixture
def app(portal):
    return create_app(portal, start_worker=False)


def client_for(app, portal=None, student=None) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1")
    if student:
        token = portal.new_link(student, student.title())
        assert client.get(f"/s/{token}").status_code == 200
    return client


def csrf_of(client, path="/assignments/" + ASSIGNMENT) -> str:
    return CSRF.search(client.get(path).text).group(1)


def upload(client, data: bytes, csrf: str | None = "auto", name=f"{NOTEBOOK}.ipynb"):
    fields = {} if csrf is None else {"csrf": csrf_of(client) if csrf == "auto" else csrf}
    return client.post(f"/assignments/{ASSIGNMENT}/upload", data=fields, files={"notebook": (name, data)},
                       follow_redirects=False)
