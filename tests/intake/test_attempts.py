"""The record of every attempt (intake/attempts.py): every door's attempt kept with its door, time (with its zone)
and digest, no door's file overwritten by another's, and one rule choosing the attempt that counts."""
import datetime as dt
import zoneinfo

import pytest
from fixture_submissions import make_course

from posenc_autograder import settings
from posenc_autograder.course import Course
from posenc_autograder.intake import attempts

UTC = dt.timezone.utc
BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
T0 = dt.datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def course(tmp_path):
    return Course(make_course(tmp_path / "course"))


def test_each_door_keeps_its_own_file_and_time_with_its_zone(course):
    canvas = attempts.add(course, "alice", "a", "lms", "canvas submission 7", T0, {"a.ipynb": b"full marks"})
    portal = attempts.add(course, "alice", "a", "portal", "portal attempt 1", T0.astimezone(BERLIN)
                          + dt.timedelta(hours=1), {"a.ipynb": b"template"})
    again = attempts.add(course, "alice", "a", "lms", "canvas submission 7", T0 + dt.timedelta(days=1),
                         {"a.ipynb": b"full marks"})
    kept = attempts.of(course, "alice", "a")
    assert [a.door for a in kept] == ["lms", "portal"] and again == canvas      # the same file again: one attempt
    assert portal.received_at == "2026-11-20T13:00:00+00:00"                     # stated in UTC, zone kept
    assert {attempts.files_of(course, a)["a.ipynb"].read_bytes() for a in kept} == {b"full marks", b"template"}
    with pytest.raises(ValueError, match="zone"):
        attempts.add(course, "alice", "a", "hand", "", dt.datetime(2026, 11, 20), {"a.ipynb": b"x"})


def test_the_rule_chooses_among_every_door_and_names_a_lower_later_attempt(course):
    good = attempts.add(course, "bob", "a", "lms", "canvas", T0, {"a.ipynb": b"good"})
    worse = attempts.add(course, "bob", "a", "portal", "portal attempt 1", T0 + dt.timedelta(hours=2),
                         {"a.ipynb": b"worse"})
    assert attempts.to_grade(attempts.of(course, "bob", "a"), "best") == good
    attempts.scored(course, "bob", "a", good.files["a.ipynb"], 44, 44)
    attempts.scored(course, "bob", "a", worse.files["a.ipynb"], 0, 44)
    kept = attempts.of(course, "bob", "a")
    on_time = lambda a: 0.0                                                    # noqa: E731
    assert attempts.choose(kept, "best", on_time).door == "lms"
    assert attempts.choose(kept, "latest", on_time).door == "portal"
    late_portal = lambda a: 50.0 if a.door == "lms" else 0.0                   # noqa: E731
    assert attempts.choose(kept, "best_on_time", late_portal).door == "portal"  # the only one on time
    assert attempts.choose(kept, "best", late_portal).door == "lms"             # 22 after deduction beats 0
    found = attempts.findings(kept, attempts.choose(kept, "best", on_time))
    assert [(f.student, f.kind) for f in found] == [("bob", "later_scored_lower")]
    assert found[0].text().startswith("bob, a: a later attempt from the portal (portal attempt 1, ")
    assert "lower than the one that counts, from an LMS download (canvas, " in found[0].text()
    # In the course's zone, as the dashboard states every time, and each score called automatic: the grade the
    # run report and dashboard state beside it has manual grades and the late policy (it said
    # '... scored 0/44, lower than the one that counts, from an LMS download (canvas, 2026-11-20T12:00:00+00:00,
    # 44/44)' where grades.csv had her grade from formgrader).
    [said] = attempts.findings(kept, attempts.choose(kept, "best", on_time), BERLIN)
    assert said.text() == ("bob, a: a later attempt from the portal (portal attempt 1, 2026-11-20 15:00 Europe/Berlin; "
                           "automatic score 0/44) scored lower than the one that counts, from an LMS download "
                           "(canvas, 2026-11-20 13:00 Europe/Berlin; automatic score 44/44)")
    replaced = attempts.findings(kept, attempts.choose(kept, "latest", on_time))
    assert [f.kind for f in replaced] == ["replaced_better"]


def test_a_tie_goes_to_the_on_time_attempt(course):
    """Equal after the late deduction: the attempt on time counts (a tie must not make a student late), whichever
    door and whichever came later."""
    on_time = attempts.add(course, "cy", "a", "lms", "canvas", T0, {"a.ipynb": b"on time"})
    late = attempts.add(course, "cy", "a", "portal", "portal attempt 1", T0 + dt.timedelta(days=1),
                        {"a.ipynb": b"late"})
    attempts.scored(course, "cy", "a", on_time.files["a.ipynb"], 2.7, 4)
    attempts.scored(course, "cy", "a", late.files["a.ipynb"], 3.0, 4)                # 2.7 after 10 % off
    ten_off_when_late = lambda a: 10.0 if a.door == "portal" else 0.0         # noqa: E731
    for rule in ("best", "best_on_time"):
        assert attempts.choose(attempts.of(course, "cy", "a"), rule, ten_off_when_late).door == "lms", rule


def test_place_puts_the_counted_attempt_in_submitted_with_nbgraders_timestamp(course):
    first = attempts.add(course, "carol", "a", "lms", "canvas", T0, {"a.ipynb": b"one"})
    second = attempts.add(course, "carol", "a", "portal", "portal attempt 1", T0 + dt.timedelta(hours=1),
                          {"a.ipynb": b"two"})
    assert attempts.place(course, second) and not attempts.place(course, second)
    assert (course.submitted / "carol" / "a" / "a.ipynb").read_bytes() == b"two"
    assert attempts.place(course, first)
    assert (course.submitted / "carol" / "a" / "a.ipynb").read_bytes() == b"one"
    assert (course.submitted / "carol" / "a" / "timestamp.txt").read_text() == "2026-11-20 12:00:00.000000 UTC"
    assert attempts.files_of(course, second)["a.ipynb"].read_bytes() == b"two"    # nothing lost


def test_a_file_placed_by_hand_is_recorded_as_its_own_door(course):
    folder = course.submitted / "dan" / "a"
    folder.mkdir(parents=True)
    (folder / "a.ipynb").write_bytes(b"by hand")
    (folder / "timestamp.txt").write_text("2026-11-21 09:30:00.000000 UTC")
    found = attempts.record_hand_placed(course, "dan", "a")
    assert (found.door, found.received_at) == ("hand", "2026-11-21T09:30:00+00:00")
    assert attempts.record_hand_placed(course, "dan", "a") is None


@pytest.mark.parametrize("text, zone, formats, expected", [
    ("2026-11-22T23:30:00", BERLIN, (), "2026-11-22T22:30:00+00:00"),          # no zone: the stated one
    ("2026-11-22T23:30:00Z", BERLIN, (), "2026-11-22T23:30:00+00:00"),
    ("2026-11-22T23:30:00-05:00", BERLIN, (), "2026-11-23T04:30:00+00:00"),
    ("Sunday, 22 November 2026, 11:30 PM", BERLIN, ("%A, %d %B %Y, %I:%M %p",), "2026-11-22T22:30:00+00:00"),
    ("2026-11-22-23-30-00", zoneinfo.ZoneInfo("America/New_York"), ("%Y-%m-%d-%H-%M-%S",),
     "2026-11-23T04:30:00+00:00"),
])
def test_one_parse_reads_every_format_in_its_zone(text, zone, formats, expected):
    assert settings.stamp(settings.parse_time(text, "t", zone, formats)) == expected


def test_a_time_without_zone_or_unreadable_is_never_on_time():
    with pytest.raises(settings.TimeError, match="no UTC offset"):
        settings.parse_time("2026-11-22T23:30:00", "roster submitted_at")
    with pytest.raises(settings.TimeError, match="ISO 8601"):
        settings.parse_time("yesterday", "roster submitted_at", UTC)


def test_the_course_states_its_zone_and_rule(course):
    course.path(settings.SETTINGS_FILE).write_text('[course]\ntime_zone = "Mars/Olympus"\n')
    with pytest.raises(settings.SettingsError, match="IANA"):
        settings.load(course)
    course.path(settings.SETTINGS_FILE).write_text('[course]\ncounted_attempt = "first"\n')
    with pytest.raises(settings.SettingsError, match="best_on_time"):
        settings.load(course)
    course.path(settings.SETTINGS_FILE).write_text(
        '[course]\ntime_zone = "Europe/Berlin"\ncounted_attempt = "latest"\n'
        '[late.a]\ndeadline = "2026-12-01T17:00:00"\npenalty = 10\n')
    loaded = settings.load(course)
    assert loaded.course.counted_attempt == "latest"
    assert settings.stamp(loaded.late_policy("a").deadline) == "2026-12-01T16:00:00+00:00"


def test_collect_reads_each_lms_time_in_its_zone_and_keeps_another_doors_file(course, tmp_path):
    """Canvas's zip stores UTC in its extended-timestamp field; Moodle's DOS time has no zone (the course's);
    a portal attempt already in submitted/ is kept beside the collected one, both in the record."""
    import io
    import struct
    import zipfile

    from lms_zips import CANVAS, MOODLE, NB, make_zip, notebook, roster_rows

    from posenc_autograder.intake.collect import collect

    course.path(settings.SETTINGS_FILE).write_text('[course]\ntime_zone = "Europe/Berlin"\n')
    utc = dt.datetime(2026, 11, 22, 23, 30, tzinfo=UTC)
    canvas = tmp_path / "canvas.zip"
    with zipfile.ZipFile(canvas, "w") as zf:
        info = zipfile.ZipInfo(list(CANVAS)[2], date_time=(2026, 11, 1, 0, 0, 0))        # the DOS time: wrong zone
        info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(utc.timestamp()))
        zf.writestr(info, CANVAS[list(CANVAS)[2]])
    portal = attempts.add(course, "doejane", NB, "portal", "portal attempt 1", T0, {f"{NB}.ipynb": b"portal"})
    attempts.place(course, portal)
    out = io.StringIO()
    assert collect(course, canvas, NB, out=out) == 0
    assert roster_rows(course)["doejane"]["submitted_at"] == "2026-11-22T23:30:00+00:00"
    assert "kept beside the attempt from the portal" in out.getvalue()
    assert (course.submitted / "doejane" / NB / f"{NB}.ipynb").read_bytes() == b"portal"
    assert [a.door for a in attempts.of(course, "doejane", NB)] == ["portal", "lms"]
    moodle = make_zip(tmp_path / "moodle.zip", {list(MOODLE)[0]: notebook("john")}, when=(2026, 11, 22, 23, 30, 0))
    assert collect(course, moodle, NB, out=io.StringIO()) == 0
    assert roster_rows(course)["john_smith"]["submitted_at"] == "2026-11-22T22:30:00+00:00"   # Berlin is UTC+1
    blackboard = make_zip(tmp_path / "bb.zip", {f"PE_kim_attempt_2026-11-22-23-30-00_{NB}.ipynb": notebook("kim"),
                                                "PE_kim_attempt_2026-11-22-23-30-00.txt": b"Name: Kim (kim)\n"},
                          when=(2026, 11, 25, 0, 0, 0))
    assert collect(course, blackboard, NB, out=io.StringIO()) == 0
    assert roster_rows(course)["kim"]["submitted_at"] == "2026-11-22T22:30:00+00:00"         # its name's time, Berlin


def test_the_same_file_handed_in_again_by_one_door_after_another_is_the_latest_attempt(course):
    """A student hands in X, then Y, then X again through Canvas: the record keeps the third as an attempt of its
    own, so "latest" counts X at its last time (before, X was one attempt at its first time and Y counted, while
    Canvas showed X). The same file again with nothing in between is still one attempt, at its first time, and
    collecting the same download again adds nothing."""
    day = dt.timedelta(days=1)
    x, y = {"a.ipynb": b"X"}, {"a.ipynb": b"Y"}
    first = attempts.add(course, "eve", "a", "lms", "canvas 1", T0, x)
    assert attempts.add(course, "eve", "a", "lms", "canvas 1 again", T0 + day / 2, x) == first
    attempts.add(course, "eve", "a", "lms", "canvas 2", T0 + day, y)
    again = attempts.add(course, "eve", "a", "lms", "canvas 3", T0 + 2 * day, x)
    assert attempts.add(course, "eve", "a", "lms", "canvas 3", T0 + 2 * day, x) == again
    recorded = attempts.of(course, "eve", "a")
    assert [a.source for a in recorded] == ["canvas 1", "canvas 2", "canvas 3"]
    assert attempts.choose(recorded, "latest", lambda a: 0.0) == again
    assert attempts.files_of(course, again)["a.ipynb"].read_bytes() == b"X"


def test_an_attempt_added_with_its_points_is_recorded_as_added_then_scored_in_one_write(course, monkeypatch):
    for student in ("ann", "ben"):       # an earlier attempt of the same file by another door shares its points
        attempts.add(course, student, "a", "lms", "canvas submission 1", T0, {"a.ipynb": b"same file"})
    attempts.add(course, "ann", "a", "portal", "portal attempt 1", T0 + dt.timedelta(hours=1),
                 {"a.ipynb": b"same file"})
    digest = attempts.file_digest(b"same file")
    attempts.scored(course, "ann", "a", digest, 40, 44)
    saves = []
    real_save = attempts._save
    monkeypatch.setattr(attempts, "_save", lambda *args, **kwargs: saves.append(args) or real_save(*args, **kwargs))
    added = attempts.add(course, "ben", "a", "portal", "portal attempt 1", T0 + dt.timedelta(hours=1),
                         {"a.ipynb": b"same file"}, scores={digest: (40, 44)})
    assert len(saves) == 1                            # old code: no scores argument (add, then scored: two writes)
    assert added.scores == {digest: [40.0, 44.0]}
    ann, ben = attempts.of(course, "ann", "a"), attempts.of(course, "ben", "a")
    assert [(a.door, a.source, a.received_at, a.files, a.scores) for a in ben] == \
        [(a.door, a.source, a.received_at, a.files, a.scores) for a in ann]
    again = attempts.add(course, "ben", "a", "portal", "portal attempt 1", T0 + dt.timedelta(hours=1),
                         {"a.ipynb": b"same file"}, scores={digest: (40, 44)})
    assert again == added and len(saves) == 1         # nothing new: nothing written
