"""The integrity evidence is kept after the student's result, when no upload waits (portal.worker.Deferred): the
result is recorded as graded without it, nothing reads the class's evidence while any is missing, and a process
that dies with evidence not kept loses none of it."""
from fixture_submissions import ASSIGNMENT, NOTEBOOK

from conftest import CountingExecute, client_for, new_portal, notebook_bytes, upload
from posenc_autograder.grading.execute import Execution
from posenc_autograder.integrity import report
from posenc_autograder.portal import uploads, worker
from posenc_autograder.portal.models import Attempt, Status
from posenc_autograder.portal.routes import create_app
from posenc_autograder.records import evidence

WAITING = "not kept the evidence"


def graded_one_of_two(app, portal):
    """Alice's and Bob's uploads queued; the first claimed one graded. (its attempt, the other's id)"""
    for student in ("alice", "bob"):
        assert upload(client_for(app, portal, student), notebook_bytes(student)).status_code == 303
    first = portal.worker._claim()
    portal.worker.grade(first)
    with portal.sessions() as db:
        return db.get(Attempt, first), ({1, 2} - {first}).pop()


def report_waits(course) -> bool:
    return any(WAITING in why for *_, why in report.write(course))


def test_a_result_is_graded_before_its_evidence_which_the_report_waits_for(app, portal):
    attempt, other = graded_one_of_two(app, portal)
    course, student = portal.course, attempt.student_id
    kept = uploads.evidence_path(course, student, ASSIGNMENT, attempt.id)
    counting = evidence.path(course, ASSIGNMENT, NOTEBOOK, student)
    assert attempt.status == Status.GRADED and attempt.promoted          # the student's result, stored
    assert not kept.exists() and not counting.exists()                   # its evidence not computed yet
    assert evidence.pending_markers(course) == [evidence.pending_path(course, attempt.id)]
    assert report_waits(course) and not (course.reports / report.REPORT_NAME).exists()
    portal.worker.grade(portal.worker._claim())                          # a waiting upload goes first
    assert len(evidence.pending_markers(course)) == 2
    assert portal.worker.keep_deferred_evidence() and portal.worker.keep_deferred_evidence()   # then, idle
    assert not portal.worker.keep_deferred_evidence()
    assert f"# {student}" in evidence.read(counting).code and evidence.read(kept).code == evidence.read(counting).code
    assert evidence.pending_markers(course) == [] and not report_waits(course)
    assert other in (1, 2)


def test_evidence_a_dead_worker_did_not_keep_is_kept_by_the_next(app, portal):
    attempt, _ = graded_one_of_two(app, portal)
    course, student = portal.course, attempt.student_id
    marker = evidence.pending_path(course, attempt.id)
    beside = new_portal(course, execute=CountingExecute())
    assert not beside.worker.keep_deferred_evidence() and marker.exists()   # a live worker's marker is its own
    for deferred in portal.worker.backlog:                                  # the first process dies: its locks go
        deferred.marker.close()
    assert marker.exists() and report_waits(course)
    replacement = new_portal(course, execute=(again := CountingExecute()))
    assert replacement.worker.keep_deferred_evidence()                       # the notebook runs again for it
    assert not replacement.worker.keep_deferred_evidence()
    assert [key[0] for key, _ in again.runs] == [student]
    assert f"# {student}" in evidence.read(evidence.path(course, ASSIGNMENT, NOTEBOOK, student)).code
    assert not marker.exists() and not report_waits(course)


def test_answers_past_the_backlogs_bytes_have_their_evidence_kept_at_once(course):
    def large(task):
        return Execution(task.key, {}, [], {}, 0.01, held_bytes=worker.EVIDENCE_BACKLOG_BYTES // 2 + 1)

    portal = new_portal(course, execute=large)
    app = create_app(portal, start_worker=False)
    first = graded_one_of_two(app, portal)[0]
    second = portal.worker._claim()
    portal.worker.grade(second)                     # the two would hold more than the backlog may: kept at once
    assert len(evidence.pending_markers(course)) == 1 and len(portal.worker.backlog) == 1
    with portal.sessions() as db:
        later = db.get(Attempt, second)
    assert later.status == Status.GRADED
    assert uploads.evidence_path(course, later.student_id, ASSIGNMENT, second).exists()
    assert not uploads.evidence_path(course, first.student_id, ASSIGNMENT, first.id).exists()


def test_a_worker_that_stops_keeps_the_evidence_it_holds(app, portal):
    attempt, _ = graded_one_of_two(app, portal)
    assert evidence.pending_markers(portal.course)
    portal.worker.close()
    assert evidence.pending_markers(portal.course) == [] and not report_waits(portal.course)
    assert evidence.read(uploads.evidence_path(portal.course, attempt.student_id, ASSIGNMENT, attempt.id)).code
