"""Each notebook is parsed once and written once on its way through a run: the released notebook once per run,
the student's once (prepare and the evidence share it), the executed one once (the judge's readers and the
autograded notebook share it), and the autograded notebook written once, compact (records.nbgrader_files.write_notebook:
nbformat's indented writer is never used; the texts passed between stages are compact JSON too)."""
import collections

import nbformat
import pytest
from fixture_submissions import course_with_solvers

from posenc_autograder.grading import pipeline
from posenc_autograder.intake import submissions
from posenc_autograder.orchestration import class_files, grade
from posenc_autograder.records import nbgrader_files
from posenc_autograder.settings import Limits

STUDENTS = ("ann", "ben", "cat")


@pytest.fixture
def course(tmp_path):
    return course_with_solvers(tmp_path / "course", *STUDENTS)


def test_a_run_parses_and_writes_each_notebook_once(course, monkeypatch):
    calls = collections.Counter()

    def counted(name, real):
        def call(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return call

    for name in ("read", "reads", "write", "writes"):
        monkeypatch.setattr(nbformat, name, counted(name, getattr(nbformat, name)))
    monkeypatch.setattr(nbformat.v4, "reads", counted("reads", nbformat.v4.reads))   # our own text, not validated again
    monkeypatch.setattr(pipeline, "read_notebook", counted("submission", submissions.read_notebook))
    monkeypatch.setattr(nbgrader_files, "write_notebook", counted("autograded", nbgrader_files.write_notebook))
    monkeypatch.setattr(class_files, "rebuild_class_files", lambda *a, **k: None)     # the dashboard reads its own
    for cache in (pipeline._parsed_file, pipeline._parsed_submission, pipeline.executed):
        cache.cache_clear()
    results = grade.grade_all(course, jobs=1, isolate=False, limits=Limits(cell_seconds=20, notebook_seconds=60),
                              quiet=True)
    assert [r.student for r in results if r.graded and r.score > 0] == list(STUDENTS)
    n = len(STUDENTS)
    assert calls["submission"] == n                       # prepare; the evidence reads the same parse
    # nbformat.read and .write call reads and writes themselves: those calls are counted once, as files
    assert calls["reads"] - calls["read"] == 2 * n        # the assembled notebook on the sandbox side, the executed one
    assert calls["writes"] == calls["write"] == 0         # the assembled and executed ones travel as plain JSON
    assert calls["autograded"] == n                       # the autograded notebook
    assert calls["read"] <= 2                             # the released notebook; the gradebook's registration check
