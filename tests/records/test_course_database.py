"""The course's database: a command pointed at another database stops with the fix (no traceback, no regrade, no
lost manual grade); `make move-db` moves every table and row (SQLite to PostgreSQL and back) and the course goes on
there; `make portal-links` never overwrites the file of earlier links. Graded without the sandbox: two trusted
notebooks, the database is what is tested."""
import contextlib
import csv
import datetime as dt
import io
import shutil

import pytest
import sqlalchemy
from fixture_submissions import FULL, NOTEBOOK, course_with_solvers, make_course, registered_gradebook
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.course import DATABASE_FILE, Course
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.portal import links
from posenc_autograder.portal.models import Attempt, Extension, Policy
from posenc_autograder.portal.service import database
from posenc_autograder.records import gradebook
from posenc_autograder.settings import Limits

NB = NOTEBOOK
LIMITS = Limits(cell_seconds=8, notebook_seconds=30)
COMMENT = "Tidy, but name the axes."
WHEN = dt.datetime(2026, 11, 20, 9, 30)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """One graded course for the module; each test works on a copy of its own (graded_course)."""
    return build_graded_course(tmp_path_factory.mktemp("graded"))


@pytest.fixture
def graded_course(graded, tmp_path):
    course, results, hidden = graded
    shutil.copytree(course.root, tmp_path / "course", symlinks=True)
    return Course(tmp_path / "course"), results, hidden


def build_graded_course(tmp):
    """ada solved, bob untouched, graded; a manual grade and a comment for ada; portal links, a policy, an
    extension and a graded portal attempt."""
    course = course_with_solvers(tmp / "course", "ada")
    (course.submitted / "bob" / NB).mkdir(parents=True)
    shutil.copy(ROOT / "exercises" / NB / f"{NB}.ipynb", course.submitted / "bob" / NB)
    results = {r.student: r for r in grade_all(course, jobs=2, isolate=False, limits=LIMITS, quiet=True)}
    hidden = next(t for t in results["ada"].tests if t.hidden)
    with gradebook.open_gradebook(course) as gb:
        gb.find_grade(hidden.cell_id, NB, NB, "ada").manual_score = hidden.max_points - 1
        comment = gb.db.execute(sqlalchemy.text(
            "SELECT c.id FROM comment c JOIN submitted_notebook n ON c.notebook_id = n.id JOIN submitted_assignment s "
            "ON n.assignment_id = s.id WHERE s.student_id = 'ada'")).scalars().first()
        gb.db.execute(sqlalchemy.text("UPDATE comment SET manual_comment = :c WHERE id = :i"),
                      {"c": COMMENT, "i": comment})
        gb.db.commit()
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["portal-links", "--root", str(course.root), "--student", "ada", "--student", "bob"]) == 0
    with database(course, register=False)() as db:
        db.add(Policy(assignment=NB, deadline=WHEN, late_days=2))
        db.add(Extension(student_id="bob", assignment=NB, deadline=WHEN + dt.timedelta(days=3)))
        db.add(Attempt(student_id="ada", assignment=NB, notebook=NB, number=1, sha256="a" * 64, size=10,
                       uploaded_at=WHEN, late=False, status="graded", score=FULL, max_score=FULL, promoted=True))
        db.commit()
    assert cli.main(["feedback", "--root", str(course.root)]) == 0     # the class files with all of it
    return course, results, hidden


def snapshot(course):
    """What the course's files say: every result record, feedback page and grade file."""
    files = [*course.autograded.rglob("*.result.json"), *course.feedback.rglob("*.html"), course.grades_csv]
    return {str(p.relative_to(course.root)): p.read_bytes() for p in files}


def table_rows(url) -> dict[str, list]:
    """Every row of every table, made comparable across databases (times naive, numbers as floats)."""
    def value(v):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, (int, float)):
            return float(v)
        if isinstance(v, dt.datetime):
            return v.replace(tzinfo=None).isoformat()
        return str(v)
    engine = sqlalchemy.create_engine(url)
    found = sqlalchemy.MetaData()
    found.reflect(engine)
    with engine.connect() as db:
        rows = {name: sorted((tuple((c, value(v)) for c, v in sorted(row._mapping.items()))
                              for row in db.execute(sqlalchemy.select(table))), key=repr)
                for name, table in found.tables.items()}
    engine.dispose()
    return rows


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(list(args))
    return status, out.getvalue(), err.getvalue()


def grades(course):
    return {r["student"]: float(r["score"]) for r in csv.DictReader(open(course.grades_csv))}


def test_another_database_is_refused_with_the_fix(graded_course, tmp_path):
    course, results, hidden = graded_course
    before = snapshot(course)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    for command in (["grade", "--no-sandbox"], ["grade", "--no-sandbox", "--force"], ["feedback"], ["portal-links"],
                    ["uncollect", "--student", "bob"]):
        status, _, err = run(*command, "--root", str(course.root), "--db-url", other)
        assert status == 2, (command, err)
        assert f"make move-db TO={other}" in err and "Traceback" not in err and "Nothing was changed" in err
    assert snapshot(course) == before
    assert grades(course) == {"ada": FULL - 1, "bob": 0}          # the manual grade, as before
    assert run("grade", "--no-sandbox", "--root", str(course.root))[0] == 0       # its own database: fine


@pytest.mark.postgres
def test_move_to_postgresql_and_back_keeps_every_row(graded_course, tmp_path, postgres_url):
    course, results, hidden = graded_course
    sqlite_url = course.gradebook_url
    before, files = table_rows(sqlite_url), snapshot(course)
    status, out, err = run("move-db", "--root", str(course.root), "--to", postgres_url)
    assert status == 0, err
    moved = table_rows(postgres_url)
    assert moved == before
    compared = sum(map(len, before.values()))
    assert compared > 100 and {"grade", "comment", "portal_student", "portal_attempt", "portal_policy",
                               "portal_extension"} <= {name for name, rows in before.items() if rows}
    assert Course(course.root).gradebook_url == postgres_url
    assert (course.path(DATABASE_FILE).stat().st_mode & 0o777) == 0o600
    # The course goes on there, without DB_URL: nothing regraded, the manual grade and comment kept, links valid.
    again = grade_all(Course(course.root), jobs=2, isolate=False, limits=LIMITS, quiet=True)
    assert [r.score for r in again] == [results["ada"].score, 0]
    assert snapshot(course) == files and grades(course) == {"ada": FULL - 1, "bob": 0}
    said = run("portal-links", "--root", str(course.root))[1]
    assert said.startswith("0 new sign-in links and 2 earlier ones still valid, for 2 students")
    with database(course, register=False)() as db:     # the sequence was moved on: a new attempt gets a new id
        db.add(Attempt(student_id="bob", assignment=NB, notebook=NB, number=1, sha256="b" * 64, size=1,
                       uploaded_at=WHEN))
        db.commit()
    back = f"sqlite:///{tmp_path / 'back.db'}"
    now = table_rows(postgres_url)
    assert run("move-db", "--root", str(course.root), "--to", back)[0] == 0
    assert table_rows(back) == now and sum(map(len, now.values())) == compared + 1
    print(f"rows compared: {compared} SQLite -> PostgreSQL, {compared + 1} PostgreSQL -> SQLite, "
          f"{len(before)} tables")


def test_move_refuses_a_database_holding_rows(graded_course, tmp_path):
    course, _, _ = graded_course
    other = Course(make_course(tmp_path / "other"))          # a course of its own, registered
    status, _, err = run("move-db", "--root", str(course.root), "--to", other.gradebook_url)
    assert status == 1 and "already holds rows" in err and "Nothing was changed" in err
    assert Course(course.root).gradebook_url == course.gradebook_url


def test_portal_links_never_overwrite_earlier_links(tmp_path):
    """Links sent before anything was graded, then portal-links on a new database: the earlier file is kept."""
    course = Course(make_course(tmp_path / "course"))
    assert run("portal-links", "--root", str(course.root), "--student", "ada", "--student", "bob")[0] == 0
    target = course.reports / links.LINKS_FILE
    earlier = target.read_text()
    shutil.copy(registered_gradebook(), tmp_path / "new.db")          # another course's database, nothing graded
    status, out, err = run("portal-links", "--root", str(course.root), "--db-url", f"sqlite:///{tmp_path / 'new.db'}")
    assert status == 0
    kept = [p for p in course.reports.glob("portal-links-until-*.csv")]
    assert len(kept) == 1 and kept[0].read_text() == earlier and str(kept[0]) in err
    assert "2 earlier links (ada, bob) are not in the new file" in err
    assert (kept[0].stat().st_mode & 0o777) == 0o600
    now = {row["student_id"]: row["link"] for row in csv.DictReader(open(target))}
    assert set(now) == {"ada", "bob"} and not set(now.values()) & set(links.earlier_links(kept[0]).values())


def test_an_unreachable_database_is_said_without_a_traceback(graded_course):
    course, _, _ = graded_course
    nowhere = "postgresql+psycopg2://nobody@127.0.0.1:1/none"
    status, _, err = run("grade", "--no-sandbox", "--root", str(course.root), "--db-url", nowhere)
    assert status == 2 and "cannot read the database" in err and "Traceback" not in err
    status, _, err = run("move-db", "--root", str(course.root), "--to", nowhere)
    assert status == 1 and "the move stopped" in err and Course(course.root).gradebook_url == course.gradebook_url
