"""A portal rule is declared once (settings.PortalDefaults: type, default, bounds, words) and everything else is
derived from it: the policy's column, the instructor's form (widget, bounds, label), the form's checks, the
course.toml loader's bounds, and the README's table of settings."""
import dataclasses
import html
import re

import pytest
from fixture_submissions import ASSIGNMENT
from notebook_tools import ROOT
from test_access import instructor_client

from conftest import csrf_of
from posenc_autograder import settings
from posenc_autograder.portal.models import Policy
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
