"""Where the course keeps things: one definition, used by nbgrader_config.py and the grader."""
from __future__ import annotations

import dataclasses
import pathlib

COURSE_ID = "posenc-course"
DEFAULT_ROOT = pathlib.Path(__file__).resolve().parents[2]

# Relative to the course root (nbgrader's CourseDirectory.root).
SOURCE_DIRECTORY = "solutions"
RELEASE_DIRECTORY = "exercises"
SUBMITTED_DIRECTORY = "autograder/submitted"
AUTOGRADED_DIRECTORY = "autograder/autograded"
FEEDBACK_DIRECTORY = "autograder/feedback"
DOWNLOADED_DIRECTORY = "autograder/downloaded"
GRADEBOOK = "autograder/gradebook.db"

# File names inside an LMS zip: "<student id>_<notebook>.ipynb" (nbgrader matches the whole path).
SUBMISSION_FILE_PATTERN = r".*/(?P<student_id>[A-Za-z0-9.\-]+)_(?P<file_id>[^/]+\.ipynb)$"


@dataclasses.dataclass(frozen=True)
class Course:
    root: pathlib.Path = DEFAULT_ROOT
    db_url: str | None = None          # None: the SQLite gradebook inside the course

    @property
    def gradebook_url(self) -> str:
        return self.db_url or f"sqlite:///{self.root / GRADEBOOK}"

    def path(self, relative: str) -> pathlib.Path:
        return self.root / relative

    @property
    def submitted(self) -> pathlib.Path:
        return self.path(SUBMITTED_DIRECTORY)

    @property
    def autograded(self) -> pathlib.Path:
        return self.path(AUTOGRADED_DIRECTORY)

    @property
    def feedback(self) -> pathlib.Path:
        return self.path(FEEDBACK_DIRECTORY)

    @property
    def work(self) -> pathlib.Path:
        return self.root / "autograder" / ".work"

    @property
    def reports(self) -> pathlib.Path:
        return self.root / "autograder" / "reports"

    @property
    def grades_csv(self) -> pathlib.Path:
        return self.reports / "grades.csv"     # not autograder/grades.csv, which `nbgrader export` writes

    def assignments(self) -> list[str]:
        return sorted(p.name for p in self.path(SOURCE_DIRECTORY).iterdir() if p.is_dir())

    def notebooks(self, assignment: str) -> list[str]:
        """Notebook names (without .ipynb) of an assignment, from its source folder."""
        folder = self.path(SOURCE_DIRECTORY) / assignment
        return sorted(p.stem for p in folder.glob("*.ipynb"))

    def source_notebook(self, assignment: str, notebook: str) -> pathlib.Path:
        return self.path(SOURCE_DIRECTORY) / assignment / f"{notebook}.ipynb"
