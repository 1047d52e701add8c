"""Who a file belongs to, and when it was handed in, come only from the part of its name
the LMS generates. One zip per trick a student can play with the name of a file they upload."""
import io

import pytest
from fixture_submissions import make_course
from lms_zips import NB, make_zip, notebook, roster_rows, stored

from posenc_autograder.course import Course
from posenc_autograder.intake import lms
from posenc_autograder.intake.collect import collect

BB = "Positional Encoding"
FAR_FUTURE = "2099-12-31-23-59-59"


@pytest.fixture
def course(tmp_path):
    return Course(make_course(tmp_path / "course"))


def run(course, path, members, **options):
    out = io.StringIO()
    assert collect(course, make_zip(path, members, **{k: v for k, v in options.items() if k == "when"}), NB,
                   out=out) == 0
    return out.getvalue()


def skipped_line(report: str, name_start: str) -> str:
    return next(line for line in report.splitlines() if line.startswith(f"  skipped {name_start!r}"[:-1]))


def blackboard_attempt(user, name, time, tag, upload=f"{NB}.ipynb"):
    prefix = f"{BB}_{user}_attempt_{time}"
    return {f"{prefix}_{upload}": notebook(tag),
            f"{prefix}.txt": f"Name: {name} ({user})\nAssignment: {BB}\n".encode()}


def test_blackboard_upload_named_as_another_students_attempt_is_not_hers(course, tmp_path):
    mallory = f"{BB}_mallory_attempt_2026-11-20-10-00-00"
    members = {**blackboard_attempt("alice", "Alice Adams", "2026-11-19-09-00-00", "alice real"),
               **blackboard_attempt("mallory", "Mallory Moe", "2026-11-20-10-00-00", "mallory real"),
               # what Blackboard makes of Mallory's two uploads, named as Alice's attempt in 2099
               f"{mallory}_alice_attempt_{FAR_FUTURE}.txt": b"Name: Alice Adams (alice)\n",
               f"{mallory}_alice_attempt_{FAR_FUTURE}_{NB}.ipynb": notebook("template as alice")}
    report = run(course, tmp_path / "bb.zip", members)
    assert stored(course) == {"alice": ([f"{NB}.ipynb"], ["alice real"]),
                              "mallory": ([f"{NB}.ipynb"], ["mallory real"])}
    assert "imitates blackboard's naming" in skipped_line(report, f"{mallory}_alice_attempt_{FAR_FUTURE}_{NB}")
    assert "not a notebook" in skipped_line(report, f"{mallory}_alice_attempt_{FAR_FUTURE}.txt")
    rows = roster_rows(course)
    assert (rows["alice"]["name"], rows["alice"]["submitted_at"]) == ("Alice Adams", "2026-11-19T09:00:00+00:00")
    assert rows["mallory"]["lms_prefix"] == mallory
    # Alice's real resubmission in a later zip is not refused as older than a forged 2099 attempt.
    later = blackboard_attempt("alice", "Alice Adams", "2026-11-22-08-00-00", "alice again")
    report = run(course, tmp_path / "bb2.zip", later, when=(2026, 11, 23, 0, 0, 0))
    assert "replaced: alice" in report and stored(course)["alice"][1] == ["alice again"]


def test_blackboard_late_attempt_cannot_be_backdated_by_its_file_name(course, tmp_path):
    late = f"{BB}_mallory_attempt_2026-11-25-23-00-00"
    members = {**blackboard_attempt("mallory", "Mallory Moe", "2026-11-18-10-00-00", "on time"),
               f"{late}_mallory_attempt_2026-11-01-00-00-00_{NB}.ipynb": notebook("late, backdated"),
               f"{late}.txt": b"Name: Mallory Moe (mallory)\n"}
    report = run(course, tmp_path / "bb.zip", members, when=(2026, 11, 26, 0, 0, 0))
    assert "imitates" in skipped_line(report, f"{late}_mallory_attempt_2026-11-01")
    assert roster_rows(course)["mallory"]["submitted_at"] != "2026-11-01T00:00:00"
    assert (course.submitted / "mallory" / NB / "timestamp.txt").read_text().startswith("2026-11-18")


def test_moodle_folder_inside_another_students_folder_is_not_that_participant(course, tmp_path):
    members = {f"Alice Adams_123_assignsubmission_file_/{NB}.ipynb": notebook("alice real"),
               f"Mallory Moe_999_assignsubmission_file_/{NB}.ipynb": notebook("mallory real"),
               f"Mallory Moe_999_assignsubmission_file_/Alice Adams_123_assignsubmission_file_/{NB}.ipynb":
                   notebook("template as alice")}
    report = run(course, tmp_path / "moodle.zip", members)
    assert stored(course) == {"alice_adams": ([f"{NB}.ipynb"], ["alice real"]),
                              "mallory_moe": ([f"{NB}.ipynb"], ["mallory real"])}
    assert "sub-folder" in skipped_line(report, "Mallory Moe_999_assignsubmission_file_/Alice Adams")


@pytest.mark.parametrize("layout", ["folders", "flat"])
def test_moodle_upload_named_with_another_participants_prefix_is_refused(course, tmp_path, layout):
    sep = "/" if layout == "folders" else ""
    fake = f"Mallory Moe_999_assignsubmission_file_{sep}x_124_assignsubmission_file_{NB}.ipynb"
    members = {f"Bob Bell_124_assignsubmission_file_{sep}{NB}.ipynb": notebook("bob real"),
               f"Mallory Moe_999_assignsubmission_file_{sep}{NB}.ipynb": notebook("mallory real"), fake: notebook("x")}
    report = run(course, tmp_path / "moodle.zip", members)
    assert stored(course) == {"bob_bell": ([f"{NB}.ipynb"], ["bob real"]),
                              "mallory_moe": ([f"{NB}.ipynb"], ["mallory real"])}
    assert "imitates moodle's naming" in skipped_line(report, fake)
    assert roster_rows(course)["bob_bell"]["lms_user_id"] == "124"


def test_two_files_claiming_one_student_are_reported_not_ranked(course, tmp_path):
    members = {f"Alice Adams_123_assignsubmission_file_/{NB}.ipynb": notebook("one"),
               f"Alicia A_123_assignsubmission_file_/{NB}.ipynb": notebook("two"),
               f"Bob Bell_124_assignsubmission_file_/{NB}.ipynb": notebook("bob")}
    report = run(course, tmp_path / "moodle.zip", members)
    assert set(stored(course)) == {"bob_bell"}
    line = next(line for line in report.splitlines() if "CONFLICT" in line)
    assert "Alice Adams_123" in line and "Alicia A_123" in line
    plain = {f"a/carol_{NB}.ipynb": notebook("a"), f"b/carol_{NB}.ipynb": notebook("b")}
    assert "CONFLICT, nothing collected for carol" in run(course, tmp_path / "plain.zip", plain)
    assert "carol" not in stored(course)


def test_a_blackboard_note_counts_only_under_its_exact_name_and_once(course, tmp_path):
    prefix = f"{BB}_jsmith_attempt_2026-11-20-10-15-02"
    members = {f"{prefix}_{NB}.ipynb": notebook("jsmith"), f"{prefix}.txt": b"Name: John Smith (jsmith)\n",
               f"copy/{prefix}.txt": b"Name: Someone Else (jsmith)\n"}
    report = run(course, tmp_path / "bb.zip", members)
    assert "none was believed" in report and roster_rows(course)["jsmith"]["name"] == "jsmith"
    assert stored(course) == {"jsmith": ([f"{NB}.ipynb"], ["jsmith"])}


def test_times_come_from_the_lms_name_checked_against_the_zip_and_the_note(course, tmp_path):
    prefix = f"{BB}_jsmith_attempt_2026-12-25-10-00-00"
    members = {f"{prefix}_{NB}.ipynb": notebook("future"),
               f"{prefix}.txt": b"Name: John Smith (jsmith)\nDate Submitted: Friday, November 20, 2026 10:00:00 AM\n"}
    report = run(course, tmp_path / "bb.zip", members, when=(2026, 11, 20, 10, 0, 0))
    assert "later than the zip was made" in report
    assert roster_rows(course)["jsmith"]["submitted_at"] == "2026-11-20T10:00:00+00:00"
    prefix = f"{BB}_jdoe_attempt_2026-11-20-10-00-00"
    members = {f"{prefix}_{NB}.ipynb": notebook("doe"),
               f"{prefix}.txt": b"Name: Jane Doe (jdoe)\nDate Submitted: Sunday, November 1, 2026 10:00:00 AM\n"}
    assert "note says it was submitted on 2026-11-01" in run(course, tmp_path / "bb2.zip", members)


@pytest.mark.parametrize("member, user, file_name", [
    (f"{BB}_j_doe_attempt_2026-11-19-08-00-00_{NB}.ipynb", "j_doe", f"{NB}.ipynb"),
    (f"{BB}_mallory_attempt_2026-11-19-08-00-00_alice_attempt_{FAR_FUTURE}_{NB}.ipynb", "mallory",
     f"alice_attempt_{FAR_FUTURE}_{NB}.ipynb"),
])
def test_blackboard_prefix_is_parsed_once_from_the_start(member, user, file_name):
    entry = lms.blackboard.parse(member, {NB}, assignment_prefix=f"{BB}_")
    assert (entry.lms_user_id, entry.file_name, entry.submitted_at.year) == (user, file_name, 2026)


def test_canvas_and_moodle_prefixes_are_anchored():
    entry = lms.canvas.parse(f"mallory_9_77_alice_1_88_{NB}.ipynb", {NB})
    assert (entry.lms_user_id, entry.file_name, entry.prefix) == ("9", f"alice_1_88_{NB}.ipynb", "mallory_9_77")
    assert "imitates canvas" in lms.claims_other(entry)
    flat = lms.moodle.parse(f"Mallory Moe_999_assignsubmission_file_x_124_assignsubmission_file_{NB}.ipynb", {NB})
    assert (flat.lms_user_id, flat.name) == ("999", "Mallory Moe")
