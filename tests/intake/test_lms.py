"""`make collect` with downloads named the way Canvas, Moodle, Blackboard and a plain zip name them.

Each zip is built here from a small table of member names, so the fixture is readable; the
notebooks differ per attempt so the tests can tell which attempt was kept.
"""
import csv
import io
import zipfile

import pytest
from fixture_submissions import make_course
from lms_zips import BLACKBOARD, CANVAS, MOODLE, NB, PLAIN, make_zip, notebook, roster_rows, stored

from posenc_autograder.course import Course
from posenc_autograder.intake import roster, safezip
from posenc_autograder.intake.collect import collect
from posenc_autograder.intake.roster import ROSTER_FILE
from posenc_autograder.intake.submissions import discover
from posenc_autograder.reports import lms_exports


@pytest.fixture
def course(tmp_path):
    return Course(make_course(tmp_path / "course"))


def test_canvas_keeps_ids_late_flag_and_latest_attempt(course, tmp_path):
    out = io.StringIO()
    assert collect(course, make_zip(tmp_path / "submissions.zip", CANVAS), NB, out=out) == 0
    assert stored(course) == {"smithjohn": ([f"{NB}.ipynb"], ["smith resubmitted"]),
                              "doejane": ([f"{NB}.ipynb"], ["doe late"]),
                              "leeann": ([f"{NB} (1).ipynb"], ["lee renamed it herself"])}
    rows = roster_rows(course)
    assert {s: (r["lms"], r["lms_user_id"], r["late"]) for s, r in rows.items()} == {
        "smithjohn": ("canvas", "12345", "no"), "doejane": ("canvas", "23456", "yes"),
        "leeann": ("canvas", "34567", "no")}
    assert "resubmission 1" in rows["smithjohn"]["attempt"] and "67891" in rows["smithjohn"]["attempt"]
    assert "Format: canvas" in out.getvalue() and "an earlier attempt of smithjohn" in out.getvalue()
    # Canvas's "-1" is undone, so the grader blames only the student who renamed the file herself.
    notes = {s.student: s.notes for s in discover(course)}
    assert notes["smithjohn"] == [] and notes["doejane"] == []
    assert "renamed" in notes["leeann"][0].text
    # nbgrader reads the submission time from timestamp.txt
    stamp = (course.submitted / "doejane" / NB / "timestamp.txt").read_text()
    assert stamp.startswith("2026-11-20 10:00:00") and stamp.endswith("UTC")


def test_moodle_folders_are_one_student_each(course, tmp_path):
    out = io.StringIO()
    assert collect(course, make_zip(tmp_path / "moodle.zip", MOODLE), NB, out=out) == 0
    assert stored(course) == {"john_smith": ([f"{NB}.ipynb"], ["john"]), "jane_doe": ([f"{NB}.ipynb"], ["jane"])}
    rows = roster_rows(course)
    assert (rows["jane_doe"]["name"], rows["jane_doe"]["lms_user_id"]) == ("Jane Doe", "23456")
    assert "onlinetext.html' : not a notebook" in out.getvalue().replace("':", "' :")
    # The grades go back as Moodle's grading worksheet, matched by participant id.
    scores = {("john_smith", NB): (38.0, 40.0, True), ("jane_doe", NB): (12.5, 40.0, True)}
    [sheet] = lms_exports.write_lms(course, "moodle", scores, roster.load(course))
    grades = {r["Identifier"]: (r["Full name"], r["Grade"], r["Maximum Grade"]) for r in csv.DictReader(open(sheet))}
    assert grades == {"Participant 12345": ("John Smith", "38.00", "40.00"),
                      "Participant 23456": ("Jane Doe", "12.50", "40.00")}
    # A notebook that could not be graded has no grade, not 0.
    [sheet] = lms_exports.write_lms(course, "moodle", {**scores, ("jane_doe", NB): (0.0, 40.0, False)},
                                    roster.load(course))
    assert {r["Identifier"]: r["Grade"] for r in csv.DictReader(open(sheet))}["Participant 23456"] == ""


def test_blackboard_latest_attempt_and_usernames_with_underscores(course, tmp_path):
    assert collect(course, make_zip(tmp_path / "gradebook.zip", BLACKBOARD), NB) == 0
    assert stored(course) == {"jsmith": ([f"{NB}.ipynb"], ["jsmith later"]), "j_doe": ([f"{NB}.ipynb"], ["jdoe"])}
    rows = roster_rows(course)
    assert rows["jsmith"]["submitted_at"] == "2026-11-21T09:00:00+00:00" and rows["j_doe"]["name"] == "Jane Doe"


def test_plain_ids_with_underscores_stay_apart(course, tmp_path):
    assert collect(course, make_zip(tmp_path / "plain.zip", PLAIN), NB) == 0
    assert stored(course) == {"j_smith": ([f"{NB}.ipynb"], ["smith"]), "j_doe": ([f"{NB}.ipynb"], ["doe"])}


def test_forced_format_overrides_detection(course, tmp_path):
    # A plain id that looks like Canvas's "<login>_<digits>_<digits>_" is taken as plain when told so.
    members = {f"ann_1_2_{NB}.ipynb": notebook("ann")}
    assert collect(course, make_zip(tmp_path / "z.zip", members), NB, forced_lms="plain") == 0
    assert stored(course) == {"ann_1_2": ([f"{NB}.ipynb"], ["ann"])}
    assert collect(course, make_zip(tmp_path / "z.zip", members), NB, forced_lms="webct") == 2


def test_second_zip_adds_replaces_and_says_so(course, tmp_path):
    first = {f"alice_{NB}.ipynb": notebook("alice 1"), f"bob_{NB}.ipynb": notebook("bob 1")}
    second = {f"alice_{NB}.ipynb": notebook("alice 1"), f"bob_{NB}.ipynb": notebook("bob 2"),
              f"carol_{NB}.ipynb": notebook("carol 1")}
    assert collect(course, make_zip(tmp_path / "monday.zip", first), NB) == 0
    out = io.StringIO()
    assert collect(course, make_zip(tmp_path / "tuesday.zip", second, when=(2026, 11, 21, 9, 0, 0)), NB,
                   out=out) == 0
    assert stored(course) == {"alice": ([f"{NB}.ipynb"], ["alice 1"]), "bob": ([f"{NB}.ipynb"], ["bob 2"]),
                              "carol": ([f"{NB}.ipynb"], ["carol 1"])}
    report = out.getvalue()
    assert "new: carol" in report and "replaced: bob" in report and "unchanged: alice" in report
    assert roster_rows(course)["bob"]["source_zip"] == "tuesday.zip"
    # an older download does not undo a newer one
    out = io.StringIO()
    assert collect(course, make_zip(tmp_path / "old.zip", {f"bob_{NB}.ipynb": notebook("bob 0")},
                                    when=(2026, 11, 1, 0, 0, 0)), NB, out=out) == 0
    assert stored(course)["bob"][1] == ["bob 2"] and "older than the submission of bob" in out.getvalue()


def test_same_login_for_two_canvas_users_gets_two_ids(course, tmp_path):
    members = {f"leejay_111_1_{NB}.ipynb": notebook("first"), f"leejay_222_2_{NB}.ipynb": notebook("second")}
    assert collect(course, make_zip(tmp_path / "c.zip", members), NB) == 0
    assert set(stored(course)) == {"leejay", "leejay_222"}


def _symlink_member(name, target):
    info = zipfile.ZipInfo(name)
    info.external_attr = (0o120777 << 16)
    return info, target


def test_hostile_members_are_skipped_with_reasons_and_nothing_escapes(course, tmp_path):
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb.bin", b"\0" * 5_000_000)
    hostile = {
        f".._{NB}.ipynb": "not a safe id",
        f"-rf_{NB}.ipynb": "not a safe id",
        f"=cmd|' /C calc'!A0_{NB}.ipynb": "not a safe id",
        f"<img src=x onerror=alert(1)>_{NB}.ipynb": "not a safe id",
        f"/etc/evil_{NB}.ipynb": "absolute path",
        f"..\\..\\evil_{NB}.ipynb": "backslash",
        f"../outside_{NB}.ipynb": "climbs out",
        "nested_positional_encoding.zip": "nested archives are not expanded",
        f"huge_{NB}.ipynb": "expands to more than",
    }
    path = tmp_path / "hostile.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in hostile:
            data = inner.getvalue() if name.endswith(".zip") else notebook("x")
            zf.writestr(name, b" " * (safezip.MAX_MEMBER_BYTES + 1) if name.startswith("huge")
                        else data)
        zf.writestr(*_symlink_member(f"link_{NB}.ipynb", "/work/main/solutions/positional_encoding"))
        zf.writestr(f"fine_{NB}.ipynb", notebook("fine"))
    hostile[f"link_{NB}.ipynb"] = "symbolic link"
    before = {p for p in tmp_path.rglob("*")}
    out = io.StringIO()
    assert collect(course, path, NB, out=out) == 0
    assert stored(course) == {"fine": ([f"{NB}.ipynb"], ["fine"])}
    report = out.getvalue()
    for name, reason in hostile.items():
        line = next(line for line in report.splitlines() if line.startswith(f"  skipped {name!r}"[:40]))
        assert reason in line, (name, line)
    created = {p for p in tmp_path.rglob("*")} - before
    kept = (course.submitted, course.attempts)                 # the counted files, and every attempt's record
    assert all(any(k in p.parents or p == k or p in k.parents for k in kept) or p == course.path(ROSTER_FILE)
               for p in created), created
    assert not any(p.suffix == ".bin" for p in created)


def test_zip_bomb_by_total_size_and_member_count(course, tmp_path, monkeypatch):
    monkeypatch.setattr(safezip, "MAX_TOTAL_BYTES", 3_000)
    members = {f"s{i}_{NB}.ipynb": notebook("x" * 1000) for i in range(5)}
    out = io.StringIO()
    assert collect(course, make_zip(tmp_path / "big.zip", members), NB, out=out) == 0
    assert 0 < len(stored(course)) < 5 and "total accepted" in out.getvalue()
    monkeypatch.setattr(safezip, "MAX_MEMBERS", 3)
    assert collect(course, make_zip(tmp_path / "many.zip", members), NB) == 1


def test_names_outside_ascii_or_unsafe_still_get_safe_ids(course, tmp_path):
    members = {f"José Núñez_111_assignsubmission_file_/{NB}.ipynb": notebook("jose"),
               f"王小明_222_assignsubmission_file_/{NB}.ipynb": notebook("wang"),
               f"-rf_333_assignsubmission_file_/{NB}.ipynb": notebook("dash")}
    assert collect(course, make_zip(tmp_path / "moodle.zip", members), NB) == 0
    assert set(stored(course)) == {"jose_nunez", "moodle_222", "rf"}
    assert roster_rows(course)["moodle_222"]["name"] == "王小明"
    canvas = {f".._late_444_5_{NB}.ipynb": notebook("dots")}
    assert collect(course, make_zip(tmp_path / "canvas.zip", canvas), NB, forced_lms="canvas") == 0
    assert "canvas_444" in stored(course)


def test_roster_cells_cannot_be_formulas(course, tmp_path):
    members = {f"=HYPERLINK(x)_12345_assignsubmission_file_/{NB}.ipynb": notebook("m")}
    assert collect(course, make_zip(tmp_path / "m.zip", members), NB) == 0
    text = course.path(ROSTER_FILE).read_text()
    assert "'=HYPERLINK(x)" in text and ",=HYPERLINK" not in text
    assert set(stored(course)) == {"hyperlink_x"}


def test_not_a_zip_is_refused(course, tmp_path):
    (tmp_path / "fake.zip").write_bytes(b"not a zip")
    assert collect(course, tmp_path / "fake.zip", NB) == 1
    assert not course.submitted.exists()


def test_a_zip_of_another_assignments_notebooks_is_refused_and_named(course, tmp_path, capsys):
    members = {f"smithjohn_12345_67890_{NB}.ipynb": notebook("pe"), f"doejane_23456_78901_{NB}.ipynb": notebook("pe")}
    assert collect(course, make_zip(tmp_path / "pe.zip", members), "rope_alibi") == 1
    said = capsys.readouterr().err
    assert "rope_alibi.ipynb" in said and f"'{NB}' (2 of 2 notebooks)" in said
    assert said.splitlines()[-1] == "Nothing was collected."          # its own sentence, after the command to run
    assert not course.submitted.exists() and not course.path(ROSTER_FILE).exists()


def test_canvas_header_names_the_assignment_by_its_id_and_ungraded_is_blank(course, tmp_path):
    assert collect(course, make_zip(tmp_path / "c.zip", CANVAS), NB) == 0
    scores = {("smithjohn", NB): (40.0, 42.0, True), ("doejane", NB): (0.0, 42.0, False)}
    header, _, *rows = csv.reader(open(lms_exports.write_lms(course, "canvas", scores, roster.load(course))[0]))
    assert header[-1] == NB                       # no id given: Canvas would add a column
    assert lms_exports.missing_settings(course, "canvas", [NB]) == [NB]
    course.path(lms_exports.LMS_SETTINGS).write_text(f'[canvas.{NB}]\nname = "Positional encoding"\nid = "4242"\n')
    header, _, *rows = csv.reader(open(lms_exports.write_lms(course, "canvas", scores, roster.load(course))[0]))
    assert header[-1] == "Positional encoding (4242)" and lms_exports.missing_settings(course, "canvas", [NB]) == []
    assert {r[1]: r[-1] for r in rows} == {"12345": "40", "23456": ""}
