"""Where the course keeps things: one definition, used by nbgrader_config.py and the grader."""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import os
import pathlib
import subprocess
import sys
import uuid
import warnings

COURSE_ID = "posenc-course"
COURSE_ENV = "POSENC_COURSE"           # names the course folder when not running inside it
CONFIG = "autograder/nbgrader_config.py"
SUMMARY_CELL = "visible_summary"  # every notebook's last visible cell: it fails while any check above fails

# Relative to the course root (nbgrader's CourseDirectory.root).
SOURCE_DIRECTORY = "solutions"
RELEASE_DIRECTORY = "exercises"
SUBMITTED_DIRECTORY = "autograder/submitted"
ATTEMPTS_DIRECTORY = "autograder/attempts"          # every attempt from every door, kept (intake/attempts.py)
AUTOGRADED_DIRECTORY = "autograder/autograded"
FEEDBACK_DIRECTORY = "autograder/feedback"
DOWNLOADED_DIRECTORY = "autograder/downloaded"
GRADEBOOK = "autograder/gradebook.db"
DATABASE_FILE = "autograder/database_url"         # the course's database when not GRADEBOOK (make move-db writes it)
NBGRADER_EXPORT = "autograder/grades.csv"          # what `nbgrader export` writes (ours: autograder/reports/)
EXCHANGE_DIRECTORY = "autograder/exchange"         # nbgrader's exchange for one account (release_feedback)
EXCHANGE_ROOT_FILE = "autograder/exchange_root"     # a hub's exchange, outside the course (make hub-setup writes it)

# File names inside an LMS zip: "<student id>_<notebook>.ipynb" (nbgrader matches the whole path).
SUBMISSION_FILE_PATTERN = r".*/(?P<student_id>[A-Za-z0-9.\-]+)_(?P<file_id>[^/]+\.ipynb)$"


class CourseNotFound(Exception):
    """No course folder here; the message says how to name one."""


def is_course(folder: pathlib.Path) -> bool:
    return (folder / CONFIG).is_file() and (folder / SOURCE_DIRECTORY).is_dir()


def write_replacing(path: pathlib.Path, data: bytes) -> os.stat_result:
    """`path` holds `data` whole, or what it held before, never a part: written to a file of this writer's own
    beside it (its mode kept, a new one's from the umask), then renamed over it. Two writers at once (make grade and
    the portal's worker keep the same stamps and generated entries) each put a whole file in place; a shared
    partial name let one writer's rename take the other's file, whose own rename then failed. Returns the written
    file's status as it was put in place (its inode tells this write from any later one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        if path.exists():
            os.chmod(partial, path.stat().st_mode & 0o7777)
        written = os.stat(partial)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return written


def find_root(explicit: str | os.PathLike | None = None) -> pathlib.Path:
    """The course folder: the one given (--course), else $POSENC_COURSE, else the working directory or a
    parent of it. Never the grader package's own location: one installed grader serves any copy of a course."""
    named = explicit or os.environ.get(COURSE_ENV)
    candidates = [pathlib.Path(named)] if named else [pathlib.Path.cwd(), *pathlib.Path.cwd().parents]
    for folder in candidates:
        if is_course(folder.resolve()):
            return folder.resolve()
    where = f"'{named}'" if named else f"{pathlib.Path.cwd()} or its parents"
    raise CourseNotFound(f"no course folder at {where} (one holds {CONFIG} and {SOURCE_DIRECTORY}/): run from "
                         f"inside the course, pass --course PATH, or set {COURSE_ENV}")


def course_for_command(explicit: str | None = None, db_url: str | None = None) -> "Course":
    """The course a command line names (or runs in); outside any course, exit with the reason, no traceback."""
    try:
        return Course(find_root(explicit), db_url)
    except CourseNotFound as exc:
        raise SystemExit(f"error: {exc}") from None


def exchange_root(root: pathlib.Path) -> pathlib.Path:
    """nbgrader's exchange of the course: the one `make hub-setup` recorded (outside the course, for students'
    accounts), else the course-local one (the instructor's alone)."""
    try:
        recorded = (pathlib.Path(root) / EXCHANGE_ROOT_FILE).read_text().strip()
    except OSError:
        recorded = ""
    return pathlib.Path(recorded) if recorded else pathlib.Path(root) / EXCHANGE_DIRECTORY


def recorded_database(root: pathlib.Path) -> str | None:
    """The database URL `make move-db` recorded for the course (None: the SQLite gradebook in autograder/)."""
    try:
        return (pathlib.Path(root) / DATABASE_FILE).read_text().strip() or None
    except OSError:
        return None


@dataclasses.dataclass(frozen=True)
class Course:
    root: pathlib.Path = dataclasses.field(default_factory=find_root)
    db_url: str | None = None          # None: the course's own (DATABASE_FILE, else the SQLite GRADEBOOK)

    @property
    def gradebook_url(self) -> str:
        return self.db_url or recorded_database(self.root) or self.default_gradebook_url

    @property
    def default_gradebook_url(self) -> str:
        return f"sqlite:///{self.root / GRADEBOOK}"

    @property
    def gradebook_in_course(self) -> bool:
        """The gradebook is the SQLite file in autograder/ (so its changes show as a file's)."""
        return self.gradebook_url == self.default_gradebook_url

    def path(self, relative: str) -> pathlib.Path:
        return self.root / relative

    @property
    def submitted(self) -> pathlib.Path:
        return self.path(SUBMITTED_DIRECTORY)

    @property
    def attempts(self) -> pathlib.Path:
        return self.path(ATTEMPTS_DIRECTORY)

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


# --- nbgrader: its cell metadata, and its command line on this course -------------------------

def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader flags; {} when absent or not a mapping (submissions are normalised, but this
    stays safe on any notebook)."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def run_nbgrader(course_root: pathlib.Path, *args: str, home: pathlib.Path | None = None,
                 **options) -> subprocess.CompletedProcess:
    """`nbgrader ARGS` run on the course, with the venv's bin first on PATH (nbgrader runs alembic by name);
    `home` replaces the whole environment by a bare one, so no user configuration is read."""
    bin_dir = pathlib.Path(sys.executable).parent
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(home)} if home else \
        {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    return subprocess.run([str(bin_dir / "nbgrader"), *args], cwd=pathlib.Path(course_root) / "autograder",
                          env=env, **options)


# --- nbgrader's gradebook of this course ------------------------------------------------------

def _venv_tools_on_path() -> None:
    """nbgrader's command line runs `alembic` by name (`nbgrader db upgrade`): find it in this environment."""
    tools = str(pathlib.Path(sys.executable).parent)
    if tools not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = tools + os.pathsep + os.environ.get("PATH", "")


@functools.cache
def nbgrader_schema_revision() -> str | None:
    """The alembic revision nbgrader's newest schema is, read in-process from nbgrader's own migration scripts
    (None: not exactly one head, which nbgrader's Gradebook is then left to stamp its own way). A chain of plain
    scripts is read as text (importing alembic's script machinery costs ~0.3 CPU-s a new gradebook); anything else
    (branches, merges, dependencies) is left to alembic."""
    from nbgrader.dbutil import ALEMBIC_DIR

    head = _chain_head(pathlib.Path(ALEMBIC_DIR) / "versions")
    if head is not None:
        return head
    from alembic.script import ScriptDirectory

    heads = ScriptDirectory(ALEMBIC_DIR).get_heads()
    return heads[0] if len(heads) == 1 else None


def _chain_head(versions: pathlib.Path) -> str | None:
    """The last revision of migration scripts that form one chain, each naming its revision and the one before as
    plain strings (no branch labels or dependencies); None when they do not."""
    revisions, before = set(), set()
    for script in sorted(versions.glob("*.py")):
        stated = {}
        for node in ast.parse(script.read_bytes()).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, ast.Constant):
                stated[node.targets[0].id] = node.value.value
        revision, down = stated.get("revision"), stated.get("down_revision", ...)
        if not isinstance(revision, str) or not (down is None or isinstance(down, str)) \
                or stated.get("branch_labels") is not None or stated.get("depends_on") is not None:
            return None
        revisions.add(revision)
        if down is not None:
            before.add(down)
    heads = revisions - before
    return heads.pop() if len(heads) == 1 and before <= revisions and len(before) == len(revisions) - 1 else None


def create_schema(url: str) -> None:
    """nbgrader's tables and alembic's stamp of their revision in a database that has none of them yet, as
    nbgrader's Gradebook makes them on an empty database, but in-process: Gradebook asks a subprocess
    (`alembic heads`) for the revision, which costs seconds on every new database. A database holding any
    nbgrader table is left as it is (Gradebook then adds what is missing, as it always did), and its revision is
    never looked up (alembic's scripts and their templates cost a run ~0.5 CPU-s to import)."""
    from nbgrader.api import Base
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    try:
        present = set(inspect(engine).get_table_names())
        if "alembic_version" in present or present & set(Base.metadata.tables):
            return
        revision = nbgrader_schema_revision()
        if revision is None:
            return
        with engine.begin() as db:
            Base.metadata.create_all(db)
            db.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            db.execute(text("INSERT INTO alembic_version (version_num) VALUES (:revision)"), {"revision": revision})
    finally:
        engine.dispose()


@contextlib.contextmanager
def open_gradebook(course: Course):
    _venv_tools_on_path()
    from nbgrader.api import Gradebook  # not at import: most commands never open the gradebook
    # nbgrader's add_submission trips SQLAlchemy's autoflush warnings; they are noise, not problems.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="nbgrader")
        warnings.filterwarnings("ignore", message=".*not in session.*")
        create_schema(course.gradebook_url)
        with Gradebook(course.gradebook_url, course_id=COURSE_ID) as gb:
            yield gb
