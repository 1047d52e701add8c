"""The gradebook's definition of each notebook's cells, changed in place when a release adds, removes or
re-points cells while submissions exist.

nbgrader records every released notebook's cells (grade, solution, task and source cells) and refuses to add
or remove any once a submission exists. Changing the hidden tests mid-term needs exactly that, so the grader
does it itself: nbgrader writes the new definition into a fresh, empty gradebook (authoring/generation.py, which
keeps it by digest), and `migrate` makes the course's gradebook hold the same definition in one transaction.
Grades and comments of cells that stay, manual grades among them, submissions, students and every other table
(the portal's) are left as they are; a new cell gets a blank grade (and comment) in every existing submission, as
nbgrader's add_submission would have made; a removed cell's grades go with it, and the manual grades among them
are named.
"""
from __future__ import annotations

import dataclasses

from posenc_autograder import words
from posenc_autograder.authoring.generation import KINDS, Definition, cells_of, model_of, read_definition
from posenc_autograder.course import Course, open_gradebook

# nbgrader (over a CPU-second to import) is imported where a gradebook is read or changed: a release with nothing
# to change answers from digests without it.

@dataclasses.dataclass
class Migration:
    """What migrate changed in one notebook's definition (graded cells only: the others carry no points)."""
    assignment: str
    notebook: str
    added: dict[str, float] = dataclasses.field(default_factory=dict)
    removed: dict[str, float] = dataclasses.field(default_factory=dict)
    repointed: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    submissions: int = 0
    registered: bool = False           # the gradebook did not know the notebook: its first registration
    lost_manual_grades: list[tuple[str, str, float]] = dataclasses.field(default_factory=list)
    # (student, cell, manual score, old max, new max): kept as given, never rescaled, and flagged in formgrader
    manual_to_review: list[tuple[str, str, float, float, float]] = dataclasses.field(default_factory=list)

    def changed(self) -> bool:
        return bool(self.added or self.removed or self.repointed)

    def lines(self) -> list[str]:
        where = f"{self.assignment}/{self.notebook}"
        if self.registered:
            return [f"{where}: registered ({len(self.added)} graded cells, {sum(self.added.values()):g} points)"]
        lines = [f"{where}: new test {cell} ({words.count(points, 'point')})"
                 for cell, points in self.added.items()]
        lines += [f"{where}: test {cell} removed (it was worth {points:g})" for cell, points in self.removed.items()]
        lines += [f"{where}: {cell} {old:g} → {new:g} points" for cell, (old, new) in self.repointed.items()]
        lines += [f"{where}: the manual grade {score:g} of {student} on the removed cell {cell} is gone with it "
                  f"(enter it again on another cell in formgrader if it should count)"
                  for student, cell, score in self.lost_manual_grades]
        lines += [f"{where}: {student}'s manual grade on {cell} is kept as given, {score:g} (it was out of {old:g}, "
                  f"now {new:g}); it is not rescaled: review it in formgrader, where it is flagged as needing grading"
                  for student, cell, score, old, new in self.manual_to_review]
        return lines


def held(course: Course, definitions: dict[str, dict[str, Definition]]) -> bool:
    """Whether the course's gradebook already holds exactly these definitions (assignment -> notebook ->
    Definition): then there is nothing to migrate."""
    with open_gradebook(course) as gb:
        return all(read_definition(gb, assignment, notebook) == definition
                   for assignment, notebooks in definitions.items() for notebook, definition in notebooks.items())


def migrate(gb, assignment: str, notebook: str, target: Definition) -> Migration:
    """Make the gradebook's definition of the notebook equal `target`, in the session (the caller commits)."""
    migration = Migration(assignment, notebook, registered=read_definition(gb, assignment, notebook) is None)
    nb = _notebook(gb, assignment, notebook)
    submissions = list(nb.submissions)
    migration.submissions = len(submissions)
    current = cells_of(nb)
    old_points = {name: cell.max_score for (kind, name), cell in current.items() if kind == "grade"}
    for key in sorted(set(current) - set(target.cells)):
        _remove(gb, key, current[key], migration)
    for key, fields in target.cells.items():
        if key in current:
            for field, value in fields.items():
                setattr(current[key], field, value)
        else:
            _add(gb, nb, key, fields, submissions)
    nb.kernelspec = target.kernelspec
    new_points = target.points()
    migration.added = {c: p for c, p in new_points.items() if c not in old_points}
    migration.removed = {c: p for c, p in old_points.items() if c not in new_points}
    migration.repointed = {c: (old_points[c], p) for c, p in new_points.items()
                           if c in old_points and old_points[c] != p}
    for (kind, name), cell in current.items():
        if kind == "grade" and name in migration.repointed:
            _flag_manual_grades(gb, cell, name, migration)
    gb.db.flush()
    return migration


def _flag_manual_grades(gb, cell, name: str, migration: Migration) -> None:
    """A manual grade on a test whose points changed is the instructor's judgement of the old test: kept as given
    (nbgrader would show it out of the new maximum without a word), named, and flagged for review in formgrader."""
    from nbgrader.api import Grade
    old, new = migration.repointed[name]
    for grade in gb.db.query(Grade).filter(Grade.cell_id == cell.id, Grade.manual_score.isnot(None)):
        grade.needs_manual_grade = True
        migration.manual_to_review.append((grade.notebook.student.id, name, grade.manual_score, old, new))


def _notebook(gb, assignment: str, notebook: str):
    from nbgrader.api import Assignment, MissingEntry, Notebook
    try:
        return gb.find_notebook(notebook, assignment)
    except MissingEntry:
        pass
    # A new assignment has no grades to keep. Not nbgrader's update_or_create_assignment: it commits, and a dry run
    # (or a failed release) must leave the gradebook as it was, nor make a later run miss a first registration.
    owner = gb.db.query(Assignment).filter(Assignment.name == assignment).one_or_none()
    if owner is None:
        owner = Assignment(name=assignment, course_id=gb.course_id)
        gb.db.add(owner)
    nb = Notebook(name=notebook, assignment=owner)
    gb.db.add(nb)
    gb.db.flush()
    return nb


def _remove(gb, key: tuple[str, str], cell, migration: Migration) -> None:
    from nbgrader.api import Comment, Grade
    kind, name = key
    _, _, graded, commented = KINDS[kind]
    if graded:
        for grade in gb.db.query(Grade).filter(Grade.cell_id == cell.id):
            if grade.manual_score is not None:
                migration.lost_manual_grades.append((grade.notebook.student.id, name, grade.manual_score))
            gb.db.delete(grade)
    if commented:
        for comment in gb.db.query(Comment).filter(Comment.cell_id == cell.id):
            gb.db.delete(comment)
    gb.db.delete(cell)


def _add(gb, nb, key: tuple[str, str], fields: dict, submissions) -> None:
    from nbgrader.api import Comment, Grade
    kind, name = key
    _, _, graded, commented = KINDS[kind]
    cell = model_of(kind)(name=name, notebook=nb, **fields)
    gb.db.add(cell)
    gb.db.flush()
    for submitted in submissions:          # as nbgrader's add_submission makes them for a new submission
        if graded:
            gb.db.add(Grade(cell_id=cell.id, notebook=submitted))
        if commented:
            gb.db.add(Comment(cell_id=cell.id, notebook=submitted))


def migrate_all(course: Course, definitions: dict[str, dict], *, commit: bool = True
                ) -> list[Migration]:
    """assignment -> notebook -> Definition, made the gradebook's in one transaction (commit=False: a dry run
    that says what would change and rolls back)."""
    with open_gradebook(course) as gb:
        try:
            migrations = [migrate(gb, assignment, notebook, definition)
                          for assignment, notebooks in sorted(definitions.items())
                          for notebook, definition in sorted(notebooks.items())]
        except Exception:
            gb.db.rollback()
            raise
        gb.db.commit() if commit else gb.db.rollback()
    return migrations
