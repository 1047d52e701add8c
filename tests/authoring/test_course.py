"""The course folder comes from where you run (or --course / $POSENC_COURSE), never from where the grader is
installed."""
import pytest
from fixture_submissions import make_course

from posenc_autograder.course import COURSE_ENV, Course, CourseNotFound, find_root


@pytest.fixture
def copy_of_course(tmp_path):
    return make_course(tmp_path / "second-section", registered=False).resolve()   # finding it needs no gradebook


def test_the_working_directory_or_a_parent_of_it_is_the_course(copy_of_course, monkeypatch):
    monkeypatch.delenv(COURSE_ENV, raising=False)
    monkeypatch.chdir(copy_of_course / "autograder")          # where `make release` runs nbgrader
    assert find_root() == copy_of_course
    assert Course().submitted == copy_of_course / "autograder" / "submitted"


def test_an_explicit_course_wins_over_the_environment_and_the_working_directory(copy_of_course, tmp_path,
                                                                                monkeypatch):
    other = make_course(tmp_path / "other", registered=False).resolve()
    monkeypatch.setenv(COURSE_ENV, str(other))
    monkeypatch.chdir(copy_of_course)
    assert find_root() == other
    assert find_root(copy_of_course) == copy_of_course


def test_outside_any_course_the_error_says_how_to_name_one(tmp_path, monkeypatch):
    monkeypatch.delenv(COURSE_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CourseNotFound, match="--course PATH, or set POSENC_COURSE"):
        Course()
    with pytest.raises(CourseNotFound, match="no course folder at '/nonexistent'"):
        find_root("/nonexistent")


def test_a_command_outside_any_course_says_why_without_a_traceback(tmp_path):
    import subprocess
    import sys
    done = subprocess.run([sys.executable, "-m", "posenc_autograder", "release", "--check"], cwd=tmp_path,
                          capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 1
    assert done.stderr.startswith("error: no course folder at") and "Traceback" not in done.stderr
