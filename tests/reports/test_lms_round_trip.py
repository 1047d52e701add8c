"""What `make collect` took from an LMS goes back to it. Each download the collect tests
parse (lms_zips) is collected, given feedback pages, and returned: the bundle's names must be read by the
LMS's own rule as the same people and submissions; an ungraded student is blank, and `make uncollect`
removes every trace of a student."""
import csv
import io
import re
import zipfile

import pytest
from fixture_submissions import make_course
from lms_zips import BLACKBOARD, CANVAS, MOODLE, NB, PLAIN, make_zip, roster_rows

from posenc_autograder import cli
from posenc_autograder.course import Course
from posenc_autograder.intake import lms
from posenc_autograder.intake.collect import collect
from posenc_autograder.records import gradebook, results_store
from posenc_autograder.reports import feedback, lms_bundles
from posenc_autograder.results import GradedTest, Note, NotebookResult, NoteKind


@pytest.fixture
def course(tmp_path):
    return Course(make_course(tmp_path / "course"))


def graded_class(course, tmp_path, download, name):
    """Collect the download, give every student a result (the first one not graded) and a feedback page."""
    assert collect(course, make_zip(tmp_path / name, download), NB, out=io.StringIO()) == 0
    results = []
    for i, student in enumerate(sorted(roster_rows(course))):
        test = GradedTest("hidden_pe_values", "values", True, 0.0 if i == 0 else 4.0, 4.0,
                          ["not run"] if i == 0 else [])
        notes = [Note(NoteKind.UNREADABLE, "the file is not valid notebook JSON")] if i == 0 else []
        result = NotebookResult(student, NB, NB, graded=i > 0, tests=[test], notes=notes)
        feedback.write(result, course.feedback)
        results_store.save(course, result, None, "fingerprint")
        results.append(result)
    return results


def canvas_reads(name: str) -> tuple[str, str]:
    """Canvas's rule for a re-uploaded file: the first two all-digit '_' parts are the user and the attachment."""
    user, attachment = [part for part in name.split("_") if re.fullmatch(r"\d+", part)][:2]
    return user, attachment


def moodle_reads(name: str) -> str:
    """Moodle's rule for a feedback zip: the folder's '_'-separated second part is the participant."""
    info = name.split("/", 1)[0].split("_", 4)
    assert info[2] == "assignsubmission" and info[1].isdigit()
    return info[1]


def test_canvas_bundle_is_named_as_the_download(course, tmp_path):
    results = graded_class(course, tmp_path, CANVAS, "canvas.zip")
    [bundle] = lms_bundles.write(course, results)
    names = zipfile.ZipFile(bundle).namelist()
    kept = {f"{p.rsplit('_', 1)[0]}" for p in CANVAS if "67890" not in p}   # the attempts collect kept
    downloaded = {canvas_reads(m) for m in CANVAS if "67890" not in m}
    assert {canvas_reads(n) for n in names} == downloaded and len(names) == len(kept)
    for n in names:                                        # and our own parser reads the same ids
        entry = lms.canvas.parse(n, {NB})
        assert (entry.lms_user_id, str(entry.attempt[0])) == canvas_reads(n)
    page = zipfile.ZipFile(bundle).read(next(n for n in names if n.startswith("doejane_late_23456_78901_")))
    assert b"Not graded: the file is not valid notebook JSON" in page and b"Score:" not in page


def test_moodle_bundle_has_a_folder_per_participant_as_moodle_named_it(course, tmp_path):
    results = graded_class(course, tmp_path, MOODLE, "moodle.zip")
    [bundle] = lms_bundles.write(course, results)
    names = zipfile.ZipFile(bundle).namelist()
    assert sorted(moodle_reads(n) for n in names) == ["12345", "23456"]
    downloaded = {m.split("/")[0].rstrip("_") for m in MOODLE if "assignsubmission_file" in m}
    assert {n.split("/")[0] for n in names} == downloaded
    assert all(lms.moodle.parse(n, {NB}).lms_user_id == moodle_reads(n) for n in names)


@pytest.mark.parametrize("download, kind", [(BLACKBOARD, "blackboard"), (PLAIN, "plain")])
def test_blackboard_and_plain_get_a_folder_per_student_and_a_mail_merge(course, tmp_path, download, kind):
    results = graded_class(course, tmp_path, download, f"{kind}.zip")
    [bundle] = lms_bundles.write(course, results)
    assert bundle.name == f"{kind}-{NB}"
    rows = list(csv.DictReader(open(bundle / "mail-merge.csv")))
    assert {r["student"] for r in rows} == set(roster_rows(course))
    for row in rows:
        assert open(row["file"]).read() == feedback.path(course.feedback, next(
            r for r in results if r.student == row["student"])).read_text()


def test_uncollect_removes_every_trace_and_says_so(course, tmp_path, capsys):
    results = graded_class(course, tmp_path, MOODLE, "moodle.zip")
    with gradebook.open_gradebook(course) as gb:
        for r in results:
            gradebook.record_scores(gb, r.student, NB, NB, {t.cell_id: t.points for t in r.tests})
    assert cli.main(["uncollect", "--course", str(course.root), "--student", "jane_doe"]) == 0
    said = capsys.readouterr().out
    assert "jane_doe / positional_encoding" in said and "roster.csv" in said and "gradebook" in said
    for root in (course.submitted, course.autograded, course.feedback):
        assert not (root / "jane_doe").exists()
    assert set(roster_rows(course)) == {"john_smith"}
    with gradebook.open_gradebook(course) as gb:
        assert [s.id for s in gb.students] == ["john_smith"]
    grades = {r["student"] for r in csv.DictReader(open(course.grades_csv))}
    assert grades == {"john_smith"}
    assert cli.main(["uncollect", "--course", str(course.root), "--zip", str(tmp_path / "moodle.zip")]) == 0
    assert not roster_rows(course) and not any(course.submitted.iterdir())
    assert cli.main(["uncollect", "--course", str(course.root), "--student", "john_smith"]) == 1
