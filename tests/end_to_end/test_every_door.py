"""One class through every door, and each student's grade, lateness and comments the same everywhere it is stated.

Doors: a Canvas zip (its DOS times in the course's zone, one entry with the UTC extended timestamp Canvas's zip
tools write) and a Moodle zip (DOS times in the course's zone), late ones among them, an extension in the roster
(written without offset: the course's zone); the portal, with a student who also came through Canvas (a later,
worse upload: the Canvas attempt still counts, and the run report and dashboard name her); a manual grade and a
comment in formgrader. Every expected number is computed here from the policy below, never read from the program.
Places compared: grades.csv, grades-canvas.csv, grades-moodle-<a>.csv, the feedback page, the return bundles
(Canvas's and Moodle's zips) and the portal (the student's page and the instructor's progress).

nbgrader's exchange: EXCHANGE's students fetch and submit with nbgrader's own exchange code, `make collect-exchange`
records them, and the page nbgrader's fetch_feedback finds is one more place (their expected grade is computed from
the window in which submit ran). The move to PostgreSQL: a copy of the class moved with `make move-db`, its files
written again from there, every place compared once more. The mid-term points change: in a copy of the class, the
hidden test danny's manual grade is on becomes worth two points more (make release, make grade, make feedback): his
manual grade is kept as given and flagged, his regrade note and page agree, and every place states the new grade.
"""
import csv
import dataclasses
import datetime as dt
import io
import math
import pathlib
import re
import shutil
import struct
import zipfile
import zoneinfo

import nbformat
import pytest
from exchange_door import Student, instructor
from fixture_submissions import ASSIGNMENT as NB
from fixture_submissions import FULL, make_course, solved_notebook
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.checks import REGISTRY
from posenc_autograder.course import Course
from posenc_autograder.intake import roster
from posenc_autograder.intake.collect import collect
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.portal.service import Portal
from posenc_autograder.settings import Limits

ZONE = zoneinfo.ZoneInfo("Europe/Berlin")
DEADLINE = dt.datetime(2026, 11, 20, 18, 0, tzinfo=ZONE)
PENALTY, CAP, GRACE = 10, 50, 15                 # percent per started day, at most, minutes
COURSE_TOML = f"""[course]
time_zone = "Europe/Berlin"
counted_attempt = "best_on_time"

[late.{NB}]
deadline = "2026-11-20T18:00:00+01:00"
per = "day"
penalty = {PENALTY}
cap = {CAP}
grace_minutes = {GRACE}
"""
LIMITS = Limits(cell_seconds=10, notebook_seconds=60)


def berlin(*when) -> dt.datetime:
    return dt.datetime(*when, tzinfo=ZONE)


# student id -> (door, LMS name of the file, when handed in, extension or None)
CLASS = {
    "annlee": ("canvas", f"annlee_late_101_9001_{NB}.ipynb", berlin(2026, 11, 22, 13, 30), None),
    "catkim": ("canvas", f"catkim_103_9003_{NB}.ipynb", dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.timezone.utc),
               None),
    "danny": ("canvas", f"danny_104_9004_{NB}.ipynb", berlin(2026, 11, 20, 17, 0), None),
    "eve_moss": ("moodle", f"Eve Moss_201_assignsubmission_file_/{NB}.ipynb", berlin(2026, 11, 21, 9, 0),
                 "2026-11-22T12:00:00"),                           # no offset: the course's zone
    "fay_wu": ("moodle", f"Fay Wu_202_assignsubmission_file_/{NB}.ipynb", berlin(2026, 11, 23, 20, 0), None),
}
EXCHANGE = {"gus": {}}      # through nbgrader's exchange: student -> when submit ran (from, to), filled by every_door
UTC_STAMPED = {"catkim"}                         # Canvas's zip carries her time in the UTC extended-timestamp field
COMMENT = "Good structure; see the note on float32 rounding."


def percent_for(handed_in: dt.datetime, extension: str | None) -> float:
    """The course's late policy, computed here: per started day after deadline + grace, capped."""
    deadline = dt.datetime.fromisoformat(extension).replace(tzinfo=ZONE) if extension else DEADLINE
    late = handed_in - deadline - dt.timedelta(minutes=GRACE)
    return 0.0 if late <= dt.timedelta(0) else min(CAP, PENALTY * math.ceil(late / dt.timedelta(days=1)))


def lms_zip(path: pathlib.Path, members: dict) -> pathlib.Path:
    with zipfile.ZipFile(path, "w") as zf:
        for student, (name, when, data) in members.items():
            if student in UTC_STAMPED:
                info = zipfile.ZipInfo(name, date_time=(1999, 1, 1, 0, 0, 0))     # the DOS time is not believed
                info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(when.timestamp()))
            else:
                info = zipfile.ZipInfo(name, date_time=when.astimezone(ZONE).timetuple()[:6])
            zf.writestr(info, data)
    return path



@pytest.fixture(scope="module")
def every_door(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("every_door")
    course = Course(make_course(tmp / "course"))
    course.path("autograder/course.toml").write_text(COURSE_TOML)
    solved = nbformat.writes(solved_notebook()).encode()
    for lms in ("canvas", "moodle"):
        members = {s: (name, when, solved) for s, (door, name, when, _) in CLASS.items() if door == lms}
        assert collect(course, lms_zip(tmp / f"{lms}.zip", members), NB, out=io.StringIO()) == 0
    rows = roster.load(course)
    for student, (_, _, _, extension) in CLASS.items():
        if extension:
            rows[student, NB]["extension"] = extension
    roster.save(course, rows)
    # nbgrader's exchange: gus fetches and submits the solved notebook (now: days after the deadline).
    exchange_root = tmp / "exchange"
    exchange_root.mkdir()
    instructor(course, exchange_root, "ExchangeReleaseAssignment", NB)
    for student in EXCHANGE:
        through = Student(student, tmp / "home" / student, exchange_root)
        through.fetch(NB)
        EXCHANGE[student]["from"] = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        through.submit(NB, {f"{NB}.ipynb": solved.decode()})
        EXCHANGE[student]["to"] = dt.datetime.now(dt.timezone.utc)
        EXCHANGE[student]["student"] = through
    assert cli.main(["collect-exchange", NB, "--course", str(course.root), "--exchange", str(exchange_root)]) == 0
    grade_all(course, jobs=2, limits=LIMITS, quiet=True)

    # The portal: catkim, already graded through Canvas, uploads the untouched template late (accepted for a week).
    portal = Portal(course, jobs=1, register=False)
    portal.set_policy(NB, {"late_days": 30})
    portal.new_link("catkim", "Cat Kim")
    template = (ROOT / "exercises" / NB / f"{NB}.ipynb").read_bytes()
    state, _ = portal.accept_upload("catkim", NB, f"{NB}.ipynb", template)
    assert state == "queued"
    portal.worker.run_until_idle()
    portal.worker.stop()

    # formgrader: a manual grade and a comment for danny.
    from posenc_autograder.course import open_gradebook
    with open_gradebook(course) as gb:
        notebook = gb.find_submission_notebook(NB, NB, "danny")
        graded = next(g for g in notebook.grades if g.max_score and g.max_score >= 2)
        manual = (graded.name, graded.max_score, graded.max_score / 2)
        graded.manual_score = manual[2]
        comment = next(c for c in notebook.comments)
        comment.manual_comment = COMMENT
        gb.db.commit()
    assert cli.main(["grade", "--course", str(course.root), "--no-sandbox"]) == 0   # nothing changed: no regrade
    assert cli.main(["feedback", "--course", str(course.root)]) == 0
    instructor(course, exchange_root, "ExchangeReleaseFeedback", NB)
    return course, portal, manual


def expected(manual, full: float = FULL, out_of: float | None = None) -> dict:
    """student -> (final score, percent off, late flag) from the policy and what each student handed in: `full`
    points for the solved notebook; danny's manual grade (cell, its points when given, given) counts as given, out of
    `out_of` (the cell's points now, by default as when given)."""
    found = {}
    for student, (_, _, when, extension) in CLASS.items():
        percent = percent_for(when, extension)
        before = full - ((out_of or manual[1]) - manual[2] if student == "danny" else 0)
        found[student] = (round(before * (1 - percent / 100), 2), percent,
                          when > (dt.datetime.fromisoformat(extension).replace(tzinfo=ZONE) if extension
                                  else DEADLINE) + dt.timedelta(minutes=GRACE))
    for student, window in EXCHANGE.items():
        percent = percent_for(window["from"], None)
        assert percent_for(window["to"], None) == percent          # the same whenever in the window submit ran
        found[student] = (round(full * (1 - percent / 100), 2), percent, True)
    return found


def _csv(path):
    with open(path, newline="") as src:
        return list(csv.DictReader(src))


def copied_class(course: Course, to: pathlib.Path) -> tuple[Course, dict]:
    """A copy of the class (the course, nbgrader's exchange and the exchange students' homes), and those students
    working against the copy's exchange, so nbgrader's fetch_feedback finds the copy's feedback once it is released."""
    shutil.copytree(course.root, to / "course", symlinks=True)
    shutil.copytree(course.root.parent / "exchange", to / "exchange")
    students = {}
    for student in EXCHANGE:
        shutil.copytree(course.root.parent / "home" / student, to / "home" / student)
        shutil.rmtree(to / "home" / student / NB / "feedback", ignore_errors=True)
        students[student] = Student(student, to / "home" / student, to / "exchange")
    return Course(to / "course"), students


def places(course: Course, portal: Portal, exchange_students: dict | None = None) -> dict[str, dict[str, float]]:
    """Where each student's grade is stated -> student -> the number stated there (`exchange_students`: who fetches
    their feedback through nbgrader, by default the class's own)."""
    exchange_students = exchange_students or {s: EXCHANGE[s]["student"] for s in EXCHANGE}
    people = roster.load(course)
    name_of = {row["name"]: student for (student, _), row in people.items()}
    stated = {"grades.csv": {r["student"]: float(r["score"]) for r in _csv(course.grades_csv)}}
    canvas = _csv(course.reports / "grades-canvas.csv")
    column = next(c for c in canvas[0] if c.startswith(NB))
    stated["grades-canvas.csv"] = {name_of[r["Student"]]: float(r[column]) for r in canvas if r["ID"]}
    moodle = _csv(course.reports / f"grades-moodle-{NB}.csv")
    stated["grades-moodle.csv"] = {name_of[r["Full name"]]: float(r["Grade"]) for r in moodle}
    score = re.compile(r'id="final-score">Score: ([\d.]+) /')
    stated["feedback page"] = {s: float(score.search((course.feedback / s / NB / f"{NB}.html").read_text())[1])
                               for s in CLASS}
    stated["return bundles"] = {}
    for lms in ("canvas", "moodle"):
        with zipfile.ZipFile(course.reports / "return" / f"{lms}-{NB}.zip") as zf:
            for member in zf.namelist():
                owner = next(s for s in CLASS if people[s, NB]["lms_prefix"] in member)
                stated["return bundles"][owner] = float(score.search(zf.read(member).decode())[1])
    with portal.sessions() as db:
        grades = portal.grades(db)
    stated["portal"] = {s: grades[s, NB].score for s in CLASS}
    stated["portal's own page"] = {"catkim": portal.assignment_view("catkim", NB)["grade"].score}
    stated["feedback page"].update({s: float(score.search((course.feedback / s / NB / f"{NB}.html").read_text())[1])
                                    for s in EXCHANGE})
    stated["nbgrader fetch_feedback"] = {s: float(score.search(page)[1]) for s in EXCHANGE
                                         for page in exchange_students[s].fetch_feedback(NB).values()}
    assert set(stated["nbgrader fetch_feedback"]) == set(EXCHANGE)      # nbgrader found each page
    return stated


def test_every_place_states_the_same_grade(every_door):
    course, portal, manual = every_door
    want = {s: v[0] for s, v in expected(manual).items()}
    for place, numbers in places(course, portal).items():
        for student, number in numbers.items():
            assert number == pytest.approx(want[student]), (place, student, number, want[student])
    assert {s for s, _ in roster.load(course)} == set(CLASS) | set(EXCHANGE)


def test_lateness_is_computed_in_each_lms_zone_and_honours_the_extension(every_door):
    course, _, manual = every_door
    want = expected(manual)
    rows = {r["student"]: r for r in _csv(course.grades_csv)}
    for student, (_, percent, late) in want.items():
        assert float(rows[student]["late_penalty_percent"]) == percent, student
        assert rows[student]["late"] == ("yes" if late else "no"), student
        assert rows[student]["submitted_at"].endswith("+00:00"), student                  # every time has its zone
    assert want["annlee"][1] == 20 and want["fay_wu"][1] == 40 and want["eve_moss"] == (FULL, 0, False)
    page = (course.feedback / "annlee" / NB / f"{NB}.html").read_text()
    assert f"deducts {want['annlee'][1]:g}%" in page


def test_a_later_worse_attempt_from_another_door_keeps_the_counted_one_and_names_the_student(every_door):
    course, portal, _ = every_door
    kept = (course.submitted / "catkim" / NB / f"{NB}.ipynb").read_bytes()
    assert kept == nbformat.writes(solved_notebook()).encode()           # the Canvas file, not the portal's
    report = (course.reports / "grading-report.md").read_text()
    assert "catkim" in report.split("## Attempts from more than one door")[1].split("##")[0]
    assert "later attempt from the portal" in (course.reports / "class.html").read_text()
    assert "the best attempt handed in on time" in (course.feedback / "catkim" / NB / f"{NB}.html").read_text()
    assert portal.assignment_view("catkim", NB)["counting"] is None        # the portal tags none of hers "counts"


def test_the_manual_grade_and_comment_reach_the_page_and_the_bundle(every_door):
    course, _, manual = every_door
    page = (course.feedback / "danny" / NB / f"{NB}.html").read_text()
    assert COMMENT in page and "points set by your instructor" in page
    assert "an instructor may still adjust it" not in page
    with zipfile.ZipFile(course.reports / "return" / f"canvas-{NB}.zip") as zf:
        member = next(m for m in zf.namelist() if "danny" in m)
        assert COMMENT in zf.read(member).decode()



@pytest.mark.postgres
def test_moved_to_postgresql_every_place_states_the_same_grade(every_door, tmp_path, postgres_url):
    """The class moved to PostgreSQL (a copy of the course, make move-db), its files written again from there (make
    feedback): every place states the grade the policy gives, manual grade and comment included."""
    course, portal, manual = every_door
    copy, exchange_students = copied_class(course, tmp_path)
    assert cli.main(["move-db", "--course", str(copy.root), "--to", postgres_url]) == 0
    assert Course(copy.root).gradebook_url == postgres_url
    assert cli.main(["feedback", "--course", str(copy.root)]) == 0
    instructor(copy, tmp_path / "exchange", "ExchangeReleaseFeedback", NB)
    moved = Portal(copy, jobs=1, register=False)
    try:
        want = {s: v[0] for s, v in expected(manual).items()}
        for place, numbers in places(copy, moved, exchange_students).items():
            for student, number in numbers.items():
                assert number == pytest.approx(want[student]), ("after the move", place, student, number)
        assert COMMENT in (copy.feedback / "danny" / NB / f"{NB}.html").read_text()
    finally:
        moved.worker.stop()


def test_a_points_change_midterm_keeps_the_manual_grade_and_every_place_agrees(every_door, tmp_path, monkeypatch,
                                                                                capsys):
    """In a copy of the class, the hidden test danny's manual grade is on becomes worth two points more (make release,
    make grade, make feedback): his manual grade is kept as given and flagged for review, never rescaled; his regrade
    note and his page agree; every place states the grade the policy gives with the new points."""
    from posenc_autograder.records import gradebook

    course, _, manual = every_door
    cell, was, given = manual
    copy, exchange_students = copied_class(course, tmp_path)
    for name in ("README.md", ".gitignore"):
        shutil.copy(ROOT / name, copy.root / name)
    for other in set(copy.assignments()) - {NB}:      # a course of the class's one assignment: the release builds it
        for folder in ("solutions", "exercises"):
            shutil.rmtree(copy.path(f"{folder}/{other}"))
    for test in [t for t in REGISTRY.values() if t.assignment != NB]:
        monkeypatch.delitem(REGISTRY, test.id)
    shutil.copytree(ROOT / "autograder" / "release_history", copy.path("autograder/release_history"))
    shutil.copy(ROOT / "autograder" / "test_plan.csv", copy.path("autograder/test_plan.csv"))
    now = was + 2
    monkeypatch.setitem(REGISTRY, cell, dataclasses.replace(REGISTRY[cell], points=now))
    assert cli.main(["release", "--course", str(copy.root)]) == 0
    assert f"danny's manual grade on {cell} is kept as given, {given:g} (it was out of {was:g}, now {now:g})" \
        in capsys.readouterr().out
    grade_all(copy, jobs=2, limits=LIMITS, quiet=True)
    assert cli.main(["feedback", "--course", str(copy.root)]) == 0
    instructor(copy, tmp_path / "exchange", "ExchangeReleaseFeedback", NB)

    with gradebook.open_gradebook(copy) as gb:
        kept = gb.find_grade(cell, NB, NB, "danny")
        assert (kept.manual_score, kept.max_score, kept.needs_manual_grade) == (given, now, True)
    full = FULL + now - was
    page = (copy.feedback / "danny" / NB / f"{NB}.html").read_text()
    assert f"{cell} now out of {now:g} (was {was:g})" in page and f"automatic total {FULL:g} → {full:g}" in page
    row = page.split(f"<b>{cell}</b>")[1].split("</tr>")[0]
    assert f"{given:g} / {now:g}" in row and "set by your instructor" in row
    assert f"Score: {expected(manual, full, now)['danny'][0]:g} / {full:g}" in page
    portal = Portal(copy, jobs=1, register=False)
    try:
        want = {s: v[0] for s, v in expected(manual, full, now).items()}
        for place, numbers in places(copy, portal, exchange_students).items():
            for student, number in numbers.items():
                assert number == pytest.approx(want[student]), ("after the points change", place, student, number)
    finally:
        portal.worker.stop()
