"""The late policy reads the portal's deadlines and extensions as plain tables (records/ comes before portal/): the
names it reads are the portal's models' own, and both tables are read through one engine, once per late policy."""
import datetime as dt

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
