"""nbgrader's exchange as a door of its own: release_assignment, fetch_assignment and submit, `make collect-exchange`
(every submission in the record of attempts, its time with its zone, a roster row), `make grade` under the late
policy, then release_feedback and fetch_feedback with nbgrader's own submission secrets: the student finds the page
the grader wrote, with the grade and lateness grades.csv states. Graded without the sandbox: trusted notebooks, the
door is what is tested."""
import csv
import datetime as dt
import math
import shutil

import nbformat
import pytest
from exchange_door import Student, instructor
from fixture_submissions import FULL, make_course, solved_notebook

from posenc_autograder import cli
from posenc_autograder.course import COURSE_ID, Course
from posenc_autograder.intake import attempts, exchange, roster
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.reports import feedback
from posenc_autograder.settings import Limits

pytestmark = pytest.mark.slow
NB = "positional_encoding"
LIMITS = Limits(cell_seconds=8, notebook_seconds=30)
PENALTY, CAP = 10, 50                     # percent per started day, at most
LATE_BY = dt.timedelta(hours=30)          # the deadline is this long before the submissions


def expected_percent(submitted: dt.datetime, deadline: dt.datetime) -> float:
    """The policy, worked out here: PENALTY per started day after the deadline (no grace), at most CAP."""
    return min(CAP, PENALTY * math.ceil((submitted - deadline) / dt.timedelta(days=1)))


@pytest.fixture(scope="module")
def through_the_exchange(tmp_path_factory):
    """ada (UTC) submits the solved notebook, grace (a server writing Berlin time) the untouched one, both 30 hours
    after the deadline; mallory forges a submission dated 2020; the instructor collects with make collect-exchange."""
    tmp = tmp_path_factory.mktemp("exchange")
    course = Course(make_course(tmp / "course"))
    exchange_root = tmp / "exchange"
    exchange_root.mkdir()
    exchange_root.chmod(0o777)                 # as nbgrader's documentation sets up a shared exchange
    started = dt.datetime.now(dt.timezone.utc)
    deadline = started - LATE_BY
    (course.root / "autograder" / "course.toml").write_text(
        f'[late.{NB}]\ndeadline = "{deadline.isoformat()}"\nper = "day"\npenalty = {PENALTY}\ncap = {CAP}\n'
        f'grace_minutes = 0\n')
    instructor(course, exchange_root, "ExchangeReleaseAssignment", NB)
    students = {"ada": Student("ada", tmp / "home" / "ada", exchange_root),
                "grace": Student("grace", tmp / "home" / "grace", exchange_root, zone="Europe/Berlin")}
    for name, student in students.items():
        fetched = student.fetch(NB) / f"{NB}.ipynb"
        text = nbformat.writes(solved_notebook()) if name == "ada" else fetched.read_text()
        student.submit(NB, {f"{NB}.ipynb": text})
    forged = exchange_root / COURSE_ID / "inbound" / f"mallory+{NB}+2020-01-01 00:00:00.000000 UTC+AAAAAAAAAAAA"
    forged.mkdir()
    shutil.copy(tmp / "home" / "ada" / NB / f"{NB}.ipynb", forged)
    finished = dt.datetime.now(dt.timezone.utc)
    status = cli.main(["collect-exchange", NB, "--root", str(course.root), "--exchange", str(exchange_root)])
    assert status == 0
    results = {r.student: r for r in grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)}
    return course, exchange_root, students, results, (deadline, started, finished)


def test_each_submission_is_an_attempt_with_its_time_and_a_roster_row(through_the_exchange):
    course, _, _, results, (deadline, started, finished) = through_the_exchange
    rows = roster.load(course)
    for student in ("ada", "grace", "mallory"):
        recorded = attempts.of(course, student, NB)
        assert [a.door for a in recorded] == [exchange.DOOR]
        assert started - exchange.CLOCK_SKEW <= recorded[0].time <= finished + dt.timedelta(seconds=1), student
        row = rows[student, NB]
        assert row["lms"] == exchange.DOOR and dt.datetime.fromisoformat(row["submitted_at"]) == recorded[0].time
    assert "2020-01-01" in attempts.of(course, "mallory", NB)[0].source     # stated, and not believed


def test_the_late_policy_applies_and_grades_csv_says_so(through_the_exchange):
    course, _, _, results, (deadline, started, finished) = through_the_exchange
    assert {s: r.score for s, r in results.items()} == {"ada": FULL, "grace": 0, "mallory": FULL}
    grades = {r["student"]: r for r in csv.DictReader(open(course.grades_csv))}
    for student in ("ada", "mallory"):
        when = attempts.of(course, student, NB)[0].time
        percent = expected_percent(when, deadline)
        assert percent == 2 * PENALTY            # 30 hours late: two started days
        row = grades[student]
        assert float(row["late_penalty_percent"]) == percent and row["late"] == "yes"
        assert float(row["score"]) == round(FULL * (1 - percent / 100), 2)
        assert dt.datetime.fromisoformat(row["submitted_at"]).utcoffset() is not None


def test_fetch_feedback_finds_the_graders_page(through_the_exchange):
    course, exchange_root, students, results, (deadline, _, _) = through_the_exchange
    instructor(course, exchange_root, "ExchangeReleaseFeedback", NB)
    percent = expected_percent(attempts.of(course, "ada", NB)[0].time, deadline)
    for name, student in students.items():
        fetched = student.fetch_feedback(NB)
        assert list(fetched) and all(page.endswith(f"/{NB}.html") for page in fetched), fetched
        assert list(fetched.values()) == [feedback.path(course.feedback, results[name]).read_text()]
    page = students["ada"].fetch_feedback(NB)
    assert f"counts as {round(FULL * (1 - percent / 100), 2):g} / {FULL:g}" in next(iter(page.values()))


def test_nbgrader_timestamps_are_read_in_their_zone():
    utc = dt.timezone.utc
    berlin = exchange.stated_time("2026-11-22 23:30:00.500000 CET", utc)
    assert berlin == dt.datetime(2026, 11, 22, 22, 30, 0, 500000, tzinfo=utc)
    assert exchange.stated_time("2026-07-01 12:00:00.000000 CEST", __import__("zoneinfo").ZoneInfo("Europe/Berlin")
                                ) == dt.datetime(2026, 7, 1, 10, 0, tzinfo=utc)
    assert exchange.stated_time("2026-11-22 23:30:00 +0530", utc) == dt.datetime(2026, 11, 22, 18, 0, tzinfo=utc)
    assert exchange.stated_time("2026-11-22 23:30:00.000000 UTC", utc) == dt.datetime(2026, 11, 22, 23, 30, tzinfo=utc)
    assert exchange.stated_time("2026-11-22 23:30:00 NOWHERE", utc) is None
    assert exchange.stated_time("yesterday", utc) is None


def test_nbgrader_collect_is_the_exchange_door_too(tmp_path):
    """`nbgrader collect` instead of make collect-exchange: make grade records what it copied as the exchange's
    attempt, at the time nbgrader's submit wrote in Berlin time, with a roster row; fetch_feedback finds the page."""
    course = Course(make_course(tmp_path / "course"))
    exchange_root = tmp_path / "exchange"
    exchange_root.mkdir()
    instructor(course, exchange_root, "ExchangeReleaseAssignment", NB)
    student = Student("hopper", tmp_path / "home", exchange_root, zone="Europe/Berlin")
    student.fetch(NB)
    before = dt.datetime.now(dt.timezone.utc)
    student.submit(NB, {f"{NB}.ipynb": nbformat.writes(solved_notebook())})
    after = dt.datetime.now(dt.timezone.utc)
    instructor(course, exchange_root, "ExchangeCollect", NB)
    stated = (course.submitted / "hopper" / NB / "timestamp.txt").read_text()
    assert stated.endswith(("CET", "CEST"))                  # nbgrader wrote Berlin's time
    results = {r.student: r for r in grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)}
    recorded = attempts.of(course, "hopper", NB)
    assert [a.door for a in recorded] == [exchange.DOOR] and before.replace(microsecond=0) <= recorded[0].time <= after
    assert roster.load(course)["hopper", NB]["lms"] == exchange.DOOR
    instructor(course, exchange_root, "ExchangeReleaseFeedback", NB)
    assert list(student.fetch_feedback(NB).values()) == [feedback.path(course.feedback, results["hopper"]).read_text()]
