"""The portal shows the feedback page make grade writes: for the attempt that counts, the gradebook's points (an
instructor's manual grade), the instructor's comments, the late policy's deduction and the counting rule, as
grades.csv and the LMS's page state them; for any other attempt, its own points and what the late policy deducts
from it."""
import datetime as dt
import hashlib
import zoneinfo

from fixture_submissions import ASSIGNMENT

from conftest import client_for, notebook_bytes, upload
from posenc_autograder import settings
from posenc_autograder.intake import attempts
from posenc_autograder.portal.models import utcnow
from posenc_autograder.records import gradebook
from posenc_autograder.reports import late_policy

LATE_POLICY = f'[late.{ASSIGNMENT}]\nper = "day"\npenalty = 10\ncap = 50\ngrace_minutes = 0\n'


def test_the_attempt_that_counts_is_shown_with_manual_grades_comments_and_the_late_deduction(app, portal, course):
    """On its feedback page, and with the same number on its own page and its row of the assignment page."""
    (course.root / "autograder" / "course.toml").write_text(LATE_POLICY)
    portal.set_policy(ASSIGNMENT, {"deadline": utcnow() - dt.timedelta(hours=3), "late_days": 2})
    carol = client_for(app, portal, "carol")
    assert upload(carol, notebook_bytes("late")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    with gradebook.open_gradebook(course) as gb:                 # the instructor, in formgrader
        notebook = gb.find_submission(ASSIGNMENT, "carol").notebooks[0]
        grade = min((g for g in notebook.grades if g.max_score), key=lambda g: g.name)
        grade.manual_score = grade.max_score
        notebook.comments[0].manual_comment = "See me about the scaling"
        gb.db.commit()
        final = gradebook.final_scores(gb, "carol", ASSIGNMENT)[0]
    page = carol.get("/attempts/1/feedback").text
    assert "See me about the scaling" in page and "set by your instructor" in page
    assert f"counts as {late_policy.penalised(final, 10):g} / 42" in page and "3.0 hours after the deadline" in page
    assert "This is the attempt that counts" in page
    stated = f"{late_policy.penalised(final, 10):g} / 42"           # the attempt's page and row state it too
    assert f"Graded: {stated}." in carol.get("/attempts/1").text
    assert carol.get("/attempts/1/status.json").json()["score"] == late_policy.penalised(final, 10)
    assert f"<td>{stated}</td>" in carol.get(f"/assignments/{ASSIGNMENT}").text


def test_a_file_uploaded_again_after_one_the_grader_failed_on_is_a_new_attempt_at_its_own_time(app, portal, course,
                                                                                              monkeypatch):
    """X, then Y on which the grader fails (a grader error, no points), then X again after the deadline: Y is still
    an attempt the student made, so the third upload is attempt 3, which 'latest' counts, late at its own time. The
    old record held graded attempts only, so it folded the third X into attempt 1: on time, and attempt 1 counted."""
    (course.root / "autograder" / "course.toml").write_text('[course]\ncounted_attempt = "latest"\n' + LATE_POLICY)
    portal.set_policy(ASSIGNMENT, {"deadline": utcnow() + dt.timedelta(hours=1), "late_days": 2,
                                   "feedback_before": "full", "max_attempts": 4})
    hal = client_for(app, portal, "hal")
    x, y = notebook_bytes("x"), notebook_bytes("y")
    graded = portal.worker._graded

    def failing_on_y(attempt):
        if attempt.sha256 == hashlib.sha256(y).hexdigest():
            raise RuntimeError("the sandbox refused the job")
        return graded(attempt)

    monkeypatch.setattr(portal.worker, "_graded", failing_on_y)
    assert [upload(hal, x).headers["location"], upload(hal, y).headers["location"]] == ["/attempts/1", "/attempts/2"]
    assert portal.worker.run_until_idle() >= 2
    assert hal.get("/attempts/2/status.json").json()["status"] == "error"
    portal.now = lambda: utcnow() + dt.timedelta(hours=2)                    # an hour after the deadline
    assert upload(hal, x).headers["location"] == "/attempts/3"
    assert portal.worker.run_until_idle() == 1
    assert [a.source for a in attempts.of(course, "hal", ASSIGNMENT)] == ["portal attempt 1", "portal attempt 3"]
    assert "This is the attempt that counts" in hal.get("/attempts/3/feedback").text
    assert "This is the attempt that counts" not in hal.get("/attempts/1/feedback").text
    assert "1.0 hours after the deadline" in hal.get("/attempts/3/feedback").text
    with portal.sessions() as db:
        assert portal.grades(db, "hal")[("hal", ASSIGNMENT)].late


def test_an_attempt_the_grader_failed_on_shows_no_score_on_any_page(app, portal, course, monkeypatch):
    """A grader error is not graded: its row on the assignment page, its own page and its status say no score, as
    every grades file does (blank, never 0). The old row said '0 / 42' beside 'error'."""
    ivy = client_for(app, portal, "ivy")
    monkeypatch.setattr(portal.worker, "_graded", lambda attempt: (_ for _ in ()).throw(RuntimeError("refused")))
    assert upload(ivy, notebook_bytes("x")).headers["location"] == "/attempts/1"
    portal.worker.run_until_idle()
    status = ivy.get("/attempts/1/status.json").json()
    assert status["status"] == "error" and status["score"] is None
    row = ivy.get(f"/assignments/{ASSIGNMENT}").text.split("<td>1")[1].split("</tr>")[0]
    assert "error" in row and "0 / 42" not in row and "/ 42" not in row
    assert "0 / 42" not in ivy.get("/attempts/1").text


def test_an_attempt_that_does_not_count_shows_its_own_late_deduction(app, portal, course):
    (course.root / "autograder" / "course.toml").write_text('[course]\ncounted_attempt = "latest"\n' + LATE_POLICY)
    portal.set_policy(ASSIGNMENT, {"deadline": utcnow() - dt.timedelta(hours=30), "late_days": 2})
    dan = client_for(app, portal, "dan")
    assert upload(dan, notebook_bytes("first")).status_code == 303
    assert upload(dan, notebook_bytes("second")).status_code == 303
    assert portal.worker.run_until_idle() == 2
    earlier = dan.get("/attempts/1/feedback").text                           # the second one counts
    assert "30.0 hours after the deadline" in earlier and "deducts 20% of the score" in earlier
    assert "This is the attempt that counts" not in earlier
    assert "This is the attempt that counts" in dan.get("/attempts/2/feedback").text


def test_an_attempt_stored_as_counting_is_not_shown_as_counting_once_another_doors_newer_attempt_counts(app, portal,
                                                                                                        course):
    (course.root / "autograder" / "course.toml").write_text('[course]\ncounted_attempt = "latest"\n')
    eve = client_for(app, portal, "eve")
    assert upload(eve, notebook_bytes("portal")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    assert "This is the attempt that counts" in eve.get("/attempts/1/feedback").text
    attempts.add(course, "eve", ASSIGNMENT, "lms", "a Canvas zip", utcnow().replace(tzinfo=dt.timezone.utc)
                 + dt.timedelta(minutes=1), {"positional_encoding.ipynb": notebook_bytes("lms")})
    assert "This is the attempt that counts" not in eve.get("/attempts/1/feedback").text    # before any store


def test_an_attempt_handed_in_through_the_lms_is_on_the_assignment_page_not_said_to_be_none(app, portal, course):
    """A student whose one attempt came in through a Canvas zip and was graded: the page shows its grade, and says
    what was uploaded here (none, the limits here count only uploads here) and the attempt handed in another way,
    tagged as the one that counts once scores show. Before, it said '0 used' and 'No attempts yet.' beside the
    grade."""
    (course.root / "autograder" / "course.toml").write_text('[course]\ncounted_attempt = "latest"\n')
    portal.set_policy(ASSIGNMENT, {"max_attempts": 3, "feedback_before": "full"})
    fay = client_for(app, portal, "fay")
    recorded = attempts.add(course, "fay", ASSIGNMENT, "lms", "Canvas submission 93",
                            dt.datetime(2026, 11, 20, 9, 30, tzinfo=dt.timezone.utc),
                            {"positional_encoding.ipynb": notebook_bytes("lms")})
    attempts.place(course, recorded)
    page = fay.get(f"/assignments/{ASSIGNMENT}").text
    assert "0 used" not in page and "No attempts yet" not in page
    assert "0 uploaded here, 3 left; 1 handed in another way, which the limits here do not count" in page
    assert "an LMS download (Canvas submission 93)" in page and "2026-11-20 09:30 UTC" in page
    assert '<span class="tag">counts</span>' in page


def test_a_file_uploaded_again_after_another_is_a_new_attempt_that_counts_at_its_own_time(app, portal, course):
    """X, then Y, then X again: under 'latest' the third upload is an attempt of its own and counts, late at its own
    time, as an LMS door's X, Y, X does (intake/attempts.py's one rule); X once more right after is that attempt.
    Its page, its feedback, the assignment and home pages, the grade and the class's report agree. The old portal
    answered 'not counted again' (attempt 1) and kept Y counting, on time."""
    (course.root / "autograder" / "course.toml").write_text('[course]\ncounted_attempt = "latest"\n' + LATE_POLICY)
    portal.set_policy(ASSIGNMENT, {"deadline": utcnow() + dt.timedelta(hours=1), "late_days": 2,
                                   "feedback_before": "full", "max_attempts": 4})
    gil = client_for(app, portal, "gil")
    x, y = notebook_bytes("x"), notebook_bytes("y")
    assert [upload(gil, x).headers["location"], upload(gil, y).headers["location"]] == ["/attempts/1", "/attempts/2"]
    assert portal.worker.run_until_idle() == 2
    portal.now = lambda: utcnow() + dt.timedelta(hours=2)                    # an hour after the deadline
    assert upload(gil, x).headers["location"] == "/attempts/3"
    again = upload(gil, x)                                                   # nothing in between: the same attempt
    assert again.headers["location"] == "/attempts/3?again=1"
    notice = gil.get(again.headers["location"]).text
    assert "This file is the one you last uploaded, attempt 3" in notice and "not counted again" not in notice
    assert portal.worker.run_until_idle() == 1
    assert [a.source for a in attempts.of(course, "gil", ASSIGNMENT)] == [f"portal attempt {n}" for n in (1, 2, 3)]
    assert "This is the attempt that counts" in gil.get("/attempts/3/feedback").text
    assert "This is the attempt that counts" not in gil.get("/attempts/2/feedback").text
    assert "1.0 hours after the deadline" in gil.get("/attempts/3/feedback").text
    assert 'class="tag late">late' in gil.get("/attempts/3").text
    page = gil.get(f"/assignments/{ASSIGNMENT}").text
    assert "3 uploaded here, 1 left" in page                                 # the limits count the third upload
    assert page.count('<span class="tag">counts</span>') == 1 and '<td>3 <span class="tag">counts</span></td>' in page
    home = gil.get("/").text
    assert "3 used, 1 left" in home and "(late: −10%)" in home
    with portal.sessions() as db:
        grade = portal.grades(db, "gil")[("gil", ASSIGNMENT)]
    assert grade.late                                                        # grades.csv's lateness: attempt 3's
    [report] = [r for r in portal.progress()["rows"] if (r["student"], r["assignment"]) == ("gil", ASSIGNMENT)]
    assert report["attempts"] == 3 and report["late"]


def test_a_portal_page_and_the_feedback_page_state_the_same_time_in_the_courses_zone(app, portal, course):
    """A student reads one zone everywhere: the attempt's page, the assignment page and the feedback page give its
    upload time, and the deadline, in the course's zone, named. The portal's pages said 'UTC' while the feedback
    page gave the deadline's own offset."""
    (course.root / "autograder" / "course.toml").write_text('[course]\ntime_zone = "America/New_York"\n' + LATE_POLICY)
    deadline = utcnow().replace(second=0, microsecond=0) - dt.timedelta(hours=3)
    portal.set_policy(ASSIGNMENT, {"deadline": deadline, "late_days": 2, "feedback_before": "full"})
    gil = client_for(app, portal, "gil")
    assert upload(gil, notebook_bytes("late")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    uploaded = next(t for t in attempts.of(course, "gil", ASSIGNMENT)).time
    said = settings.for_student(uploaded, zoneinfo.ZoneInfo("America/New_York"))
    assert said.endswith(" America/New_York")
    feedback = gil.get("/attempts/1/feedback").text
    assert f"Submitted {said}," in feedback and f"uploaded {said}" in gil.get("/attempts/1").text
    assignment = gil.get(f"/assignments/{ASSIGNMENT}").text
    stated_deadline = settings.for_student(deadline, zoneinfo.ZoneInfo("America/New_York"))
    assert stated_deadline in assignment and f"({stated_deadline})" in feedback and said in assignment
    assert "America/New_York" in gil.get("/").text and "UTC" not in gil.get("/").text


def test_an_attempt_handed_in_another_way_after_the_deadline_is_marked_late_as_an_upload_here_is(app, portal, course):
    """A Canvas attempt 13 hours past the deadline, whose grade the page states 'after the late policy's −10%': its
    row under 'Handed in another way' is marked late as an upload here past the same deadline is (it carried no
    mark, beside the portal's late upload marked late); one before the deadline is not."""
    (course.root / "autograder" / "course.toml").write_text(LATE_POLICY)
    deadline = dt.datetime(2026, 11, 20, 23, 59)
    portal.set_policy(ASSIGNMENT, {"deadline": deadline, "late_days": 5, "feedback_before": "full"})
    fay = client_for(app, portal, "fay")
    for hours, source in ((-2, "Canvas submission 92"), (13, "Canvas submission 93")):
        recorded = attempts.add(course, "fay", ASSIGNMENT, "lms", source,
                                (deadline + dt.timedelta(hours=hours)).replace(tzinfo=dt.timezone.utc),
                                {"positional_encoding.ipynb": notebook_bytes(source)})
        attempts.place(course, recorded)
    rows = fay.get(f"/assignments/{ASSIGNMENT}").text.split('id="attempts-elsewhere"')[1].split("</table>")[0]
    late = {row.split("(")[1].split(")")[0]: 'class="tag late">late<' in row for row in rows.split("<tr>")[2:]}
    assert late == {"Canvas submission 92": False, "Canvas submission 93": True}


def two_graded_attempts_the_latest_counting(app, portal, course, student: str):
    """`student`'s client after two uploads, both graded, under the course's rule that the latest counts (points
    shown): the first does not count, the second does."""
    (course.root / "autograder" / "course.toml").write_text('[course]\ncounted_attempt = "latest"\n')
    portal.set_policy(ASSIGNMENT, {"feedback_before": "full"})
    client = client_for(app, portal, student)
    assert upload(client, notebook_bytes("first")).status_code == 303
    assert upload(client, notebook_bytes("second")).status_code == 303
    assert portal.worker.run_until_idle() == 2
    return client


def test_an_attempt_that_does_not_count_says_so_and_which_one_does(app, portal, course):
    """The page of an attempt that does not count stated its own score alone (30.8 / 42 for walker's late upload,
    while an LMS attempt's 35.55 was his grade), as if it were the grade; it now says it is not the one the grade
    counts, by the course's rule. The one that counts says nothing of the kind."""
    dan = two_graded_attempts_the_latest_counting(app, portal, course, "dan")
    rule = attempts.RULES["latest"]
    said = f"This attempt does not count toward your grade, which counts {rule}"
    assert said in dan.get("/attempts/1/feedback").text and said not in dan.get("/attempts/2/feedback").text


def test_an_attempts_own_page_says_whether_it_counts_toward_the_grade(app, portal, course):
    """The page of an attempt (where an upload lands) says, in its feedback page's words, that it does not count
    toward the grade, or that it is the one that counts; while points are hidden, only the rule. Before, it showed
    the attempt's score alone, as if it were the grade."""
    eve = two_graded_attempts_the_latest_counting(app, portal, course, "eve")
    rule = attempts.RULES["latest"]
    first, second = (" ".join(eve.get(f"/attempts/{n}").text.split()) for n in (1, 2))
    assert f"This attempt does not count toward your grade, which counts {rule}" in first
    assert f"This is the attempt that counts: {rule}." in second and "does not count" not in second
    portal.set_policy(ASSIGNMENT, {"feedback_before": "none", "deadline": dt.datetime(2099, 1, 1)})
    hidden = " ".join(eve.get("/attempts/1").text.split())
    assert f"Not every attempt counts toward your grade: it counts {rule}" in hidden and "does not count" not in hidden
