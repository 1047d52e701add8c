"""The late policy reads the portal's deadlines and extensions as plain tables (records/ comes before portal/): the
names it reads are the portal's models' own, and both tables are read through one engine, once per late policy."""
import datetime as dt

import pytest
from fixture_submissions import make_course

from posenc_autograder.course import Course
from posenc_autograder.portal import models
from posenc_autograder.records import portal_dates
from posenc_autograder.reports import late_policy


def test_the_names_read_are_the_portal_models():
    for (table, columns), model in ((portal_dates.POLICY, models.Policy), (portal_dates.EXTENSION, models.Extension)):
        assert table == model.__tablename__
        assert set(columns) <= set(model.__table__.columns.keys()), table


def test_one_late_policy_reads_the_portal_once(tmp_path, monkeypatch):
    course = Course(make_course(tmp_path / "course"))
    session = models.open_database(course.gradebook_url)()
    session.add_all([models.Student(id="ann"), models.Policy(assignment="positional_encoding",
                                                             deadline=dt.datetime(2026, 12, 1, 17, 0)),
                     models.Extension(student_id="ann", assignment="positional_encoding",
                                      deadline=dt.datetime(2026, 12, 3, 17, 0))])
    session.commit()
    session.close()
    reads = []
    real = portal_dates.read
    monkeypatch.setattr(portal_dates, "read", lambda c: reads.append(c) or real(c))
    deadlines = late_policy.Deadlines(course)
    utc = dt.timezone.utc
    assert deadlines.deadline("ann", "positional_encoding") == (dt.datetime(2026, 12, 3, 17, 0, tzinfo=utc), True)
    assert deadlines.deadline("bo", "positional_encoding") == (dt.datetime(2026, 12, 1, 17, 0, tzinfo=utc), False)
    assert len(reads) == 1


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_one_students_dates_are_read_in_one_statement(tmp_path, request, database):
    """A page's or a store's late policy (one student's) reads the deadlines and the student's extensions in one
    statement, where it sent two (on PostgreSQL each a round trip to the server); the dates are the same, and no other
    student's extension is read. Fails on the old code: two statements."""
    from sqlalchemy import event
    course = Course(make_course(tmp_path / "course"))
    url = request.getfixturevalue("postgres_url") if database == "postgresql" else course.gradebook_url
    sessions = models.open_database(url)
    december = [dt.datetime(2026, 12, day, 17, 0) for day in (1, 2, 3, 4)]
    with sessions() as db:
        db.add_all([models.Student(id="ann"), models.Student(id="bo")])
        db.flush()                                                   # the extensions' students first
        db.add_all([models.Policy(assignment="positional_encoding", deadline=december[0]),
                    models.Policy(assignment="attention", deadline=None),
                    models.Extension(student_id="ann", assignment="positional_encoding", deadline=december[2]),
                    models.Extension(student_id="ann", assignment="attention", deadline=december[3]),
                    models.Extension(student_id="bo", assignment="positional_encoding", deadline=december[1])])
        db.commit()
    ran = []
    engine = sessions.kw["bind"]
    event.listen(engine, "before_cursor_execute", lambda *args: ran.append(args[2]))
    utc = dt.timezone.utc
    with sessions() as db:
        for _ in range(2):                       # the second: as a prepared statement on PostgreSQL
            ran.clear()
            assert portal_dates.read(course, db, student="ann") == portal_dates.PortalDates(
                {"positional_encoding": december[0].replace(tzinfo=utc)},
                {("ann", "positional_encoding"): december[2].replace(tzinfo=utc),
                 ("ann", "attention"): december[3].replace(tzinfo=utc)})
            assert len(ran) == 1
        everyones = portal_dates.read(course, db).extensions
        assert everyones[("bo", "positional_encoding")] == december[1].replace(tzinfo=utc)
    engine.dispose()
