"""The late policy of autograder/course.toml: per day or hour, capped, after a grace period; applied to the score in
every grades file, shown on the feedback page and the dashboard; extensions from the roster or the portal honoured."""
import csv
import datetime as dt
import io
import re
import zoneinfo

import pytest
from fixture_submissions import make_course
from lms_zips import CANVAS, NB, make_zip, roster_rows

from posenc_autograder import cli, settings
from posenc_autograder.course import Course
from posenc_autograder.intake import roster
from posenc_autograder.intake.collect import collect
from posenc_autograder.portal import models
from posenc_autograder.records import gradebook, results_store
from posenc_autograder.reports import late_policy
from posenc_autograder.results import GradedTest, NotebookResult

UTC = dt.timezone.utc
DEADLINE = dt.datetime(2026, 12, 1, 17, 0, tzinfo=UTC)
POLICY = settings.LatePolicy(DEADLINE, per="day", penalty=10, cap=50, grace_minutes=15)


@pytest.mark.parametrize("after, percent", [
    (dt.timedelta(minutes=15), 0),                      # within the grace period
    (dt.timedelta(minutes=16), 10),                     # one started day
    (dt.timedelta(days=2, minutes=16), 30),             # three started days
    (dt.timedelta(days=9), 50),                         # capped
    (-dt.timedelta(days=1), 0),                         # early
])
def test_percent_per_started_day_after_the_grace_period_capped(after, percent):
    assert POLICY.percent_off(DEADLINE + after) == percent


def test_per_hour_and_an_extension_moves_the_deadline():
    hourly = settings.LatePolicy(DEADLINE, per="hour", penalty=2, cap=100)
    assert hourly.percent_off(DEADLINE + dt.timedelta(hours=5, minutes=1)) == 12
    assert POLICY.percent_off(DEADLINE + dt.timedelta(days=2), DEADLINE + dt.timedelta(days=3)) == 0


@pytest.mark.parametrize("table, says", [
    ('per = "week"', 'write "day" or "hour"'),
    ('deadline = "1 December, 5 pm"', "write an ISO 8601 time"),
    ("penalty = 150", "a number from 0 to 100"),
    ("penalty_per_day = 5", "unknown keys"),
])
def test_a_wrong_setting_names_the_key_and_the_fix(tmp_path, table, says):
    course = Course(make_course(tmp_path / "course"))
    course.path(settings.SETTINGS_FILE).write_text(f"[late.{NB}]\n{table}\n")
    with pytest.raises(settings.SettingsError, match=says):
        settings.load(course)


def test_the_late_sentence_states_both_times_in_the_courses_zone():
    """As every page a student reads states a time (settings.for_student): the deadline written in another zone
    (UTC, the portal's) is read in the course's too."""
    late = late_policy.Lateness(20, dt.datetime(2026, 11, 22, 12, 30, tzinfo=dt.timezone.utc),
                                dt.datetime(2026, 11, 20, 17, 0, tzinfo=dt.timezone.utc), False,
                                zoneinfo.ZoneInfo("Europe/Berlin"))
    assert late.sentence(42, 42).startswith("Submitted 2026-11-22 13:30 Europe/Berlin, 43.5 hours after the deadline "
                                            "(2026-11-20 18:00 Europe/Berlin): ")


@pytest.fixture
def late_class(tmp_path):
    """A Canvas class graded 4 points each: one student on time, one 2 days 16 minutes late, one as late with an
    extension in the roster, one as late with an extension granted in the portal."""
    course = Course(make_course(tmp_path / "course"))
    late = DEADLINE + dt.timedelta(days=2, minutes=16)
    dos = lambda when: when.timetuple()[:6]                   # noqa: E731 - the zip's DOS time, read in UTC here
    members = dict(list(CANVAS.items())[:3])                  # smith (two files), doe, lee
    times = {name: dos(DEADLINE if name.startswith("smithjohn") else late) for name in members}
    times[list(CANVAS)[3]] = dos(late)
    assert collect(course, make_zip(tmp_path / "canvas.zip", CANVAS, times=times), NB, out=io.StringIO()) == 0
    students = sorted(roster_rows(course))                    # doejane (late), leeann (late, extended), smithjohn
    students = [students[2], students[0], students[1]]
    course.path(settings.SETTINGS_FILE).write_text(
        f'[late.{NB}]\ndeadline = "{DEADLINE.isoformat()}"\nper = "day"\npenalty = 10\ncap = 50\ngrace_minutes = 15\n')
    rows = roster.load(course)
    rows[students[2], NB].update(extension=(DEADLINE + dt.timedelta(days=3)).isoformat())
    roster.save(course, rows)
    with gradebook.open_gradebook(course) as gb:
        for student in students:
            gradebook.record_scores(gb, student, NB, NB, {"hidden_pe_values": 4.0})
    for student in students:
        results_store.save(course, NotebookResult(student, NB, NB, True, [
            GradedTest("hidden_pe_values", "values", True, 4.0, 4.0, [])], []), None, "grader")
    return course, students


def _csv(path):
    with open(path, newline="") as src:
        return list(csv.DictReader(src))


def test_the_penalty_is_in_every_grades_file_on_the_feedback_page_and_the_dashboard(late_class):
    course, (on_time, late, extended) = late_class
    assert cli.main(["feedback", "--course", str(course.root)]) == 0
    grades = {r["student"]: r for r in _csv(course.grades_csv)}
    assert (grades[on_time]["score"], grades[on_time]["late_penalty_percent"]) == ("4", "0")
    assert (grades[late]["score"], grades[late]["late_penalty_percent"]) == ("2.8", "30")
    assert grades[late]["score_before_late_penalty"] == "4"
    assert (grades[extended]["score"], grades[extended]["late_penalty_percent"]) == ("4", "0")
    canvas = {r["Student"]: r for r in _csv(course.reports / "grades-canvas.csv")}
    column = next(c for c in canvas[next(iter(canvas))] if c.startswith(NB))
    people = roster.load(course)
    assert canvas[people[late, NB]["name"]][column] == "2.8"
    assert canvas[people[on_time, NB]["name"]][column] == "4"
    page = (course.feedback / late / NB / f"{NB}.html").read_text()
    assert "deducts 30% of the score, so it counts as 2.8 / 4" in page
    assert re.search(r"adjust it\)\.\s+This is the attempt that counts: ", page)     # two sentences, not ").This"
    assert "late policy" not in (course.feedback / on_time / NB / f"{NB}.html").read_text()
    assert "late: −30% (late policy)" in (course.reports / "class.html").read_text()


def test_an_extension_granted_in_the_portal_is_honoured(late_class):
    course, (_, late, _) = late_class
    session = models.open_database(course.gradebook_url)()
    session.add_all([models.Student(id=late), models.Extension(
        student_id=late, assignment=NB, deadline=(DEADLINE + dt.timedelta(days=4)).replace(tzinfo=None))])
    session.commit()
    session.close()
    assert cli.main(["feedback", "--course", str(course.root)]) == 0
    grades = {r["student"]: r for r in _csv(course.grades_csv)}
    assert (grades[late]["score"], grades[late]["late_penalty_percent"]) == ("4", "0")


def test_every_file_states_the_time_of_the_attempt_that_counts_not_the_rosters(tmp_path):
    """A Moodle student's later attempt from another door (a file the instructor placed by hand, the latest counts)
    leaves the roster's submitted_at at the Moodle time: the Moodle worksheet's "Last modified", grades.csv and the
    dashboard state the counted attempt's time from the record, with its zone (the dashboard in the course's, as a
    student's pages)."""
    from lms_zips import MOODLE

    from posenc_autograder.intake import attempts

    course = Course(make_course(tmp_path / "course"))
    course.path(settings.SETTINGS_FILE).write_text('[course]\ntime_zone = "Europe/Berlin"\n'
                                                   'counted_attempt = "latest"\n')
    assert collect(course, make_zip(tmp_path / "moodle.zip", MOODLE), NB, out=io.StringIO()) == 0
    student = next(s for s, r in roster_rows(course).items() if r["name"] == "Jane Doe")
    lagging = roster.load(course)[student, NB]["submitted_at"]
    later = dt.datetime(2026, 11, 24, 9, 30, tzinfo=UTC)
    attempts.place(course, attempts.add(course, student, NB, "hand", "placed by hand", later,
                                        {f"{NB}.ipynb": b'{"cells": [], "metadata": {}, "nbformat": 4, '
                                                        b'"nbformat_minor": 5}'}))
    for who in roster_rows(course):
        with gradebook.open_gradebook(course) as gb:
            gradebook.record_scores(gb, who, NB, NB, {"hidden_pe_values": 4.0})
        results_store.save(course, NotebookResult(who, NB, NB, True, [
            GradedTest("hidden_pe_values", "values", True, 4.0, 4.0, [])], []), None, "grader")
    assert cli.main(["feedback", "--course", str(course.root)]) == 0
    stated = "2026-11-24T09:30:00+00:00"
    assert lagging != stated and roster.load(course)[student, NB]["submitted_at"] == lagging     # the roster lags
    moodle = {r["Full name"]: r for r in _csv(course.reports / f"grades-moodle-{NB}.csv")}
    assert moodle["Jane Doe"]["Last modified (submission)"] == stated
    assert {r["student"]: r for r in _csv(course.grades_csv)}[student]["submitted_at"] == stated
    page = (course.reports / "class.html").read_text()
    assert settings.for_student(later, zoneinfo.ZoneInfo("Europe/Berlin")) in page and stated not in page


def test_the_same_notebook_handed_in_again_late_by_another_door_keeps_its_on_time_grade(late_class):
    """A student whose notebook counted on time through the LMS uploads the very same file to the portal after the
    deadline (to read its feedback there): the rule counts the on-time attempt, and every file states its time and
    no deduction. Before, the time was the latest attempt's holding those files: late, 50% off a grade on time."""
    from posenc_autograder.intake import attempts

    course, (on_time, _, _) = late_class
    here = course.submitted / on_time / NB
    files = {path.name: path.read_bytes() for path in here.glob("*.ipynb")}
    attempts.add(course, on_time, NB, "portal", "portal attempt 1", DEADLINE + dt.timedelta(days=9), files)
    for digest in set(attempts.in_submitted(course, on_time, NB).values()):
        attempts.scored(course, on_time, NB, digest, 4.0, 4.0)
    assert cli.main(["feedback", "--course", str(course.root)]) == 0
    row = {r["student"]: r for r in _csv(course.grades_csv)}[on_time]
    assert (row["score"], row["late"], row["late_penalty_percent"]) == ("4", "no", "0"), row
    assert row["submitted_at"] == settings.stamp(DEADLINE)
    assert "late policy" not in (course.feedback / on_time / NB / f"{NB}.html").read_text()


def test_under_latest_the_same_notebook_handed_in_again_late_by_another_door_is_stated_late_everywhere(tmp_path):
    """counted_attempt "latest": a notebook collected from Canvas on time and graded, then the very same file uploaded
    to the portal 2 days after the deadline: the latest attempt counts, late. make grade stores it again at that
    time, so timestamp.txt, the gradebook's time (formgrader's), autograded/'s, grades.csv and the page all state it.
    Before, make grade found the file unchanged and stored nothing again: timestamp.txt kept the Canvas time."""
    import nbformat
    from fixture_submissions import solved_notebook

    from posenc_autograder.intake import attempts
    from posenc_autograder.orchestration.grade import grade_all
    from posenc_autograder.settings import Limits

    course = Course(make_course(tmp_path / "course"))
    course.path(settings.SETTINGS_FILE).write_text(
        f'[course]\ncounted_attempt = "latest"\n[late.{NB}]\ndeadline = "{DEADLINE.isoformat()}"\nper = "day"\n'
        f'penalty = 10\ncap = 50\n')
    files = {f"{NB}.ipynb": nbformat.writes(solved_notebook()).encode()}
    attempts.place(course, attempts.add(course, "ann", NB, "lms", "Canvas submission 93",
                                        DEADLINE - dt.timedelta(days=1), files))
    limits = Limits(cell_seconds=20, notebook_seconds=60)
    [first] = grade_all(course, jobs=1, isolate=False, limits=limits, quiet=True)
    late = DEADLINE + dt.timedelta(days=2)
    attempts.add(course, "ann", NB, "portal", "portal attempt 1", late, files)
    grade_all(course, jobs=1, isolate=False, limits=limits, quiet=True)
    utc = late.astimezone(UTC).replace(tzinfo=None)
    assert attempts.stated_time(course.submitted / "ann" / NB) == utc
    assert attempts.stated_time(course.autograded / "ann" / NB) == utc
    with gradebook.open_gradebook(course) as gb:
        assert gb.find_submission(NB, "ann").timestamp == utc
    row = {r["student"]: r for r in _csv(course.grades_csv)}["ann"]
    assert (row["late"], row["late_penalty_percent"], row["submitted_at"]) == ("yes", "20", settings.stamp(late))
    assert "deducts 20% of the score" in (course.feedback / "ann" / NB / f"{NB}.html").read_text()
    assert first.score > 0
