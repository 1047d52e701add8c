"""Recording scores writes the rows nbgrader's own API would (formgrader and nbgrader's tools read them), in one
commit of a few statements, and nothing of a notebook whose recording fails. (A run stopped midway:
test_stopped_run.py.)"""
import datetime as dt
import shutil
import sqlite3

import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course
from sqlalchemy import event, text

from posenc_autograder.course import GRADEBOOK, Course
from posenc_autograder.records import gradebook

WHEN = dt.datetime(2026, 11, 20, 10, 0, 0, 123456)
# Canonical names for the rows a submission adds (their ids are fresh uuids in each gradebook).
NEW_IDS = """
SELECT sa.id, 'submission ' || sa.student_id FROM submitted_assignment sa
UNION ALL SELECT sn.id, 'notebook ' || sa.student_id || '/' || n.name FROM submitted_notebook sn
  JOIN submitted_assignment sa ON sn.assignment_id = sa.id JOIN notebook n ON sn.notebook_id = n.id
UNION ALL SELECT g.id, 'grade ' || sa.student_id || '/' || c.name FROM grade g JOIN base_cell c ON g.cell_id = c.id
  JOIN submitted_notebook sn ON g.notebook_id = sn.id JOIN submitted_assignment sa ON sn.assignment_id = sa.id
UNION ALL SELECT m.id, 'comment ' || sa.student_id || '/' || c.name FROM comment m JOIN base_cell c ON m.cell_id = c.id
  JOIN submitted_notebook sn ON m.notebook_id = sn.id JOIN submitted_assignment sa ON sn.assignment_id = sa.id
"""


def dump(database) -> dict[str, list[tuple]]:
    """Every row of every table, the fresh ids replaced by what they identify, sorted."""
    with sqlite3.connect(database) as db:
        names = dict(db.execute(NEW_IDS).fetchall())
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: sorted((tuple(names.get(v, v) for v in row) for row in db.execute(f'SELECT * FROM "{t}"')),
                          key=repr) for t in tables}


@pytest.fixture
def two_courses(tmp_path):
    """Two copies of one registered course."""
    first = Course(make_course(tmp_path / "ours"))
    second = Course(tmp_path / "nbgraders")
    shutil.copytree(first.root, second.root)
    return first, second


def graded_cells():
    return gradebook.graded_cells(Course().source_notebook(ASSIGNMENT, NOTEBOOK))


def scores_for(cells, seed: int) -> dict[str, float]:
    return {cell: round(points * ((i + seed) % 3) / 2, 2) for i, (cell, points) in enumerate(sorted(cells.items()))}


def record_with_nbgraders_api(gb, student, scores, timestamp):
    """What nbgrader's own autograde does: student, submission, then each grade's auto score, through its ORM."""
    gb.update_or_create_student(student)
    try:
        submission = gb.find_submission(ASSIGNMENT, student)
    except gradebook.MissingEntry:
        submission = gb.add_submission(ASSIGNMENT, student)
    submission.timestamp = timestamp
    for cell, score in scores.items():
        grade = gb.find_grade(cell, NOTEBOOK, ASSIGNMENT, student)
        grade.auto_score, grade.needs_manual_grade = score, False
    gb.db.commit()


def test_the_gradebook_holds_the_rows_nbgraders_api_writes(two_courses):
    ours, theirs = two_courses
    cells = graded_cells()
    runs = [("ann", scores_for(cells, 0), WHEN), ("bob", scores_for(cells, 1), None),
            ("ann", scores_for(cells, 2), WHEN + dt.timedelta(days=1))]          # a resubmission, regraded
    with gradebook.open_gradebook(ours) as gb:
        gradebook.add_submissions(gb, ASSIGNMENT, ["bob", "cy"])      # as a run makes its new students' rows
        for student, scores, when in runs:                             # ann's are made on the way
            gradebook.record_scores(gb, student, ASSIGNMENT, NOTEBOOK, scores, when)
    with gradebook.open_gradebook(theirs) as gb:
        for student, scores, when in runs:
            record_with_nbgraders_api(gb, student, scores, when)
        gb.update_or_create_student("cy")                              # cy's run stopped before her scores
        gb.add_submission(ASSIGNMENT, "cy")
    mine, nbgraders = dump(ours.path("autograder/gradebook.db")), dump(theirs.path("autograder/gradebook.db"))
    assert mine["grade"] and mine["comment"] and len(mine["submitted_assignment"]) == 3
    assert mine == nbgraders
    with gradebook.open_gradebook(ours) as gb:             # and nbgrader reads it back as it wrote it
        assert gb.find_submission(ASSIGNMENT, "ann").timestamp == WHEN + dt.timedelta(days=1)
        assert gb.find_submission(ASSIGNMENT, "ann").score == pytest.approx(sum(runs[2][1].values()))


def test_a_notebook_is_recorded_in_one_commit_of_a_few_statements(two_courses):
    course, _ = two_courses
    cells = graded_cells()
    with gradebook.open_gradebook(course) as gb:
        seen = {"statements": 0, "commits": 0}
        event.listen(gb.engine, "before_cursor_execute", lambda *a: seen.__setitem__("statements",
                                                                                      seen["statements"] + 1))
        event.listen(gb.engine, "commit", lambda *a: seen.__setitem__("commits", seen["commits"] + 1))
        for student in ("ann", "ann"):                     # a new student, then the same one regraded
            seen.update(statements=0, commits=0)
            gradebook.record_scores(gb, student, ASSIGNMENT, NOTEBOOK, scores_for(cells, 1), WHEN)
            assert seen["commits"] == 1
            assert seen["statements"] <= 16, seen          # nbgrader's ORM calls: over 40 and three commits


def graded_by_hand(gb, cells, **grade: object) -> str:
    """ann's notebook scored automatically, then one cell's grade changed in formgrader; that cell's name."""
    hand_graded = sorted(cells)[0]
    gradebook.record_scores(gb, "ann", ASSIGNMENT, NOTEBOOK, scores_for(cells, 0), WHEN)
    row = gb.find_grade(hand_graded, NOTEBOOK, ASSIGNMENT, "ann")
    for field, value in grade.items():
        setattr(row, field, value)
    gb.db.commit()
    return hand_graded


def test_a_notebooks_automatic_scores_are_written_by_one_statement_not_one_per_grade(two_courses):
    """psycopg2 (PostgreSQL) runs a statement given many rows once per row, a round trip each: the scores of every
    cell go in one statement; manual grades and their review flags are kept as before."""
    course, _ = two_courses
    cells = graded_cells()
    with gradebook.open_gradebook(course) as gb:
        hand_graded = graded_by_hand(gb, cells, manual_score=0.5, needs_manual_grade=True)   # flagged for review
        updates = []
        event.listen(gb.engine, "before_cursor_execute", lambda _c, _k, statement, rows, _x, many: updates.append(
            (many, len(rows) if many else 1)) if statement.startswith("UPDATE grade") else None)
        returned = gradebook.record_scores(gb, "ann", ASSIGNMENT, NOTEBOOK, scores_for(cells, 1), WHEN)
        assert updates == [(False, 1)]
        flags = {g.cell.name: (g.auto_score, g.needs_manual_grade)
                 for g in gb.find_submission_notebook(NOTEBOOK, ASSIGNMENT, "ann").grades}
    assert {cell: score for cell, (score, _) in flags.items()} == scores_for(cells, 1)
    assert {cell for cell, (_, flagged) in flags.items() if flagged} == {hand_graded}
    assert returned[hand_graded] == (0.5, True)


def test_the_scores_returned_are_the_gradebooks_with_manual_grades(two_courses):
    course, _ = two_courses
    cells = graded_cells()
    with gradebook.open_gradebook(course) as gb:
        hand_graded = graded_by_hand(gb, cells, manual_score=0.25, extra_credit=1.0)
        returned = gradebook.record_scores(gb, "ann", ASSIGNMENT, NOTEBOOK, scores_for(cells, 1), WHEN)
        assert returned == gradebook.cell_scores(gb, "ann", ASSIGNMENT, NOTEBOOK)
        assert returned[hand_graded] == (1.25, True)
        assert {cell for cell, (_, by_hand) in returned.items() if not by_hand} == set(cells) - {hand_graded}


def test_a_recording_that_fails_keeps_nothing_of_that_notebook(two_courses):
    course, _ = two_courses
    cells = graded_cells()
    before = dump(course.path("autograder/gradebook.db"))
    with gradebook.open_gradebook(course) as gb:
        with pytest.raises(gradebook.MissingEntry):
            gradebook.record_scores(gb, "ann", ASSIGNMENT, NOTEBOOK, {**scores_for(cells, 0), "no_such_cell": 1.0})
        assert dump(course.path("autograder/gradebook.db")) == before          # no student, no submission
        gradebook.record_scores(gb, "bob", ASSIGNMENT, NOTEBOOK, scores_for(cells, 0), WHEN)   # the session goes on
    with gradebook.open_gradebook(course) as gb:
        assert gradebook.final_scores(gb, "bob", ASSIGNMENT)[0] == pytest.approx(sum(scores_for(cells, 0).values()))
        assert [s.student.id for s in gb.assignment_submissions(ASSIGNMENT)] == ["bob"]



def test_a_notebooks_grades_and_comments_are_found_by_its_cells_not_by_reading_the_class(two_courses):
    """nbgrader's grade and comment tables have no index on the submitted notebook: the statements that read one
    notebook's rows look them up by (cell, submitted notebook), never reading every row of the class (SQLite's own
    choice read them all, once a notebook stored), and find what a plain join finds."""
    course, _ = two_courses
    with gradebook.open_gradebook(course) as gb:
        for student in ("ann", "ben", "cat"):
            gradebook.record_scores(gb, student, ASSIGNMENT, NOTEBOOK, scores_for(graded_cells(), 1), WHEN)
    with sqlite3.connect(course.path(GRADEBOOK)) as db:
        submission = db.execute("SELECT id FROM submitted_assignment WHERE student_id = 'ben'").fetchone()[0]
        given = {"submission": submission, "notebook": NOTEBOOK, "assignment": ASSIGNMENT, "student": "ben"}
        for statement in (gradebook.NOTEBOOK_GRADES, gradebook.COMMENTS, gradebook.NOTEBOOK_SCORES):
            plan = " / ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement.text}", given))
            assert "SCAN grade" not in plan and "SCAN comment" not in plan, plan
        grades = db.execute(gradebook.NOTEBOOK_GRADES.text, given).fetchall()
        joined = db.execute("SELECT c.name, g.id FROM grade g JOIN base_cell c ON g.cell_id = c.id JOIN "
                            "submitted_notebook sn ON g.notebook_id = sn.id WHERE sn.assignment_id = ?",
                            (submission,)).fetchall()
        assert grades and sorted(grades) == sorted(joined)


@pytest.mark.postgres
def test_a_notebooks_comments_are_found_by_its_cells_on_a_postgresql_gradebook_without_statistics(tmp_path,
                                                                                                 postgres_url):
    """PostgreSQL plans a new course's queries without statistics of its tables (none are gathered until autovacuum
    gets to them, a rush's first minutes): the comments of one notebook are still looked up by (cell, submitted
    notebook), no step of the plan reading more rows than the released cells, however large the class; and they are
    that notebook's own."""
    course = Course(make_course(tmp_path, registered=False), postgres_url)
    gradebook.register(course, ASSIGNMENT)
    students = [f"s{i:03d}" for i in range(300)]
    with gradebook.open_gradebook(course) as gb:
        gradebook.add_submissions(gb, ASSIGNMENT, students)
        cells = gb.db.execute(text("SELECT count(*) FROM base_cell")).scalar()
        commented = text("""UPDATE comment SET manual_comment = 'see me' WHERE id = (SELECT min(comment.id) FROM comment
            JOIN submitted_notebook ON comment.notebook_id = submitted_notebook.id
            JOIN submitted_assignment ON submitted_notebook.assignment_id = submitted_assignment.id
            WHERE submitted_assignment.student_id = :student)""")
        gb.db.execute(commented, {"student": "s007"})
        gb.db.commit()
        given = {"assignment": ASSIGNMENT, "student": "s007", "notebook": NOTEBOOK}
        plan = gb.db.execute(text(f"EXPLAIN (ANALYZE, FORMAT JSON) {gradebook.COMMENTS.text}"), given).scalar()
        assert [written for _, written in gradebook.comments(gb, "s007", ASSIGNMENT, NOTEBOOK)] == ["see me"]
        assert gradebook.comments(gb, "s008", ASSIGNMENT, NOTEBOOK) == []
    read = max(rows_read(plan[0]["Plan"]))
    assert cells < len(students) and read <= cells, (read, cells)


def test_a_students_final_scores_are_nbgraders_found_by_the_cells_not_by_reading_the_class(two_courses):
    """The portal reads a student's final scores on every page: each grade is looked up by (cell, submitted
    notebook), never by reading the class's grades (nbgrader's SubmittedAssignment.score reaches them by the
    submitted notebook alone, which no index holds: SQLite made an index of every grade of the class at each read),
    and the scores are nbgrader's, manual grades and extra credit included."""
    course, _ = two_courses
    with gradebook.open_gradebook(course) as gb:
        graded_by_hand(gb, graded_cells(), manual_score=0.25, extra_credit=1.0)
        for seed, student in enumerate(("ben", "cat"), 1):
            gradebook.record_scores(gb, student, ASSIGNMENT, NOTEBOOK, scores_for(graded_cells(), seed), WHEN)
        nbgraders = {(student, ASSIGNMENT): scores for student, scores in
                     gradebook.class_final_scores(gb, ASSIGNMENT).items()}
        read = {student: gradebook.session_final_scores(gb.db, student) for student in ("ann", "ben", "cat", "dan")}
        everyone = gradebook.session_final_scores(gb.db)
        for student in ("ann", "ben"):                            # and a notebook's cells, as the feedback page
            assert gradebook.session_cell_scores(gb.db, student, ASSIGNMENT, NOTEBOOK) == gradebook.class_cell_scores(
                gb, ASSIGNMENT, student)[student, NOTEBOOK]
    assert len(set(nbgraders.values())) == 3
    assert everyone == nbgraders and read["dan"] == {}
    assert {key: value for found in read.values() for key, value in found.items()} == nbgraders
    statement = gradebook.STUDENTS_FINAL_SCORES.params(student="ben").compile(compile_kwargs={"literal_binds": True})
    with sqlite3.connect(course.path(GRADEBOOK)) as db:
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement}")]
    scanned = {step.split()[1] for step in plan if step.startswith("SCAN ")}
    assert not scanned & {"grade", "submitted_notebook"} and not any("grade USING AUTOMATIC" in s for s in plan), plan


def rows_read(node: dict):
    """The rows each step of an EXPLAIN ANALYZE plan (PostgreSQL's JSON) produced, over all its loops."""
    yield node["Actual Rows"] * node["Actual Loops"]
    for child in node.get("Plans", ()):
        yield from rows_read(child)


def test_a_new_students_store_builds_no_statement_and_asks_only_about_that_student(two_courses, monkeypatch):
    """Each store's statements are built once (building them was a third of its CPU, and grows with a notebook's
    cells): a new student's submission and scores are written with nothing built; the submissions read to find who is
    new are the students asked about, not the class's. The rows are nbgrader's as before (the tests above)."""
    course, _ = two_courses
    cells = graded_cells()
    with gradebook.open_gradebook(course) as gb:
        gradebook.record_scores(gb, "ann", ASSIGNMENT, NOTEBOOK, scores_for(cells, 0), WHEN)
        for name in ("select", "update", "insert", "case", "text"):
            monkeypatch.setattr(gradebook, name, lambda *args, name=name, **kwargs: pytest.fail(f"{name} built"))
        asked = []
        event.listen(gb.engine, "before_cursor_execute", lambda _c, _k, statement, rows, _x, _many: asked.append(
            rows) if "FROM submitted_assignment" in statement and "student_id IN" in statement else None)
        returned = gradebook.record_scores(gb, "bob", ASSIGNMENT, NOTEBOOK, scores_for(cells, 1), WHEN)
        assert {cell: score for cell, (score, _) in returned.items()} == scores_for(cells, 1)
        assert len(asked) == 1 and "bob" in str(asked[0]) and "ann" not in str(asked[0])


def test_a_students_final_scores_are_found_by_their_own_submissions_not_by_reading_the_classs(two_courses):
    """A portal page reads its student's final scores: their submissions are looked up by (assignment, student), the
    index nbgrader's table has, never found by reading every submission of the class (SQLite's own choice without
    the statement's help: a page's read grew with the class, 0.3 -> 0.5 ms from 200 to 2,000 students)."""
    course, _ = two_courses
    with gradebook.open_gradebook(course) as gb:
        for seed, student in enumerate(("ben", "cat"), 1):
            gradebook.record_scores(gb, student, ASSIGNMENT, NOTEBOOK, scores_for(graded_cells(), seed), WHEN)
        assert set(gradebook.session_final_scores(gb.db, "ben")) == {("ben", ASSIGNMENT)}
    statement = gradebook.STUDENTS_FINAL_SCORES.params(student="ben").compile(compile_kwargs={"literal_binds": True})
    with sqlite3.connect(course.path(GRADEBOOK)) as db:
        plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement}")]
    assert "SCAN submitted_assignment" not in plan, plan                  # old code: SCAN submitted_assignment
    assert any(step.startswith("SEARCH submitted_assignment USING") for step in plan), plan


def test_a_new_students_grades_are_made_with_their_scores_and_not_read_back(two_courses):
    """Fails on the old code: a first store made the grades without scores, read them back, wrote the scores in an
    UPDATE and read them again (four statements more; the UPDATE of every grade and the reads were most of a portal
    store's database time). The rows are nbgrader's as before
    (test_the_gradebook_holds_the_rows_nbgraders_api_writes)."""
    course, _ = two_courses
    cells = graded_cells()
    with gradebook.open_gradebook(course) as gb:
        ran = []
        event.listen(gb.engine, "before_cursor_execute", lambda _c, _k, statement, *_: ran.append(statement))
        returned = gradebook.record_scores(gb, "bob", ASSIGNMENT, NOTEBOOK, scores_for(cells, 1), WHEN)
        assert returned == {cell: (score, False) for cell, score in scores_for(cells, 1).items()}
        assert not [s for s in ran if s.startswith(("UPDATE grade", "UPDATE submitted_assignment"))]
        assert not [s for s in ran if s.startswith("SELECT") and "grade" in s.split("FROM")[0]]
        assert gb.find_submission(ASSIGNMENT, "bob").timestamp == WHEN
        ran.clear()
        again = gradebook.record_scores(gb, "bob", ASSIGNMENT, NOTEBOOK, scores_for(cells, 2), WHEN)
        assert again == {cell: (score, False) for cell, score in scores_for(cells, 2).items()}
        assert [s for s in ran if s.startswith("UPDATE grade")]              # scored again: written over
