"""The nbgrader gradebook: registering assignments and recording automatic scores.

Only `auto_score` is written, so manual grades entered in formgrader survive every regrade.
"""
from __future__ import annotations

import datetime as dt
import functools
import pathlib
import weakref
from collections.abc import Iterable
from typing import Any

import nbformat
from nbgrader.api import (
    Assignment,
    BaseCell,
    Comment,
    Grade,
    Gradebook,
    MissingEntry,
    Notebook,
    Student,
    SubmittedAssignment,
    SubmittedNotebook,
    new_uuid,
)
from sqlalchemy import bindparam, case, insert, select, text, update
from sqlalchemy.orm import Session, scoped_session, sessionmaker

from posenc_autograder.authoring import cell_definitions, generation
from posenc_autograder.course import Course, grade_id, nbgrader_meta, open_gradebook


def graded_cells(notebook_path: pathlib.Path) -> dict[str, float]:
    nb = nbformat.read(notebook_path, as_version=4)
    return {cell_id: float(nbgrader_meta(c).get("points", 0)) for c in nb.cells
            if nbgrader_meta(c).get("grade") and (cell_id := grade_id(c))}


def is_registered(course: Course, assignment: str) -> bool:
    """True when the gradebook knows exactly the graded cells of the assignment, with their current points."""
    with open_gradebook(course) as gb:
        for notebook in course.notebooks(assignment):
            definition = generation.read_definition(gb, assignment, notebook)
            if definition is None or definition.points() != graded_cells(course.source_notebook(assignment, notebook)):
                return False
    return True


def register(course: Course, assignment: str) -> list[cell_definitions.Migration]:
    """Record the assignment's cells as solutions/ defines them now: the definition nbgrader generates (kept by
    digest, authoring/generation.py) is migrated into the course's gradebook in place (submissions and manual
    grades kept)."""
    if is_registered(course, assignment):
        return []
    definitions = generation.generated(course, assignment).definitions
    return cell_definitions.migrate_all(course, {assignment: definitions})


def through_engine(gb: Gradebook, engine: Any) -> None:
    """On PostgreSQL, the gradebook's statements through `engine` (the portal's: models.engine_for in
    portal/models.py) in place of nbgrader's own: its plain reads before a store's first write then run outside the
    transaction as its connection's prepared statements (portal/prepared.py), where nbgrader's engine sent each as
    text inside the transaction, parsed and planned again at every store (~1 ms of the server's CPU a store). SQLite
    plans nothing ahead: its gradebook stays on nbgrader's engine."""
    if engine.dialect.name == "postgresql" and gb.engine.dialect.name == "postgresql":
        gb.db.remove()
        gb.db = scoped_session(sessionmaker(autoflush=True, bind=engine, future=True))    # nbgrader's own settings


def record_scores(gb: Gradebook, student: str, assignment: str, notebook: str, scores: dict[str, float],
                  timestamp: dt.datetime | None = None, commit: bool = True) -> dict[str, tuple[float, bool]]:
    """Automatic scores, and the submission time formgrader shows (it must equal timestamp.txt's), committed
    together (commit=False: left in the session's transaction, which a failure here rolls back whole); returns the
    notebook's cell_scores() as the gradebook now holds them (manual grades included).

    A handful of SQL statements and one commit: nbgrader's ORM calls (find_submission, add_submission, a
    commit each) cost some 20 ms of CPU a new student. A first submission gets exactly the rows nbgrader's
    add_submission gives it (tests/records/test_gradebook_rows.py compares them)."""
    db = gb.db
    try:
        submission = db.execute(SUBMISSION_ID, {"assignment": assignment, "student": student}).scalar()
        if submission is None:
            found = _first_scores(db, assignment, student, notebook, scores, timestamp)
        else:
            found = _scores_again(db, submission, notebook, scores, timestamp)
        if commit:
            db.commit()
    except BaseException:
        db.rollback()       # the session stays usable for the next notebook; nothing of this one is kept
        raise
    return found


def _first_scores(db: Session, assignment: str, student: str, notebook: str, scores: dict[str, float],
                  timestamp: dt.datetime | None) -> dict[str, tuple[float, bool]]:
    """record_scores for a student without a submission: the submission made with its time, and its grades with their
    automatic scores (the rows a submission made, then scored, holds), with nothing to read back: a new grade has no
    manual score. Four statements fewer than making it and then scoring it."""
    _, layout = _make_submissions(db, assignment, [student], scored=(notebook, scores), timestamp=timestamp)
    return {name: (float(scores.get(name, 0.0)), False) for _, _, kind, within, name in layout
            if within == notebook and kind in GRADED_KINDS}


def _scores_again(db: Session, submission: str, notebook: str, scores: dict[str, float],
                  timestamp: dt.datetime | None) -> dict[str, tuple[float, bool]]:
    """record_scores for a submission already there: its time and automatic scores written, its cell scores read back
    (manual grades included)."""
    db.execute(SET_TIMESTAMP, {"submission": submission, "when": timestamp})
    grades = _notebook_grades(db, submission, notebook)
    missing = set(scores) - set(grades)
    if missing:         # tests added by a re-release since this submission was first recorded
        _add_grades(db, submission, notebook, missing)
        grades = _notebook_grades(db, submission, notebook)
    db.execute(*set_auto_scores({grades[cell_id]: score for cell_id, score in scores.items()}))
    return {name: (float(score), manual is not None)
            for name, score, manual in db.execute(CELL_SCORES, {"grades": list(grades.values())})}


def add_submissions(gb: Gradebook, assignment: str, students: Iterable[str]) -> None:
    """The submissions of `students` the gradebook lacks, made in one commit (record_scores then finds them):
    a run's new students cost a few statements together instead of a dozen each. A submission made here and
    not scored yet (the run stopped) holds no automatic score, as nbgrader's autograde leaves one it is
    killed in; its student has no stored result, so the next run grades it."""
    db = gb.db
    try:
        _add_submissions(db, assignment, students)
        db.commit()
    except BaseException:
        db.rollback()
        raise


def _add_submissions(db: Session, assignment: str, students: Iterable[str]) -> dict[str, str]:
    """_make_submissions' submissions."""
    return _make_submissions(db, assignment, students)[0]


def _make_submissions(db: Session, assignment: str, students: Iterable[str],
                      scored: tuple[str, dict[str, float]] | None = None,
                      timestamp: dt.datetime | None = None) -> tuple[dict[str, str], list[Any]]:
    """nbgrader's add_submission (and update_or_create_student) without their ORM round trips or commits: for
    each student without one, the submission, a submitted notebook per notebook of the assignment, a grade per
    grade or task cell and a comment per solution or task cell, with nbgrader's own column defaults.
    `scored`: (notebook, cell -> automatic score) written into that notebook's new grades as record_scores would
    write them, and `timestamp` the submissions' time (MissingEntry for a scored cell the notebook lacks). Returns
    (student -> the new submission's id, the assignment's cells: LAYOUT's rows)."""
    assignment_id = db.execute(ASSIGNMENT_ID, {"assignment": assignment}).scalar()
    if assignment_id is None:
        raise MissingEntry(f"no such assignment: {assignment}")
    asked = sorted(set(students))
    have = set(db.execute(SUBMITTED_AMONG, {"assignment_id": assignment_id, "students": asked}).scalars())
    new = [student for student in asked if student not in have]
    if not new:
        return {}, []
    layout = list(db.execute(LAYOUT, {"assignment_id": assignment_id}).all())
    scored_notebook, scores = scored if scored is not None else (None, {})
    unknown = set(scores) - {cell for _, _, kind, nb, cell in layout if nb == scored_notebook and kind in GRADED_KINDS}
    if unknown:
        raise MissingEntry(f"{scored_notebook}: no grade cell {sorted(unknown)}")
    known = set(db.execute(STUDENTS_AMONG, {"students": new}).scalars())
    if set(new) - known:
        db.execute(INSERT_STUDENT, [{"id": student} for student in new if student not in known])
    submissions = {student: new_uuid() for student in new}
    timed = {"timestamp": timestamp} if scored is not None else {}
    db.execute(INSERT_SUBMISSION, [{"id": submission, "assignment_id": assignment_id, "student_id": student, **timed}
                                   for student, submission in submissions.items()])
    notebooks, grades, comments = [], [], []
    for submission in submissions.values():
        submitted = {notebook_id: new_uuid() for notebook_id, _, _, _, _ in layout}
        notebooks += [{"id": submitted_id, "notebook_id": notebook_id, "assignment_id": submission}
                      for notebook_id, submitted_id in submitted.items()]
        grades += [{"cell_id": cell, "notebook_id": submitted[nb], **_scored(scored, name, scores, notebook)}
                   for nb, cell, kind, notebook, name in layout if kind in GRADED_KINDS]
        comments += [{"cell_id": cell, "notebook_id": submitted[nb]} for nb, cell, kind, _, _ in layout
                     if kind in COMMENTED_KINDS]
    for statement, rows in ((INSERT_NOTEBOOK, notebooks), (INSERT_GRADE, grades), (INSERT_COMMENT, comments)):
        if rows:
            db.execute(statement, rows)
    return submissions, layout


def _scored(scored: tuple[str, dict[str, float]] | None, cell: str, scores: dict[str, float],
            notebook: str) -> dict[str, Any]:
    """A new grade's automatic score and review flag as set_auto_scores leaves them (a scored grade needs no review
    without a manual grade; any other keeps nbgrader's default), when the submission is made scored."""
    if scored is None:
        return {}
    if notebook == scored[0] and cell in scores:
        return {"auto_score": scores[cell], "needs_manual_grade": False}
    return {"auto_score": None, "needs_manual_grade": NEEDS_MANUAL_GRADE}


NEEDS_MANUAL_GRADE = Grade.__table__.c.needs_manual_grade.default.arg      # nbgrader's default for a new grade


# _add_submissions' statements, built once as record_scores' are; the students asked about are bound per call, so a
# new student's store reads its own row, not the whole class's submissions.
ASSIGNMENT_ID = select(Assignment.id).where(Assignment.name == bindparam("assignment"))
SUBMITTED_AMONG = select(SubmittedAssignment.student_id).where(
    SubmittedAssignment.assignment_id == bindparam("assignment_id"),
    SubmittedAssignment.student_id.in_(bindparam("students", expanding=True)))
STUDENTS_AMONG = select(Student.id).where(Student.id.in_(bindparam("students", expanding=True)))
LAYOUT = (select(Notebook.id, BaseCell.id, BaseCell.type, Notebook.name, BaseCell.name)
          .outerjoin(BaseCell, BaseCell.notebook_id == Notebook.id)
          .where(Notebook.assignment_id == bindparam("assignment_id")))
INSERT_STUDENT, INSERT_SUBMISSION, INSERT_NOTEBOOK, INSERT_GRADE, INSERT_COMMENT = (
    insert(table.__table__) for table in (Student, SubmittedAssignment, SubmittedNotebook, Grade, Comment))


GRADED_KINDS = ("GradeCell", "TaskCell")            # nbgrader's polymorphic cell types with a Grade row
COMMENTED_KINDS = ("SolutionCell", "TaskCell")      # ... with a Comment row


# record_scores' statements, built once (building them is a third of its CPU); values are bound per call.
SUBMISSION_ID = (select(SubmittedAssignment.id)
                 .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
                 .where(Assignment.name == bindparam("assignment"),
                        SubmittedAssignment.student_id == bindparam("student")))
SET_TIMESTAMP = (update(SubmittedAssignment.__table__).where(SubmittedAssignment.id == bindparam("submission"))
                 .values(timestamp=bindparam("when")))
# One notebook's rows by the cells of its released notebook: nbgrader's grade and comment tables have no index on the
# submitted notebook, only (cell, submitted notebook), and SQLite, left to choose, read every grade of the class for
# each notebook stored (quadratic in the class: 1.7 ms against 0.1 ms a notebook at 300 students). CROSS JOIN keeps
# SQLite's order as written (PostgreSQL plans it freely); names as nbgrader's models define them.
NOTEBOOK_GRADES = text("""SELECT base_cell.name, grade.id FROM submitted_notebook
    JOIN notebook ON submitted_notebook.notebook_id = notebook.id CROSS JOIN base_cell CROSS JOIN grade
    WHERE submitted_notebook.assignment_id = :submission AND notebook.name = :notebook
    AND base_cell.notebook_id = notebook.id AND grade.cell_id = base_cell.id
    AND grade.notebook_id = submitted_notebook.id""")


def set_auto_scores(scores: dict[str, float]) -> tuple[Any, dict[str, Any]]:
    """One statement writing every grade's automatic score (grade id -> score), and its values: the driver of
    PostgreSQL, psycopg2, runs a statement given many rows once per row, each a round trip to the server (a notebook's
    23 cells: 23). A grade flagged for review keeps its flag while it holds a manual grade (make release flags one whose
    test's points changed); the others need none once scored."""
    values: dict[str, Any] = {}
    for index, (grade, score) in enumerate(scores.items()):
        values[f"grade_{index}"], values[f"score_{index}"] = grade, score
    return _auto_scores_statement(len(scores)), values


@functools.lru_cache(maxsize=8)
def _auto_scores_statement(count: int) -> Any:
    """set_auto_scores' statement for `count` grades, built once (building its CASE was a fifth of a store's gradebook
    CPU); the grades and scores are bound per call."""
    grades = [bindparam(f"grade_{index}", type_=Grade.id.type) for index in range(count)]
    scores = [bindparam(f"score_{index}", type_=Grade.auto_score.type) for index in range(count)]
    return (update(Grade.__table__).where(Grade.id.in_(grades))
            .values(auto_score=case(dict(zip(grades, scores, strict=True)), value=Grade.id),
                    needs_manual_grade=case((Grade.manual_score.is_(None), False), else_=Grade.needs_manual_grade)))


CELL_SCORES = (select(BaseCell.name, Grade.score, Grade.manual_score).join(BaseCell, Grade.cell_id == BaseCell.id)
               .where(Grade.id.in_(bindparam("grades", expanding=True))))


def _notebook_grades(db: Session, submission: str, notebook: str) -> dict[str, str]:
    """cell name -> grade id, for one notebook of a submission."""
    return dict(db.execute(NOTEBOOK_GRADES, {"submission": submission, "notebook": notebook}).all())


def _add_grades(db: Session, submission: str, notebook: str, cells: set[str]) -> None:
    """Grade rows for cells a re-release added to a notebook already submitted."""
    submitted, notebook_id = db.execute(select(SubmittedNotebook.id, Notebook.id)
                                        .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
                                        .where(SubmittedNotebook.assignment_id == submission,
                                               Notebook.name == notebook)).one()
    found = db.execute(select(BaseCell.id, BaseCell.name).where(BaseCell.notebook_id == notebook_id,
                                                                BaseCell.name.in_(cells),
                                                                BaseCell.type.in_(GRADED_KINDS))).all()
    if len(found) != len(cells):
        raise MissingEntry(f"{notebook}: no grade cell {sorted(cells - {name for _, name in found})}")
    db.execute(insert(Grade.__table__), [{"cell_id": cell, "notebook_id": submitted} for cell, _ in found])


def _per_cell(query: Any, table: Any) -> Any:           # nbgrader's ORM: untyped
    """A query over one of nbgrader's per-cell tables of submissions (Grade, Comment), joined to its cell, notebook,
    assignment and student."""
    return (query.select_from(table).join(BaseCell, table.cell_id == BaseCell.id)
            .join(SubmittedNotebook, table.notebook_id == SubmittedNotebook.id)
            .join(Notebook, SubmittedNotebook.notebook_id == Notebook.id)
            .join(SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .join(Student, SubmittedAssignment.student_id == Student.id))


# As NOTEBOOK_GRADES, by the cells, from the submitted notebook found first (a subquery run once): joined to the
# submission's rows, PostgreSQL's plan on a gradebook it has no statistics of yet (a new course's rush) read every
# submitted notebook of the class for each cell (359 ms a notebook stored at 1,000 students, quadratic in the class).
COMMENTS = text(f"""SELECT base_cell.name, comment.manual_comment FROM submitted_notebook
    CROSS JOIN base_cell CROSS JOIN comment
    WHERE submitted_notebook.id = (SELECT submitted_notebook.id FROM submitted_notebook
        JOIN notebook ON submitted_notebook.notebook_id = notebook.id
        WHERE submitted_notebook.assignment_id = ({SUBMISSION_ID}) AND notebook.name = :notebook)
    AND base_cell.notebook_id = submitted_notebook.notebook_id AND comment.cell_id = base_cell.id
    AND comment.notebook_id = submitted_notebook.id ORDER BY comment.id""")


def _grade_rows(gb: Gradebook, assignment: str, student: str | None = None, notebook: str | None = None
                ) -> list[Any]:
    """(student, notebook, cell, grade_id, score, manual) rows of an assignment's grades, one query; scores
    by nbgrader's own rule (Grade.score: manual over automatic, plus extra credit)."""
    return _grade_rows_on(gb.db, assignment, student, notebook)


def _grade_rows_on(db: Session, assignment: str, student: str | None = None, notebook: str | None = None
                   ) -> list[Any]:
    """_grade_rows() through any SQLAlchemy session on the gradebook's database."""
    query = _per_cell(db.query(Student.id.label("student"), Notebook.name.label("notebook"),
                                  BaseCell.name.label("cell"), Grade.id.label("grade_id"), Grade.score.label("score"),
                                  Grade.manual_score.label("manual")), Grade).filter(Assignment.name == assignment)
    if student is not None:
        query = query.filter(Student.id == student)
    if notebook is not None:
        query = query.filter(Notebook.name == notebook)
    return list(query.all())


def final_scores(gb: Gradebook, student: str, assignment: str) -> tuple[float, float]:
    """(score, max score) as nbgrader computes them: manual scores override automatic ones."""
    found = class_final_scores(gb, assignment, student)
    if student not in found:
        raise MissingEntry(f"no submission of {assignment} by {student}")
    return found[student]


def class_final_scores(gb: Gradebook, assignment: str, student: str | None = None) -> dict[str, tuple[float, float]]:
    """final_scores() of every student of an assignment (or one), in one query."""
    query = (gb.db.query(Student.id, SubmittedAssignment.score, SubmittedAssignment.max_score)
             .select_from(SubmittedAssignment).join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
             .join(Student, SubmittedAssignment.student_id == Student.id)
             .filter(Assignment.name == assignment))
    rows = (query if student is None else query.filter(Student.id == student)).all()
    return {student: (float(score), float(max_score)) for student, score, max_score in rows}


def cell_scores(gb: Gradebook, student: str, assignment: str, notebook: str) -> dict[str, tuple[float, bool]]:
    """cell id -> (score, set by hand in formgrader?) as the gradebook holds them now."""
    return class_cell_scores(gb, assignment, student).get((student, notebook), {})


def session_cell_scores(session: Session, student: str, assignment: str, notebook: str
                        ) -> dict[str, tuple[float, bool]]:
    """cell_scores() through any SQLAlchemy session on the gradebook's database (the portal's)."""
    rows = session.execute(NOTEBOOK_SCORES, {"assignment": assignment, "student": student, "notebook": notebook})
    return {cell: (float(score), manual is not None) for cell, score, manual in rows}


def class_cell_scores(gb: Gradebook, assignment: str, student: str | None = None
                      ) -> dict[tuple[str, str], dict[str, tuple[float, bool]]]:
    """(student, notebook) -> cell_scores(), for a whole assignment (or one student) in one query."""
    found: dict[tuple[str, str], dict[str, tuple[float, bool]]] = {}
    for row in _grade_rows(gb, assignment, student):
        found.setdefault((row.student, row.notebook), {})[row.cell] = (float(row.score), row.manual is not None)
    return found


_HOLDING_GRADEBOOK: weakref.WeakSet[Any] = weakref.WeakSet()       # engines whose database holds the gradebook's tables


def session_final_scores(session: Session, student: str | None = None) -> dict[tuple[str, str], tuple[float, float]]:
    """(student, assignment) -> (score, max score) as nbgrader computes them (manual over automatic), read through
    any SQLAlchemy session on the gradebook's database (the portal's), without opening a Gradebook; {} before the
    gradebook exists."""
    from sqlalchemy import inspect
    bind = session.get_bind()
    if bind not in _HOLDING_GRADEBOOK:      # asked once per database: the tables, once made, stay (a portal's pages)
        if not inspect(bind).has_table(SubmittedAssignment.__tablename__):
            return {}
        _HOLDING_GRADEBOOK.add(bind)
    rows = session.execute(FINAL_SCORES) if student is None else \
        session.execute(STUDENTS_FINAL_SCORES, {"student": student})
    return {(who, name): (float(score or 0), float(maximum or 0)) for who, name, score, maximum in rows}


# session_final_scores' statements, built once (a portal page reads a student's grades on each request). A
# submission's score is the sum of its grades by nbgrader's rule (Grade.score), each grade reached as NOTEBOOK_GRADES
# reaches them, by its cell and submitted notebook: nbgrader's SubmittedAssignment.score reaches them by the submitted
# notebook alone, which no index holds, so SQLite made an index of every grade of the class at each read (7 ms a
# student's page at 200 graded students, 60 ms at 2,000). The max score is nbgrader's (the assignment's cells alone).
_GRADE_SCORE = Grade.score.expression.compile(compile_kwargs={"literal_binds": True})     # nbgrader's, as SQL
SUBMISSION_SCORE = text(f"""SELECT coalesce(sum({_GRADE_SCORE}), 0.0)
    FROM notebook CROSS JOIN submitted_notebook CROSS JOIN base_cell CROSS JOIN grade
    WHERE notebook.assignment_id = assignment.id AND submitted_notebook.notebook_id = notebook.id
    AND submitted_notebook.assignment_id = submitted_assignment.id AND base_cell.notebook_id = notebook.id
    AND grade.cell_id = base_cell.id AND grade.notebook_id = submitted_notebook.id""").columns(
    score=Grade.auto_score.type).scalar_subquery()
FINAL_SCORES = (select(SubmittedAssignment.student_id, Assignment.name, SUBMISSION_SCORE, SubmittedAssignment.max_score)
                .select_from(Assignment).join(SubmittedAssignment, SubmittedAssignment.assignment_id == Assignment.id))
# One student's: their submissions reached through the (assignment, student) index, one assignment at a time (the
# IN adds no condition the join does not hold); without it SQLite read every submission of the class for the student's
# own (0.49 ms a page at 2,000 students, 0.28 ms through the index).
STUDENTS_FINAL_SCORES = FINAL_SCORES.where(SubmittedAssignment.student_id == bindparam("student"),
                                           SubmittedAssignment.assignment_id.in_(select(Assignment.id)))

# session_cell_scores' statement: one notebook's grades by their cells, as COMMENTS finds its comments (nbgrader's join
# read every grade of the class for each feedback page: 20 ms at 2,000 graded students).
NOTEBOOK_SCORES = text(f"""SELECT base_cell.name, {_GRADE_SCORE}, grade.manual_score FROM submitted_notebook
    CROSS JOIN base_cell CROSS JOIN grade
    WHERE submitted_notebook.id = (SELECT submitted_notebook.id FROM submitted_notebook
        JOIN notebook ON submitted_notebook.notebook_id = notebook.id
        WHERE submitted_notebook.assignment_id = ({SUBMISSION_ID}) AND notebook.name = :notebook)
    AND base_cell.notebook_id = submitted_notebook.notebook_id AND grade.cell_id = base_cell.id
    AND grade.notebook_id = submitted_notebook.id""")


def comments(gb: Gradebook, student: str, assignment: str, notebook: str) -> list[tuple[str, str]]:
    """(cell name, comment) of every comment an instructor wrote in formgrader on this notebook, in cell order."""
    return session_comments(gb.db, student, assignment, notebook)


def session_comments(session: Session, student: str, assignment: str, notebook: str) -> list[tuple[str, str]]:
    """comments() through any SQLAlchemy session on the gradebook's database (the portal's)."""
    rows = session.execute(COMMENTS, {"assignment": assignment, "student": student, "notebook": notebook})
    return [(cell, text.strip()) for cell, text in rows if text and text.strip()]


# COMMENTS for every notebook at once: the few comments written, rather than a query per notebook.
WRITTEN_COMMENTS = text("""SELECT submitted_assignment.student_id, assignment.name, notebook.name, base_cell.name,
    comment.manual_comment FROM comment
    JOIN submitted_notebook ON comment.notebook_id = submitted_notebook.id
    JOIN submitted_assignment ON submitted_notebook.assignment_id = submitted_assignment.id
    JOIN assignment ON submitted_assignment.assignment_id = assignment.id
    JOIN notebook ON submitted_notebook.notebook_id = notebook.id
    JOIN base_cell ON comment.cell_id = base_cell.id
    WHERE comment.manual_comment IS NOT NULL ORDER BY comment.id""")


def class_comments(gb: Gradebook) -> dict[tuple[str, str, str], list[tuple[str, str]]]:
    """(student, assignment, notebook) -> comments() of that notebook, for every notebook that has any."""
    found: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    for student, assignment, notebook, cell, written in gb.db.execute(WRITTEN_COMMENTS):
        if written and written.strip():
            found.setdefault((student, assignment, notebook), []).append((cell, written.strip()))
    return found


def class_scores(gb: Gradebook, assignments: Iterable[str]
                 ) -> tuple[dict[tuple[str, str], tuple[float, float]], dict[tuple[str, str, str], Any]]:
    """For the class files: (student, assignment) -> final scores, (student, assignment, notebook) -> cell scores."""
    finals, cells = {}, {}
    for assignment in sorted(assignments):
        finals.update({(student, assignment): v for student, v in class_final_scores(gb, assignment).items()})
        cells.update({(student, assignment, notebook): v
                      for (student, notebook), v in class_cell_scores(gb, assignment).items()})
    return finals, cells

