"""A portal rule is declared once (settings.PortalDefaults: type, default, bounds, words) and everything else is
derived from it: the policy's column, the instructor's form (widget, bounds, label), the form's checks, the
course.toml loader's bounds, and the README's table of settings."""
import dataclasses
import datetime as dt
import html
import re
from zoneinfo import ZoneInfo

import pytest
from fixture_submissions import ASSIGNMENT
from notebook_tools import ROOT
from test_access import instructor_client

from conftest import client_for, csrf_of
from posenc_autograder import settings
from posenc_autograder.portal.models import Extension, Policy
from posenc_autograder.portal.web import forms

RULES = [(f.name, settings.rule_of(f)) for f in dataclasses.fields(settings.PortalDefaults)]


def test_every_rule_is_declared_with_its_words():
    assert RULES and all(declared is not None and declared.words for _, declared in RULES)


def test_the_readme_states_each_rule_in_its_declared_words():
    readme = (ROOT / "README.md").read_text()
    for name, declared in RULES:
        row = re.search(rf"^\| `\[portal\] {name}` \| [^|]* \| (.*) \|$", readme, re.M)
        assert row is not None and row[1] == declared.stated(), name


def test_each_rule_is_a_column_of_the_policy_with_its_default():
    columns = {column.name: column for column in Policy.__table__.columns}
    for field in dataclasses.fields(settings.PortalDefaults):
        assert columns[field.name].default.arg == field.default, field.name


def test_the_form_shows_each_rule_with_its_words_and_bounds(app, portal):
    page = html.unescape(instructor_client(app, portal).get("/instructor").text)
    limit = portal.worker.limits.notebook_seconds
    for name, declared in RULES:
        assert (declared.words[:1].upper() + declared.words[1:]) in page, name
        if name == "notebook_seconds":
            assert f'min="1" max="{limit}" name="notebook_seconds"' in page
        elif not declared.choices and isinstance(getattr(settings.PortalDefaults(), name), int) \
                and not isinstance(getattr(settings.PortalDefaults(), name), bool):
            assert f'min="{declared.low}" max="{declared.high}" name="{name}"' in page, name
    for value, shown in settings.FEEDBACK_CHOICES:
        assert f'<option value="{value}"' in page and shown in page


def test_the_form_is_checked_against_the_declared_bounds(app, portal):
    teacher = instructor_client(app, portal)

    def post(**fields):
        return teacher.post(f"/instructor/policy/{ASSIGNMENT}", data={"csrf": csrf_of(teacher, "/instructor"),
                                                                       **fields}, follow_redirects=False)
    assert post(notebook_seconds="0").status_code == 400                   # low = 1
    assert post(notebook_seconds=str(portal.worker.limits.notebook_seconds + 1)).status_code == 400
    assert post(max_attempts="-1").status_code == 400
    assert post(feedback_before="all").status_code == 400
    assert post(inputs_before_deadline="maybe").status_code == 400
    assert post(max_attempts="3", inputs_before_deadline="yes", feedback_before="tests").status_code == 303
    assert post(max_queued="1").status_code == 303                          # the rules left out keep theirs
    with portal.sessions() as db:
        saved = db.get(Policy, ASSIGNMENT)
    assert (saved.max_attempts, saved.inputs_before_deadline, saved.feedback_before, saved.max_queued) == \
        (3, True, "tests", 1)


def test_course_toml_is_held_to_the_same_bounds(tmp_path):
    with pytest.raises(settings.SettingsError, match=r"notebook_seconds = 0: write a whole number from 1"):
        settings._section(tmp_path / "course.toml", "portal", settings.PortalDefaults, {"notebook_seconds": 0})


def test_a_time_field_is_parsed_and_an_empty_one_is_none():
    fields = {f.name: f for f in forms.policy_fields()}
    assert forms.field_value(fields["deadline"], "") is None
    with pytest.raises(ValueError, match="deadline"):
        forms.field_value(fields["deadline"], "tomorrow")


def test_the_forms_times_are_read_and_shown_in_the_courses_zone_which_they_name(app, portal, course):
    """A course in New York: the instructor writes the deadline as the students read it (settings.for_student), and
    the form shows it back so. Before, the form read and showed naive UTC, labelled '(times in UTC)': 23:59 written
    was a deadline of 18:59 New York time on every student's page."""
    (course.root / "autograder" / "course.toml").write_text('[course]\ntime_zone = "America/New_York"\n')
    teacher = instructor_client(app, portal)
    client_for(app, portal, "ann")
    form = {"csrf": csrf_of(teacher, "/instructor"), "opens_at": "2026-11-01T09:00", "deadline": "2026-11-20T23:59"}
    assert teacher.post(f"/instructor/policy/{ASSIGNMENT}", data=form, follow_redirects=False).status_code == 303
    with portal.sessions() as db:
        saved = db.get(Policy, ASSIGNMENT)
    assert (saved.opens_at, saved.deadline) == (dt.datetime(2026, 11, 1, 14, 0), dt.datetime(2026, 11, 21, 4, 59))
    page = teacher.get("/instructor").text
    assert "(times in the course's zone, America/New_York)" in page and "times in UTC" not in page
    assert 'name="deadline" value="2026-11-20T23:59"' in page and 'name="opens_at" value="2026-11-01T09:00"' in page
    assert "2026-11-20 23:59 America/New_York" in client_for(app, portal, "ann").get(f"/assignments/{ASSIGNMENT}").text
    extension = {"csrf": csrf_of(teacher, "/instructor"), "student": "ann", "assignment": ASSIGNMENT,
                 "deadline": "2026-11-25T12:00"}
    assert teacher.post("/instructor/extension", data=extension, follow_redirects=False).status_code == 303
    with portal.sessions() as db:
        assert db.get(Extension, ("ann", ASSIGNMENT)).deadline == dt.datetime(2026, 11, 25, 17, 0)
    page = teacher.get("/instructor").text
    assert "New deadline (America/New_York; empty removes the extension)" in page
    assert "2026-11-25 12:00 America/New_York" in page.split('data-key="ann/' + ASSIGNMENT + '"')[1].split("</tr>")[0]
    assert forms.parse_time("2026-11-01T01:30", "t", ZoneInfo("America/New_York")) == dt.datetime(2026, 11, 1, 5, 30)


def test_a_rule_course_toml_states_is_shown_to_be_changed_there_and_is_not_read_from_the_form(app, portal, course):
    """course.toml's [late.<assignment>] deadline and grace override the portal's. The form showed them as fields
    to edit, and a deadline written there was saved and never applied (the page showed course.toml's again)."""
    (course.root / "autograder" / "course.toml").write_text(
        f'[course]\ntime_zone = "America/New_York"\n[late.{ASSIGNMENT}]\ndeadline = "2026-11-20T23:59:00"\n'
        f'per = "day"\npenalty = 10\ncap = 50\ngrace_minutes = 15\n')
    teacher = instructor_client(app, portal)
    form = teacher.get("/instructor").text.split(f'id="policy-{ASSIGNMENT}"')[1].split("</form>")[0]
    there = f"(set in <code>autograder/course.toml</code>, <code>[late.{ASSIGNMENT}]</code>: change it there)"
    assert form.count(there) == 2
    assert 'name="deadline" value="2026-11-20T23:59" disabled' in form and 'name="grace_minutes" value="15" disabled' \
        in form and 'name="opens_at" value=""' in form and "disabled" not in form.split('name="max_attempts"')[1]
    post = {"csrf": csrf_of(teacher, "/instructor"), "deadline": "2026-12-01T10:00", "grace_minutes": "30",
            "max_attempts": "3"}
    assert teacher.post(f"/instructor/policy/{ASSIGNMENT}", data=post, follow_redirects=False).status_code == 303
    with portal.sessions() as db:
        saved = db.get(Policy, ASSIGNMENT)
        assert (saved.deadline, saved.grace_minutes, saved.max_attempts) == (None, 0, 3)
    assert "2026-11-20 23:59 America/New_York" in client_for(app, portal, "ann").get(f"/assignments/{ASSIGNMENT}").text
