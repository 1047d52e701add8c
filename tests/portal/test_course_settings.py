"""A course's own autograder/course.toml: its [sandbox], [caps] and [portal] values reach the sandbox's limits,
the upload cap and the rules of an assignment without a saved policy; a key it leaves out keeps its default; a
bad file stops with an error naming the file and the key."""
import io

import pytest
from fixture_submissions import ASSIGNMENT
from lms_zips import make_zip

from conftest import client_for, new_portal, notebook_bytes, upload
from posenc_autograder import settings
from posenc_autograder.intake.collect import collect
from posenc_autograder.intake.submissions import Submission
from posenc_autograder.orchestration import grade
from posenc_autograder.portal.routes import create_app
from posenc_autograder.settings import Limits

OWN = """
[sandbox]
memory_bytes = "2 GiB"
cell_seconds = 7

[caps]
notebook_bytes = "1 MB"

[course]
counted_attempt = "latest"

[portal]
max_per_day = 5
feedback_before = "tests"
notebook_seconds = 50
"""


def write_settings(course, text: str):
    path = course.path(settings.SETTINGS_FILE)
    path.write_text(text)
    return path


def padded(size: int) -> bytes:
    """The released notebook, grown to `size` bytes by trailing whitespace (still valid JSON)."""
    data = notebook_bytes()
    return data + b" " * (size - len(data))


def test_a_course_toml_reaches_the_sandbox_limits_the_upload_cap_and_the_portal_defaults(course, tmp_path):
    write_settings(course, OWN)
    portal = new_portal(course)

    limits = portal.worker.limits
    assert (limits.memory_bytes, limits.cell_seconds) == (2 * 2**30, 7)
    assert limits.max_processes == Limits().max_processes == 64        # a key left out keeps its default
    assert portal.worker.limits_for(ASSIGNMENT).notebook_seconds == 50  # [portal] notebook_seconds, under the sandbox's

    rules = portal.worker.default_policy(ASSIGNMENT)
    assert (rules.max_per_day, rules.feedback_before) == (5, "tests")
    with portal.sessions() as db:
        assert portal.worker.policy_for(db, ASSIGNMENT).counts == "latest"          # [course]'s rule, every door's
    assert rules.max_queued == 2 and rules.max_attempts == 0

    client = client_for(create_app(portal, start_worker=False), portal, "alice")
    refused = upload(client, padded(1_100_000))                 # under the default 20 MB, over this course's 1 MB
    assert refused.status_code == 413 and "larger than the 1 MB accepted" in refused.text
    assert upload(client, padded(900_000)).status_code == 303


def test_make_grade_runs_the_sandbox_with_the_courses_limits(course, monkeypatch):
    """grade_all without limits takes the course's: stopped where it first uses them (the grader's fingerprint)."""
    write_settings(course, OWN)
    used = []

    class Stop(Exception):
        pass

    def fingerprint(course, assignment, limits):
        used.append(limits)
        raise Stop

    monkeypatch.setattr(grade, "discover", lambda *args: [Submission("alice", ASSIGNMENT, "", None, [])])
    monkeypatch.setattr(grade, "grader_fingerprint", fingerprint)
    with pytest.raises(Stop):
        grade.grade_all(course, jobs=1, quiet=True)
    assert [(limits.memory_bytes, limits.cell_seconds) for limits in used] == [(2 * 2**30, 7)]


def test_collect_takes_the_courses_cap_for_a_zip_member(course, tmp_path):
    write_settings(course, "[caps]\nnotebook_bytes = \"1 MB\"\n")
    archive = make_zip(tmp_path / "class.zip", {f"smithjohn_12345_67890_{ASSIGNMENT}.ipynb": padded(1_100_000)})
    out = io.StringIO()
    collect(course, archive, ASSIGNMENT, out=out)
    assert "expands to more than 1 MB" in out.getvalue()
    assert not list(course.submitted.glob(f"*/{ASSIGNMENT}/*.ipynb"))


def test_without_a_course_toml_every_default_holds(course):
    assert settings.load(course) == settings.Settings()
    assert new_portal(course).upload_bytes == 20_000_000


@pytest.mark.parametrize("text, named", [
    ('[sandbox]\nmemory_bytes = "3 gigs"\n', "[sandbox] memory_bytes"),
    ("[sandbox]\nmemroy_bytes = 1\n", "memroy_bytes"),
    ("[sandbox]\ncell_seconds = 2.5\n", "[sandbox] cell_seconds"),
    ('[caps]\ncells = "many"\n', "[caps] cells"),
    ('[portal]\ncounts = "best"\n', "unknown keys ['counts']"),             # [course] counted_attempt now
    ('[course]\ncounted_attempt = "worst"\n', "[course] counted_attempt"),
    ("[portal]\ninputs_before_deadline = 1\n", "[portal] inputs_before_deadline"),
    ("[cap]\nnotebook_bytes = 1\n", "'cap'"),
    ("[portal\n", "not valid TOML"),
])
def test_a_bad_course_toml_is_an_error_naming_the_file_and_the_key(course, text, named):
    path = write_settings(course, text)
    with pytest.raises(settings.SettingsError) as error:
        new_portal(course)
    assert str(path) in str(error.value) and named in str(error.value)


def test_an_extension_in_the_roster_is_the_portals_too(course):
    """An extension the instructor writes in roster.csv (for a student of any door) is the one the late policy and
    the portal apply: the portal shows it, and an upload before it is on time, as grades.csv would say."""
    import datetime as dt

    from posenc_autograder.intake import roster

    write_settings(course, f'[course]\ntime_zone = "Europe/Berlin"\n\n[late.{ASSIGNMENT}]\n'
                           f'deadline = "2020-01-10T18:00:00+01:00"\npenalty = 10\n')
    roster.save(course, {("ann", ASSIGNMENT): {"student_id": "ann", "assignment": ASSIGNMENT, "lms": "moodle",
                                                "name": "Ann", "extension": "2099-01-01T12:00:00"}})   # Berlin time
    portal = new_portal(course)
    try:
        portal.new_link("ann", "Ann")
        view = portal.assignment_view("ann", ASSIGNMENT)
        assert view["extended"] and view["deadline"] == dt.datetime(2099, 1, 1, 11, 0)           # naive UTC
        assert not view["decision"].late
        assert not portal.assignment_view("bo", ASSIGNMENT)["extended"]
    finally:
        portal.worker.stop()
