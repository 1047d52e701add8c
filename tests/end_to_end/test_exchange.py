"""nbgrader's exchange as a door of its own: release_assignment, fetch_assignment, submit and collect, then
`make grade`, release_feedback and fetch_feedback, with nbgrader's own submission secrets (the student finds the
page the grader wrote). Graded without the sandbox: two trusted notebooks, the door is what is tested."""
import nbformat
import pytest

from exchange_door import Student, instructor
from fixture_submissions import FULL, make_course, solved_notebook
from posenc_autograder.course import Course
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.reports import feedback
from posenc_autograder.sandbox.bubblewrap import Limits

pytestmark = pytest.mark.slow
NB = "positional_encoding"
LIMITS = Limits(cell_seconds=8, notebook_seconds=30)


@pytest.fixture(scope="module")
def through_the_exchange(tmp_path_factory):
    """Two students fetch the released notebook and submit (one solved, one untouched); the instructor collects."""
    tmp = tmp_path_factory.mktemp("exchange")
    course = Course(make_course(tmp / "course"))
    exchange = tmp / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)                 # as nbgrader's documentation sets up a shared exchange
    instructor(course, exchange, "ExchangeReleaseAssignment", NB)
    students = {name: Student(name, tmp / "home" / name, exchange) for name in ("ada", "grace")}
    for name, student in students.items():
        fetched = student.fetch(NB) / f"{NB}.ipynb"
        text = nbformat.writes(solved_notebook()) if name == "ada" else fetched.read_text()
        student.submit(NB, {f"{NB}.ipynb": text})
    instructor(course, exchange, "ExchangeCollect", NB)
    results = {r.student: r for r in grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)}
    return course, exchange, students, results


def test_fetch_feedback_finds_the_graders_page(through_the_exchange):
    course, exchange, students, results = through_the_exchange
    assert {s: r.score for s, r in results.items()} == {"ada": FULL, "grace": 0}
    instructor(course, exchange, "ExchangeReleaseFeedback", NB)
    for name, student in students.items():
        fetched = student.fetch_feedback(NB)
        assert list(fetched) and all(page.endswith(f"/{NB}.html") for page in fetched), fetched
        assert list(fetched.values()) == [feedback.path(course.feedback, results[name]).read_text()]
        assert f"Score: {results[name].score:g} / {FULL:g}" in fetched[next(iter(fetched))]
