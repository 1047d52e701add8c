"""`make release`: hidden-test cells and the test plan written from the HiddenTest objects, then exercises/.

    python -m posenc_autograder release [--course PATH] [--check]

For every HiddenTest the solution notebook gets one cell whose title, points and metadata come
from the object (a new test's cell goes after the tests of its answer cell; a cell whose test was
deleted goes too); autograder/test_plan.csv, the README's totals and its table of course settings (from
course.toml, posenc_autograder.settings) are rewritten; then `nbgrader
generate_assignment` makes exercises/ from solutions/. `--check` changes nothing and fails when
anything is stale.
"""
from __future__ import annotations

import copy
import dataclasses
import os
import pathlib
import re
import shutil
import sys
import tempfile

import nbformat

from posenc_autograder import settings
from posenc_autograder.authoring import book_downloads, cell_definitions, release_history
from posenc_autograder.authoring.plan import render_plan_csv
from posenc_autograder.checks import REGISTRY, HiddenTest, hidden_tests, total_points
from posenc_autograder.course import (
    RELEASE_DIRECTORY,
    SOURCE_DIRECTORY,
    Course,
    course_for_command,
    grade_id,
    nbgrader_meta,
)

PLAN = "autograder/test_plan.csv"
README = "README.md"
# A row of the README's table of assignments: | `name` (note) | what students implement | tests | points |
README_ROW = re.compile(r"^\| `(?P<name>\w+)`(?P<middle>[^|]*\|[^|]*\|) \d+ \| [\d.]+ \|$", re.M)
# A row of the README's table of course settings: | `[section] key` | value as written in course.toml | meaning |
SETTING_ROW = re.compile(r"^\| `\[(?P<section>\w+)\] (?P<key>\w+)` \| [^|]* \|(?P<rest>.*)$", re.M)
HIDDEN_CALL = "hidden_test("


def cell_title(test: HiddenTest) -> str:
    unit = "point" if test.points == 1 else "points"
    share = "; points in proportion to the independent cases passed, rounded down to a half point" \
        if test.partial else ""
    return f"# Hidden tests: {test.title}, with inputs you have not seen ({test.points:g} {unit}{share})."


def cell_source(test: HiddenTest) -> str:
    return (f"{cell_title(test)}\n### BEGIN HIDDEN TESTS\nfrom posenc_autograder.notebook import hidden_test\n"
            f'hidden_test("{test.id}", globals())\n### END HIDDEN TESTS')


def cell_metadata(test: HiddenTest) -> dict:
    return {"grade": True, "grade_id": test.id, "locked": True, "points": test.points, "schema_version": 3,
            "solution": False, "task": False}


def _is_generated(cell) -> bool:
    """A hidden-test cell this module writes (a removed test's cell is recognised by its call)."""
    return (grade_id(cell) or "").startswith("hidden_") and HIDDEN_CALL in cell.source


def _insert_position(cells, answer_cell: str) -> int:
    """After the answer cell and the graded cells that follow it."""
    ids = [grade_id(c) for c in cells]
    if answer_cell not in ids:
        raise ValueError(f"answer cell '{answer_cell}' is not in the solution notebook")
    position = ids.index(answer_cell) + 1
    while position < len(cells) and nbgrader_meta(cells[position]).get("grade"):
        position += 1
    return position


def written_notebook(nb, assignment: str):
    """The solution notebook with its hidden-test cells as the objects say."""
    nb = copy.deepcopy(nb)
    tests = {t.id: t for t in hidden_tests(assignment)}
    nb.cells = [c for c in nb.cells if not _is_generated(c) or grade_id(c) in tests]
    for test in tests.values():
        cell = next((c for c in nb.cells if grade_id(c) == test.id), None)
        if cell is None:
            cell = nbformat.v4.new_code_cell(id=test.id)
            nb.cells.insert(_insert_position(nb.cells, test.answer_cell), cell)
        cell.source = cell_source(test)
        cell.metadata["nbgrader"] = cell_metadata(test)
    return nb


def readme_with_totals(text: str, titles: dict[str, str]) -> str:
    """The README with each assignment's number of hidden tests and points taken from the objects;
    an assignment without a row gets one after the last, described by its notebook's title."""
    def row(name, middle):
        return f"| `{name}`{middle} {len(hidden_tests(name))} | {total_points(name):g} |"
    rows = list(README_ROW.finditer(text))
    if not rows:
        return text
    missing = [row(name, f" | {title} |") for name, title in titles.items()
               if name not in {m["name"] for m in rows}]
    end = rows[-1].end()
    text = text[:end] + "".join(f"\n{line}" for line in missing) + text[end:]
    return README_ROW.sub(lambda m: row(m["name"], m["middle"]), text)


def setting_text(key: str, value) -> str:
    """A value as course.toml would write it: "3 GiB", 30, "best", true."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return f'"{settings.size(value)}"' if key.endswith("_bytes") else str(value)


def readme_with_settings(text: str, course_settings: settings.Settings) -> str:
    """The README with each listed setting's value taken from the course's settings (course.toml, else the
    default in settings.py)."""
    def row(match):
        section, key = match["section"], match["key"]
        if section not in settings.SECTIONS or key not in settings.SECTIONS[section].__dataclass_fields__:
            return match[0]                   # not a setting: left for the README's test to name
        value = getattr(getattr(course_settings, section), key)
        return f"| `[{section}] {key}` | {setting_text(key, value)} |{match['rest']}"
    return SETTING_ROW.sub(row, text)


def notebook_title(course: Course, assignment: str) -> str:
    nb = nbformat.read(course.source_notebook(assignment, assignment), as_version=4)
    heading = next((line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
                    if line.startswith("#")), assignment)
    return heading.lstrip("# ").strip()


def stale_files(course: Course) -> dict:
    """path -> new text, for every generated file that disagrees with the objects."""
    changed = {}
    assignments = sorted({t.assignment for t in REGISTRY.values()})
    for assignment in assignments:
        path = course.source_notebook(assignment, assignment)
        text = path.read_text()
        new = nbformat.writes(written_notebook(nbformat.reads(text, as_version=4), assignment)) + "\n"
        if new != text:
            changed[path] = new
    plan = course.path(PLAN)
    if plan.read_text() != render_plan_csv():
        changed[plan] = render_plan_csv()
    readme = course.path(README)
    titles = {assignment: notebook_title(course, assignment) for assignment in assignments}
    if readme.is_file():
        text = readme.read_text()
        new = readme_with_settings(readme_with_totals(text, titles), settings.load(course))
        if new != text:
            changed[readme] = new
    return changed


class ReleaseFailed(Exception):
    """The release stopped before changing anything (or was undone); the message says what to fix."""


@dataclasses.dataclass
class Staged:
    """A release built under a scratch folder, not yet in the course."""
    files: dict[pathlib.Path, bytes]                    # course file -> its new content
    exercises: dict[str, pathlib.Path]                  # assignment -> its built exercises/ folder
    definitions: dict[str, dict]                        # assignment -> notebook -> cell definition
    migrations: list = dataclasses.field(default_factory=list)   # what the gradebook will see (dry run)


def stage(course: Course, scratch: pathlib.Path) -> Staged:
    """Everything checked and built under scratch: the new sources, nbgrader's release of each assignment from
    them, its cell definitions, and a dry run of the gradebook's migration. The course is only read."""
    try:
        changed = stale_files(course)
    except ValueError as exc:
        raise ReleaseFailed(f"{exc}: fix the HiddenTest's answer_cell or the notebook's grade_id") from None
    source_root = scratch / "course"
    shutil.copytree(course.path(SOURCE_DIRECTORY), source_root / SOURCE_DIRECTORY)
    for path, text in changed.items():
        if path.is_relative_to(course.path(SOURCE_DIRECTORY)):
            (source_root / path.relative_to(course.root)).write_text(text)
    files = {path: text.encode() for path, text in changed.items()}
    exercises, definitions = {}, {}
    for assignment in course.assignments():
        build = scratch / "build" / assignment
        try:
            definitions[assignment] = cell_definitions.built_definitions(course, assignment, source_root, build)
        except RuntimeError as exc:
            raise ReleaseFailed(f"{exc}\n(the notebook solutions/{assignment}/ as the HiddenTest objects make it "
                                f"is what nbgrader refused: check its cells' nbgrader metadata)") from None
        exercises[assignment] = build / "exercises" / assignment
        for path, text in release_history.pending(course, assignment, exercises[assignment]).items():
            files[path] = text.encode()
    try:
        migrations = cell_definitions.migrate_all(course, definitions, commit=False)
    except Exception as exc:  # noqa: BLE001 - any database refusal stops the release before it changes anything
        raise ReleaseFailed(f"the gradebook ({course.gradebook_url}) cannot take the new cells: {exc}") from None
    return Staged(files, exercises, definitions, migrations)


def changed_files(course: Course, staged: Staged) -> list[pathlib.Path]:
    """Each file of exercises/ whose content the staged release changes (or adds)."""
    found = []
    for assignment, folder in staged.exercises.items():
        for new in sorted(folder.rglob("*")):
            old = course.path(RELEASE_DIRECTORY) / assignment / new.relative_to(folder)
            if new.is_file() and (not old.is_file() or old.read_bytes() != new.read_bytes()):
                found.append(old)
    return found


def swap_in(course: Course, staged: Staged, scratch: pathlib.Path) -> list:
    """Put the staged release in place: the files (each kept aside first), then the gradebook's migration as
    the last step, one transaction that either commits whole or leaves the database as it was. On any failure
    every file is put back, then the error goes on."""
    backup = _Backup(scratch / "backup")
    try:
        for path, data in staged.files.items():
            backup.keep(path)
            _write_atomically(path, data)
        for assignment, built in staged.exercises.items():
            backup.keep_folder(course.path(RELEASE_DIRECTORY) / assignment)
            shutil.copytree(built, course.path(RELEASE_DIRECTORY) / assignment)
        return cell_definitions.migrate_all(course, staged.definitions)
    except BaseException:
        backup.restore()
        raise


class _Backup:
    """The bytes of every file the swap touches, taken just before it touches them."""

    def __init__(self, folder: pathlib.Path):
        self.folder = folder
        self.files: dict[pathlib.Path, bytes | None] = {}
        self.folders: dict[pathlib.Path, pathlib.Path | None] = {}

    def keep(self, path: pathlib.Path) -> None:
        self.files.setdefault(path, path.read_bytes() if path.exists() else None)

    def keep_folder(self, folder: pathlib.Path) -> None:
        """Moved aside whole (a rename: the released folder is replaced, never merged)."""
        kept = None
        if folder.exists():
            kept = self.folder / str(len(self.folders))
            kept.parent.mkdir(parents=True, exist_ok=True)
            folder.rename(kept)
        self.folders[folder] = kept

    def restore(self) -> None:
        for folder, kept in self.folders.items():
            shutil.rmtree(folder, ignore_errors=True)
            if kept is not None:
                kept.rename(folder)
        for path, data in self.files.items():
            if data is None:
                path.unlink(missing_ok=True)
            else:
                _write_atomically(path, data)


def _write_atomically(path: pathlib.Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    shutil.copymode(path, partial) if path.exists() else None
    os.replace(partial, path)


def release(course: Course) -> list[str]:
    """`make release`, all or nothing: lines saying what changed. ReleaseFailed when nothing was changed."""
    course.work.mkdir(parents=True, exist_ok=True)
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="release-", dir=course.work))
    try:
        staged = stage(course, scratch)
        lines = [f"wrote: {path.relative_to(course.root)}{_why(course, path)}" for path in staged.files]
        changed = changed_files(course, staged)
        lines += [f"released: {path.relative_to(course.root)} (hand it out again)" for path in changed]
        try:
            migrations = swap_in(course, staged, scratch)
        except Exception as exc:  # noqa: BLE001 - undone by swap_in; said with its cause
            raise ReleaseFailed(f"putting the release in place failed ({type(exc).__name__}: {exc}); every file "
                                f"and the gradebook were put back as they were") from exc
        lines += book_downloads.refresh(course, [path for path in changed if path.suffix == ".ipynb"])
        return lines + [f"gradebook: {line}" for m in migrations for line in m.lines()]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _why(course: Course, path: pathlib.Path) -> str:
    if path == course.path(README):
        return " (the table of assignments: hidden tests and points)"
    if path == course.path(PLAN):
        return " (the test plan)"
    if path.is_relative_to(course.path(SOURCE_DIRECTORY)):
        return " (hidden-test cells)"
    return " (this release's read-only cells: commit it)"


def arguments(parser) -> None:
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a generated file is stale")


def run_command(args) -> int:
    course = course_for_command(args.course)
    if args.check:
        changed = stale_files(course)
        for path in changed:
            print(f"stale: {path.relative_to(course.root)}")
        return 1 if changed else 0
    try:
        lines = release(course)
    except ReleaseFailed as exc:
        print(f"make release changed nothing: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines) if lines else "Nothing to release: exercises/, the test plan and the README already "
          "say what the HiddenTest objects say.")
    return 0
