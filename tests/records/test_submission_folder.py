"""Every file in a student's submission folder is opened with lstat checks and
O_NOFOLLOW|O_NONBLOCK and never written through: a FIFO or a link named timestamp.txt (a `cp -a` or
`rsync -a` hand-in) neither blocks grading nor redirects a write. SIGALRM turns a hang into a failure."""
import datetime as dt
import os

import pytest
from deadline import deadline
from lms_zips import NB

from posenc_autograder.course import Course
from posenc_autograder.intake.collect import store
from posenc_autograder.records import nbgrader_files


@pytest.fixture
def folder(tmp_path):
    course = Course(tmp_path)
    path = course.submitted / "mallory" / NB
    path.mkdir(parents=True)
    (path / f"{NB}.ipynb").write_text("{}")
    os.utime(path / f"{NB}.ipynb", (1_700_000_000, 1_700_000_000))
    return course, path


def test_a_fifo_named_timestamp_is_neither_waited_on_nor_written(folder):
    course, path = folder
    os.mkfifo(path / "timestamp.txt")
    with deadline(10):
        assert nbgrader_files.read_timestamp(path) is None
        when = nbgrader_files.submission_time(course, "mallory", NB)
    assert when == dt.datetime.fromtimestamp(1_700_000_000, dt.timezone.utc).replace(tzinfo=None)
    assert os.path.exists(path / "timestamp.txt") and not (path / "timestamp.txt").is_file()


def test_a_linked_timestamp_is_not_followed(folder, tmp_path):
    course, path = folder
    target = tmp_path / "elsewhere.txt"
    target.write_text("2000-01-01 00:00:00.000000 UTC")
    (path / "timestamp.txt").symlink_to(target)
    assert nbgrader_files.read_timestamp(path) is None
    nbgrader_files.submission_time(course, "mallory", NB)
    assert target.read_text() == "2000-01-01 00:00:00.000000 UTC"


def test_collect_replaces_a_fifo_or_link_instead_of_writing_through_it(folder, tmp_path):
    course, path = folder
    store(course, NB, "mallory", {f"{NB}.ipynb": b"{}"}, dt.datetime(2026, 11, 19, tzinfo=dt.timezone.utc))
    (path / "timestamp.txt").unlink(missing_ok=True)
    os.mkfifo(path / "timestamp.txt")
    target = tmp_path / "victim.ipynb"
    target.write_text("keep")
    (path / "other.ipynb").symlink_to(target)
    with deadline(10):
        store(course, NB, "mallory", {"other.ipynb": b"new"}, dt.datetime(2026, 11, 20, 10, tzinfo=dt.timezone.utc))
    assert target.read_text() == "keep" and (path / "other.ipynb").read_bytes() == b"new"
    assert nbgrader_files.read_timestamp(path) == dt.datetime(2026, 11, 20, 10)


def test_the_exchange_secret_is_kept_and_a_forged_one_is_not(folder, tmp_path):
    """nbgrader's submit writes the secret fetch_feedback will look for; a student's own nbgrader writes it, so a
    link, a FIFO, an oversized or non-hex one is never used (a fresh secret is made: no page is lost or redirected)."""
    course, path = folder
    secret = "0123456789abcdef" * 8                     # nbgrader's token_hex(64)
    (path / nbgrader_files.SECRET).write_text(secret)
    nbgrader_files.place_beside(course, "mallory", NB, None)
    for root in (course.autograded, course.feedback):
        assert (root / "mallory" / NB / nbgrader_files.SECRET).read_text() == secret
    target = tmp_path / "someone-elses-secret.txt"
    target.write_text("f" * 128)
    forged = {"link": lambda p: p.symlink_to(target), "fifo": os.mkfifo,
              "huge": lambda p: p.write_text("a" * 10_000), "not hex": lambda p: p.write_text("../" * 20)}
    for how, make in forged.items():
        (path / nbgrader_files.SECRET).unlink()
        make(path / nbgrader_files.SECRET)
        with deadline(10):
            assert nbgrader_files.exchange_secret(course, "mallory", NB) is None, how
