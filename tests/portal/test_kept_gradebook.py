"""The worker keeps the gradebook open from one store to the next (opening it costs two engines and a check of every
table a store): what another writer puts in it between two stores (the instructor's manual grade and comment in
formgrader) is read by the next store, and a store the gradebook fails costs that store only."""
from fixture_submissions import ASSIGNMENT, NOTEBOOK

from conftest import client_for, notebook_bytes, upload
from posenc_autograder.records import gradebook
from posenc_autograder.reports import feedback
from posenc_autograder.results import NotebookResult


def feedback_page(course, student: str) -> str:
    result = NotebookResult(student, ASSIGNMENT, NOTEBOOK, True, [], [])
    return feedback.path(course.feedback, result).read_text()


def test_a_manual_grade_and_comment_between_two_stores_are_read_by_the_next(app, portal, course):
    client = client_for(app, portal, "ana")
    assert upload(client, notebook_bytes("first")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    with gradebook.open_gradebook(course) as gb:                 # the instructor, in formgrader, meanwhile
        grade = min((g for g in gb.find_submission(ASSIGNMENT, "ana").notebooks[0].grades if g.max_score),
                    key=lambda g: g.name)
        grade.manual_score = grade.max_score
        comment = gb.find_submission(ASSIGNMENT, "ana").notebooks[0].comments[0]
        comment.manual_comment = "See me about the scaling"
        gb.db.commit()
        manual = (grade.name, grade.max_score)
    assert upload(client, notebook_bytes("second")).status_code == 303
    assert portal.worker.run_until_idle() == 1                   # stored again: the kept gradebook reads both
    page = feedback_page(course, "ana")
    assert "See me about the scaling" in page
    with gradebook.open_gradebook(course) as gb:
        kept = {g.name: g.manual_score for g in gb.find_submission(ASSIGNMENT, "ana").notebooks[0].grades}
    assert kept[manual[0]] == manual[1]


def test_a_store_the_gradebook_fails_leaves_it_usable_for_the_next(app, portal, course,
                                                                                      monkeypatch):
    client = client_for(app, portal, "ben")
    real = gradebook.record_scores
    calls = []

    def fails_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the database went away")
        return real(*args, **kwargs)
    monkeypatch.setattr(gradebook, "record_scores", fails_once)
    assert upload(client, notebook_bytes("one")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    assert upload(client, notebook_bytes("two")).status_code == 303
    assert portal.worker.run_until_idle() == 1
    with gradebook.open_gradebook(course) as gb:            # the second store went through the kept gradebook
        assert len(gb.find_submission(ASSIGNMENT, "ben").notebooks[0].grades) > 0
    assert len(calls) >= 3
