"""nbgrader's exchange driven as a hub drives it: the instructor's side with the course's own configuration (its
nbgrader_config.py), each student's in a home of their own with nothing of the course's configuration, as
`nbgrader fetch_assignment`, `submit` and `fetch_feedback` run in a student's server.

The steps run nbgrader's own exchange classes (what its command-line apps start) in this process: each `nbgrader`
command costs some 3 CPU-s of imports. `Student(..., user=...)` runs the student's steps in a process of that system
user's (the hub layout test)."""
from __future__ import annotations

import logging
import os
import pathlib
import pwd
import shutil
import tempfile
import traceback

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from posenc_autograder.course import COURSE_ID, Course

QUIET = logging.getLogger("exchange-door")
QUIET.setLevel(logging.ERROR)


def _exchange_step(kind: str, config: Config, assignment: str) -> None:
    """One of nbgrader's exchange classes (release_assignment, submit, ...) started as its app starts it."""
    from nbgrader import exchange
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory

    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id = assignment
    step = getattr(exchange.default, kind)(coursedir=coursedir, authenticator=Authenticator(config=config),
                                           config=config, log=QUIET)
    step.start()


def instructor(course: Course, exchange: pathlib.Path, kind: str, assignment: str, **settings) -> None:
    """ExchangeReleaseAssignment, ExchangeCollect, ExchangeReleaseFeedback... as `nbgrader <command>` runs them from
    the course root: the course's configuration, on the exchange given."""
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course.root / "autograder")).load_config()
    config.Exchange.root = str(exchange)
    for name, value in settings.items():
        section, key = name.split("__")
        setattr(getattr(config, section), key, value)
    _exchange_step(kind, config, assignment)


class Student:
    """A student's server: a home of their own, nbgrader's cache in it, the course known only by its id."""

    def __init__(self, name: str, home: pathlib.Path, exchange: pathlib.Path, user: str | None = None,
                 zone: str = "UTC"):
        """user: run each step as this system user (a process of theirs, forked from this one with nbgrader's code
        already loaded: the user need not be able to read this interpreter), as their own server would."""
        self.name, self.home, self.exchange, self.user, self.zone = name, home, exchange, user, zone
        home.mkdir(parents=True, exist_ok=True)
        if user:
            shutil.chown(home, user)

    def settings(self) -> dict[str, str]:
        """What a hub's nbgrader configuration gives a student's server (Exchange.timezone: the zone its
        timestamps are written in)."""
        return {"Exchange.root": str(self.exchange), "Exchange.cache": str(self.home / "cache"),
                "Exchange.assignment_dir": str(self.home), "Exchange.timezone": self.zone,
                "CourseDirectory.course_id": COURSE_ID, "CourseDirectory.student_id": self.name}

    def nbgrader(self, command: str, assignment: str) -> None:
        config = Config()
        for name, value in self.settings().items():
            section, key = name.split(".")
            setattr(getattr(config, section), key, value)
        kind = {"fetch_assignment": "ExchangeFetchAssignment", "submit": "ExchangeSubmit",
                "fetch_feedback": "ExchangeFetchFeedback"}[command]
        if self.user is None:
            return _exchange_step(kind, config, assignment)
        as_user(self.user, self.home, lambda: _exchange_step(kind, config, assignment))

    def fetch(self, assignment: str) -> pathlib.Path:
        self.nbgrader("fetch_assignment", assignment)
        return self.home / assignment

    def submit(self, assignment: str, notebooks: dict[str, str]) -> None:
        """Writes each notebook (file name -> JSON text) into the fetched folder, then `nbgrader submit`."""
        folder = self.home / assignment
        for name, text in notebooks.items():
            (folder / name).write_text(text)
        self.nbgrader("submit", assignment)

    def fetch_feedback(self, assignment: str) -> dict[str, str]:
        """'<submission time>/<notebook>.html' -> page, of every feedback page nbgrader fetched."""
        self.nbgrader("fetch_feedback", assignment)
        where = self.home / assignment / "feedback"
        return {str(p.relative_to(where)): p.read_text() for p in sorted(where.glob("*/*.html"))}



def as_user(user: str, home: pathlib.Path, step) -> None:
    """Run `step` in a child process of this one that has become `user` (no other group, HOME and working folder
    `home`); fails with the child's traceback."""
    import nbgrader.exchange.default  # noqa: F401 - loaded before the fork: the user cannot read this venv
    import rapidfuzz  # noqa: F401 - nbgrader's "did you mean" on a missing assignment
    account = pwd.getpwnam(user)
    errors = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)
            os.environ["HOME"] = str(home)
            os.chdir(home)
            step()
            os._exit(0)
        except BaseException:  # noqa: BLE001 - reported by the parent
            errors.write(traceback.format_exc().encode())
            errors.flush()
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    errors.seek(0)
    assert status == 0, f"as {user}: {errors.read().decode()}"
