"""A regrade's note says truly why the score moved: a changed grader on the same file, or a resubmission."""
from posenc_autograder.grading.regrade import regrade_changes
from posenc_autograder.results import GradedTest, NotebookResult, NoteKind


def result(points):
    return NotebookResult("ann", "positional_encoding", "positional_encoding", True,
                          [GradedTest("hidden_pe_values", "values", True, points, 4.0, [] if points == 4 else ["x"])],
                          [])


def previous(points, digest):
    return {"sha256": digest, "fingerprint": "old grader", "result": result(points).to_json()}


def test_same_file_under_a_changed_grader():
    note = regrade_changes(result(4.0), previous(0.0, "file"), "new grader", "file")
    assert note.kind == NoteKind.REGRADE and "changed grader" in note.text and "same file" in note.text
    assert "resubmitted" not in note.text


def test_a_resubmission_is_named_as_such():
    note = regrade_changes(result(4.0), previous(0.0, "old file"), "new grader", "new file")
    assert note.text.startswith("resubmitted") and "0 → 4" in note.text


def test_nothing_moved_or_same_grader_says_nothing():
    assert regrade_changes(result(4.0), previous(4.0, "file"), "new grader", "file") is None
    assert regrade_changes(result(4.0), {**previous(0.0, "a"), "fingerprint": "g"}, "g", "b") is None
