"""`make release`: hidden-test cells and the test plan written from the HiddenTest objects, then exercises/, then
the gradebook, all or nothing.

    python -m posenc_autograder release [--course PATH] [--check]

authoring/release.py says what the sources, the test plan and the README should hold; nbgrader's generate_assignment
makes exercises/ from solutions/ in-process, and only for an assignment whose inputs changed (authoring/generation.py
keeps each by digest); the gradebook takes the new cells' definition when it does not hold it yet. A release with
nothing changed answers from digests: it generates nothing, and reads no gradebook while the course's SQLite file is
the one found holding these definitions before. `--check` changes nothing and fails when anything is stale.
"""
from __future__ import annotations

import dataclasses
import pathlib
import shutil
import sys
import tempfile

from posenc_autograder.authoring import book_downloads, cell_definitions, generation, release_history
from posenc_autograder.authoring.release import PLAN, README, stale_files
from posenc_autograder.course import (
    GRADEBOOK,
    RELEASE_DIRECTORY,
    SOURCE_DIRECTORY,
    Course,
    course_for_command,
    write_replacing,
)
from posenc_autograder.records import stamps


class ReleaseFailed(Exception):
    """The release stopped before changing anything (or was undone); the message says what to fix."""


@dataclasses.dataclass
class Staged:
    """A release built under a scratch folder, not yet in the course."""
    files: dict[pathlib.Path, bytes]                    # course file -> its new content
    exercises: dict[str, pathlib.Path]                  # assignment -> its built exercises/ folder, where it changes
    definitions: dict[str, dict]                        # assignment -> notebook -> cell definition
    migrations: list = dataclasses.field(default_factory=list)   # what the gradebook will see (dry run)


def stage(course: Course, scratch: pathlib.Path) -> Staged:
    """Everything checked and built under scratch: the new sources, nbgrader's release of each assignment from
    them (kept from an earlier release when nothing it depends on changed), its cell definitions, and a dry run of
    the gradebook's migration when the gradebook does not hold them yet. The course is only read."""
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
        try:
            made = generation.generated(course, assignment, source_root)
        except generation.GenerationFailed as exc:
            raise ReleaseFailed(f"{exc}\n(the notebook solutions/{assignment}/ as the HiddenTest objects make it "
                                f"is what nbgrader refused: check its cells' nbgrader metadata)") from None
        definitions[assignment] = made.definitions
        released = course.path(RELEASE_DIRECTORY) / assignment
        if not made.same_as(released):
            released = exercises[assignment] = scratch / "build" / assignment
            made.write(released)
        for path, text in release_history.pending(course, assignment, released).items():
            files[path] = text.encode()
    migrations = []
    if not gradebook_holds(course, definitions):
        try:
            migrations = cell_definitions.migrate_all(course, definitions, commit=False)
        except Exception as exc:  # noqa: BLE001 - any database refusal stops the release before it changes anything
            raise ReleaseFailed(f"the gradebook ({course.gradebook_url}) cannot take the new cells: {exc}") from None
    return Staged(files, exercises, definitions, migrations)


HELD = "release-gradebook"          # the stamp of the gradebook last found holding a release's definitions


def _held_stamp(course: Course, definitions: dict) -> str | None:
    """The definitions and the state of the course's SQLite gradebook (its journal files too: any write changes
    one); None for a gradebook elsewhere (a server), whose changes no file shows: it is always read."""
    if not course.gradebook_in_course:
        return None
    database = course.path(GRADEBOOK)
    return stamps.digest(course.gradebook_url,
                         {a: {nb: d.as_json() for nb, d in notebooks.items()} for a, notebooks in definitions.items()},
                         stamps.file_states([database, *(database.with_name(database.name + end)
                                                          for end in ("-wal", "-journal"))]))


def gradebook_holds(course: Course, definitions: dict) -> bool:
    """Whether the gradebook holds exactly these definitions (cell_definitions.held), remembered while its file
    stays as it was: a release with nothing changed neither opens the gradebook nor imports nbgrader."""
    stamp = _held_stamp(course, definitions)
    if stamp is not None and stamps.recall(course, HELD, stamp):
        return True
    if not cell_definitions.held(course, definitions):
        return False
    remember_held(course, definitions)
    return True


def remember_held(course: Course, definitions: dict) -> None:
    stamp = _held_stamp(course, definitions)
    if stamp is not None:
        stamps.remember(course, HELD, stamp)


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
            write_replacing(path, data)
        for assignment, built in staged.exercises.items():
            backup.keep_folder(course.path(RELEASE_DIRECTORY) / assignment)
            shutil.copytree(built, course.path(RELEASE_DIRECTORY) / assignment)
        if not staged.migrations:
            return []
        migrations = cell_definitions.migrate_all(course, staged.definitions)
    except BaseException:
        backup.restore()
        raise
    remember_held(course, staged.definitions)
    return migrations


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
                write_replacing(path, data)


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
