"""The hub layout `make hub-setup` applies, tried the way it would be broken: a student's account (an ordinary system
user, as on a JupyterHub) tries to read the solutions, the gradebook and the secrets, first in the course as a clone
leaves it (it can: the attack is real) and then after `make hub-setup` (it cannot), and still fetches and submits
through nbgrader's exchange, which `make collect-exchange` then records."""
import pathlib
import shutil
import subprocess
import tempfile

import nbformat
import pytest
from exchange_door import Student, instructor
from fixture_submissions import make_course, solved_notebook
from ordinary_user import ordinary_user

from posenc_autograder import cli
from posenc_autograder.checks import variants
from posenc_autograder.course import DATABASE_FILE, GRADEBOOK, Course, exchange_root
from posenc_autograder.intake import attempts, exchange, roster

pytestmark = pytest.mark.slow
NB = "positional_encoding"


def readable_by(user: str, paths: list[pathlib.Path]) -> list[pathlib.Path]:
    """The paths `user` can read a byte of (a folder: list)."""
    found = []
    for path in paths:
        command = ["ls", str(path)] if path.is_dir() else ["head", "-c", "1", str(path)]
        if subprocess.run(["runuser", "-u", user, "--", *command], capture_output=True).returncode == 0:
            found.append(path)
    return found


@pytest.fixture
def open_course():
    """A course where any account on the machine can reach it (under /tmp, as a clone with umask 022 leaves it),
    holding what a term gives it: the gradebook, the secrets, a roster and a submission."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="posenc-hub-", dir="/tmp"))
    top.chmod(0o755)
    try:
        course = Course(make_course(top / "course"))
        for relative in (variants.SECRET_FILE, "autograder/portal_secret", DATABASE_FILE):
            course.path(relative).write_text("a secret\n")
        roster.save(course, {("ada", NB): {"student_id": "ada", "assignment": NB, "lms": "canvas"}})
        (course.submitted / "ada" / NB).mkdir(parents=True)
        nbformat.write(solved_notebook(), course.submitted / "ada" / NB / f"{NB}.ipynb")
        yield top, course
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_a_students_account_reads_nothing_of_the_course_and_still_submits(open_course):
    user = ordinary_user()
    top, course = open_course
    secrets = [course.path(p) for p in ("solutions", f"solutions/{NB}/{NB}.ipynb", GRADEBOOK, variants.SECRET_FILE,
                                         "autograder/portal_secret", DATABASE_FILE, roster.ROSTER_FILE,
                                         f"autograder/submitted/ada/{NB}/{NB}.ipynb")]
    assert readable_by(user, secrets) == secrets                        # a clone as it comes: all open
    assert exchange.layout_problems(course, top / "exchange")
    status = cli.main(["hub-setup", "--root", str(course.root), "--exchange", str(top / "exchange")])
    assert status == 0 and exchange_root(course.root) == top / "exchange"
    assert readable_by(user, secrets) == [] and exchange.layout_problems(course) == []
    instructor(course, exchange_root(course.root), "ExchangeReleaseAssignment", NB)
    student = Student("grace", top / "home", exchange_root(course.root), user=user)
    student.fetch(NB)
    student.nbgrader("submit", NB)
    assert cli.main(["collect-exchange", NB, "--root", str(course.root)]) == 0
    assert [a.door for a in attempts.of(course, "grace", NB)] == [exchange.DOOR]


def test_hub_setup_refuses_an_exchange_inside_the_course(open_course, capsys):
    _, course = open_course
    assert cli.main(["hub-setup", "--root", str(course.root), "--exchange", str(course.path("autograder/x"))]) == 2
    assert "is inside the course" in capsys.readouterr().err and not course.path("autograder/x").exists()
