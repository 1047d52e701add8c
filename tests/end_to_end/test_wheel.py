"""The grader package installs anywhere: a built wheel, installed non-editable into a fresh venv, grades a
notebook in a copy of the course that holds no grader code, and finds that course from the working directory."""
import csv
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.error
import urllib.request
import venv

import nbformat
import pytest
from fixture_submissions import make_course, solved_notebook
from served import free_port

from posenc_autograder.checks import hidden_tests
from posenc_autograder.course import Course

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSIGNMENT = "rope_alibi"          # the smaller notebook: this test is about installing, not grading


def _run(*args, **options):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True, timeout=300, **options)


# What a course run leaves in autograder/ (not the package's own folders of the same names, e.g. reports/).
COURSE_STATE = {"build", "gradebook.db", "submitted", "autograded", "feedback", "reports", ".work", "exchange"}


def course_state(folder: str, names: list[str]) -> set[str]:
    top = pathlib.Path(folder) == ROOT / "autograder"
    return {n for n in names if n == "__pycache__" or n.endswith(".egg-info") or (top and n in COURSE_STATE)}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with only the wheel installed; the pinned dependencies come from the project's venv."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"                      # build from a copy: setuptools writes metadata beside the code
    shutil.copytree(ROOT / "autograder", source, ignore=course_state)
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", tmp / "dist",
         source)
    [wheel] = (tmp / "dist").glob("posenc_autograder-*.whl")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = pathlib.Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    # Reuse the already-installed dependencies (the editable grader's .pth there is not processed),
    # with their console scripts (nbgrader, alembic) pointed at the new interpreter, as pip would write them.
    (site / "project-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    project_bin = pathlib.Path(sys.executable).parent
    for script in ("nbgrader", "alembic"):
        lines = (project_bin / script).read_text().splitlines()
        (env_dir / "bin" / script).write_text("\n".join([f"#!{python}"] + lines[1:]) + "\n")
        (env_dir / "bin" / script).chmod(0o755)
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", wheel)
    return python


def test_the_wheel_holds_every_subpackage(installed):
    where = _run(installed, "-c", "import posenc_autograder.checks, posenc_autograder.probes.helpers as h, "
                                  "posenc_autograder as p; print(p.__file__); print(len(h.__name__))").stdout
    assert str(ROOT) not in where.splitlines()[0], "the grader was imported from the repository, not the wheel"
    assert "site-packages" in where.splitlines()[0]


def test_installed_grader_grades_the_course_it_runs_in(installed, tmp_path):
    course = make_course(tmp_path / "course", registered=False)     # from nothing, as a new instructor
    folder = course / "autograder" / "submitted" / "solver" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(solved_notebook(ASSIGNMENT), folder / f"{ASSIGNMENT}.ipynb")
    path = f"{installed.parent}:/usr/bin:/bin"
    done = subprocess.run([str(installed), "-m", "posenc_autograder", "grade", "--no-sandbox", "--jobs", "1"],
                          cwd=course / "autograder", capture_output=True, text=True, timeout=300,
                          env={"PATH": path, "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(open(Course(course).grades_csv)))
    assert [(r["student"], float(r["score"])) for r in rows if r["assignment"] == ASSIGNMENT] == \
        [("solver", sum(t.points for t in hidden_tests(ASSIGNMENT)))]
    assert not (ROOT / "autograder" / "submitted" / "solver").exists()



def test_installed_package_serves_the_portal(installed, tmp_path):
    """`make portal`'s entry point from the wheel: the portal starts in a course and answers its sign-in page."""
    course = make_course(tmp_path / "course")
    port = free_port()
    command = [str(installed), "-m", "posenc_autograder", "portal", "--port", str(port), "--jobs", "1"]
    command += ["--allow-root"] if os.geteuid() == 0 else []
    env = {"PATH": f"{installed.parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    server = subprocess.Popen(command, cwd=course / "autograder", env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        page = _first_answer(f"http://127.0.0.1:{port}/", server)
    finally:
        server.terminate()
        output = server.communicate(timeout=30)[0]
    assert page is not None, f"the installed portal never answered:\n{output[-2000:]}"
    status, body = page
    assert status == 200 and "sign-in link" in body.lower(), (status, body[:500])


def _first_answer(url: str, server: subprocess.Popen, seconds: float = 120.0) -> tuple[int, str] | None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as refused:
            return refused.code, refused.read().decode()
        except OSError:
            time.sleep(0.5)
    return None
