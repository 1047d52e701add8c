"""Class scale: parallel grading equals sequential grading; PostgreSQL + a Dask cluster equal the default path."""
import os
import shutil

import pytest
from fixture_submissions import build, make_course

from posenc_autograder.checks import variants
from posenc_autograder.course import Course
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=5, notebook_seconds=30)
SUBSET = ["correct", "untouched", "os_exit_in_function", "infinite_loop", "missing", "merge_conflict"]


def outcomes(results):
    """Everything a student sees: per notebook, each test's points and diagnosis, and the notes."""
    return {(r.student, r.assignment, r.notebook): (r.graded, r.notes, [(t.cell_id, t.points, t.problems)
                                                                        for t in r.tests]) for r in results}


def graded(tmp_path, students=None, **options):
    course = Course(make_course(tmp_path), options.pop("db_url", None))
    build(course.submitted)
    if students:
        for folder in course.submitted.iterdir():
            if folder.name not in students:
                shutil.rmtree(folder)
    return grade_all(course, limits=LIMITS, quiet=True, **options)


@pytest.fixture(scope="module", autouse=True)
def one_course_secret():
    """Each test grades its own copy of the class; like one class graded on several hosts, the copies
    share the course secret, so every student gets the same hidden inputs everywhere."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(variants.SECRET_ENV, "one secret for every copy of the class")
        yield


@pytest.fixture(scope="module")
def sequential(tmp_path_factory):
    """The reference outcome: one job at a time, SQLite, this process (graded once for both tests)."""
    return outcomes(graded(tmp_path_factory.mktemp("one"), students=SUBSET, jobs=1))


def test_parallel_grading_equals_sequential(tmp_path, sequential):
    assert outcomes(graded(tmp_path / "many", students=SUBSET, jobs=2)) == sequential


def test_postgres_and_dask_cluster_give_the_default_grades(tmp_path, postgres_url, sequential):
    from distributed import LocalCluster

    environment = dict(os.environ)      # the cluster's nannies write their workers' variables into this process's
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        clustered = graded(tmp_path / "cluster", students=SUBSET, jobs=2, db_url=postgres_url,
                           scheduler=cluster.scheduler_address)
    os.environ.clear()                  # (OMP_NUM_THREADS=1, PYTHONHASHSEED...): the tests after it would run so
    os.environ.update(environment)
    assert outcomes(clustered) == sequential
    import sqlalchemy
    with sqlalchemy.create_engine(postgres_url).connect() as db:
        stored = db.execute(sqlalchemy.text("SELECT count(*) FROM grade WHERE auto_score IS NOT NULL")).scalar()
    assert stored == len(SUBSET) * len(clustered[0].tests)
