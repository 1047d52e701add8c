"""What storing a result writes is built once from what grading already holds: the dashboard's flags (untouched,
byte-identical) come from the stored results, not from reading every submission again; each result record is read
once to decide and once for the class files; the autograded notebook is built over the shared parse of the executed
notebook without copying it or changing it (valid as nbformat reads it), and written compact: nbformat reads back
what its own writer would have stored, transient fields left out."""
import collections
import copy
import json
import os

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course, solved_notebook
from nbformat.v4 import new_output

from posenc_autograder.course import RELEASE_DIRECTORY, Course
from posenc_autograder.grading import pipeline
from posenc_autograder.orchestration import grade
from posenc_autograder.records import nbgrader_files, results_store
from posenc_autograder.reports import dashboard
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=20, notebook_seconds=60)


def submit(course, student, nb):
    folder = course.submitted / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """ann and ben hand in the same file, cat the released template."""
    course = Course(make_course(tmp_path_factory.mktemp("stored")))
    submit(course, "ann", solved_notebook())
    submit(course, "ben", solved_notebook())
    submit(course, "cat", nbformat.read(course.path(RELEASE_DIRECTORY) / ASSIGNMENT / f"{NOTEBOOK}.ipynb", 4))
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    return course


def flags_on_the_page(course) -> dict[str, str]:
    attention = dashboard.path(course).read_text().split(">Students who need attention<")[1].split(">Every student<")[0]
    return {row.split("</a>")[0].rsplit(">", 1)[1]: row for row in attention.split("<tr>")[2:] if "<a " in row}


def test_the_dashboard_flags_files_from_the_stored_results_without_reading_them(graded, monkeypatch):
    from posenc_autograder.orchestration.class_files import rebuild_class_files

    def unread(*args, **kwargs):
        raise AssertionError("the dashboard read a submission again")
    monkeypatch.setattr(nbformat, "read", unread)
    monkeypatch.setattr(nbformat, "reads", unread)
    rebuild_class_files(graded)
    flags = flags_on_the_page(graded)
    assert "untouched" in flags["cat"] and "byte-identical" not in flags["cat"]
    assert "byte-identical to ben" in flags["ann"] and "byte-identical to ann" in flags["ben"]
    assert "untouched" not in flags["ann"] + flags["ben"]


def test_untouched_is_found_while_grading_and_kept_with_the_result(graded):
    """The judge says it (the answer cells that ran are the template's) and the stored result keeps it; the portal's
    stored results carry it the same way. A record without it (an older grader's) is flagged from nothing else."""
    stored = {r.student: r for r in results_store.stored_results(graded)}
    assert (stored["cat"].untouched, stored["ann"].untouched, stored["ben"].untouched) == (True, False, False)
    record = results_store.path(graded, "cat", ASSIGNMENT, NOTEBOOK)
    kept = record.read_text()
    data = json.loads(kept)
    del data["result"]["untouched"]
    record.write_text(json.dumps(data))
    try:
        page = dashboard.render(graded, results_store.stored_results(graded),
                                files=results_store.class_results(graded).files)
        assert "untouched: the answers are the released template" not in page
    finally:
        record.write_text(kept)


def test_each_result_record_is_read_once_a_run(graded, monkeypatch):
    edited = solved_notebook()
    edited.metadata["edited"] = True                # ben saved his notebook again: a new file, graded again
    submit(graded, "ben", edited)
    reads = collections.Counter()
    real = results_store.load

    def counted(file):
        reads[file.parent.parent.name] += 1
        return real(file)
    monkeypatch.setattr(results_store, "load", counted)
    results = grade.grade_all(graded, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert sorted(r.student for r in results) == ["ann", "ben", "cat"]
    # Read at the round's start: ann's and cat's stand (unchanged), ben's is what his regrade is compared with; the
    # class files are made from the run's results and digests (the old code read each again for them, and ben's twice)
    assert reads == {"ann": 1, "cat": 1, "ben": 1}


def test_the_autograded_notebook_is_built_over_the_shared_parse_without_copying_or_changing_it(graded, monkeypatch):
    release = pipeline.released(graded, ASSIGNMENT, NOTEBOOK)       # shared by prepare, the judge, the evidence
    result = results_store.stored_results(graded)[0]
    executed_nb = solved_notebook()
    answer = next(c for c in executed_nb.cells if c.cell_type == "code" and not nbgrader_files.grade_id(c))
    answer.outputs = [new_output("stream", name="stderr", text="careful\n"),
                      new_output("error", ename="ValueError", evalue="no", traceback=["tb"]),
                      new_output("execute_result", data={"text/plain": "42"}, execution_count=1),
                      new_output("display_data", data={"text/html": "<b>x</b>"})]
    executed_text = nbformat.writes(executed_nb)
    parsed = pipeline.executed(executed_text)              # the judge's readers share this parse
    before = [json.dumps(shared, sort_keys=True) for shared in (parsed, release)]
    with monkeypatch.context() as patch:
        patch.setattr(copy, "deepcopy", lambda *a, **k: pytest.fail("the notebook was deep-copied"))
        patch.setattr(nbformat.v4.nbbase, "validate", lambda *a, **k: pytest.fail("an output validated alone"))
        built = nbgrader_files.autograded_notebook(executed_text, release, result)
        missing = nbgrader_files.autograded_notebook(None, release, result)      # no file: the release carries it
    assert [json.dumps(shared, sort_keys=True) for shared in (parsed, release)] == before
    assert len(missing.cells) == len(release.cells)
    kept = next(c for c in built.cells if c.cell_type == "code" and c.source == answer.source).outputs
    assert kept == [new_output("stream", name="stderr", text="careful\n"),         # as nbformat's own would be
                    new_output("error", ename="ValueError", evalue="no", traceback=[]),
                    new_output("stream", name="stdout", text="42")]
    hidden = [t for t in result.tests if t.hidden]
    shown = {nbgrader_files.grade_id(c): c for c in built.cells}
    assert hidden and all(shown[t.cell_id].outputs[0].text == nbgrader_files.diagnosis_text(t) for t in hidden)
    nbformat.validate(built)


def test_the_autograded_notebook_is_written_compact_and_reads_back_as_nbformat_would_store_it(graded, tmp_path):
    """nbformat.write's validation only logs and its indented form is Python's slow encoder: write_notebook leaves
    both out, and what nbformat reads back is what it would read from its own writer's file."""
    release = pipeline.released(graded, ASSIGNMENT, NOTEBOOK)
    result = results_store.stored_results(graded)[0]
    built = nbgrader_files.autograded_notebook(nbformat.writes(solved_notebook()), release, result)
    built = nbformat.from_dict({**built, "metadata": {**built.metadata, "orig_nbformat": 3, "signature": "x"}})
    built.cells[0].metadata = {**built.cells[0].metadata, "trusted": True}
    ours, theirs = tmp_path / "ours.ipynb", tmp_path / "theirs.ipynb"
    nbformat.write(built, theirs)
    nbgrader_files.write_notebook(built, ours)
    assert nbformat.read(ours, 4) == nbformat.read(theirs, 4)
    stored = json.loads(ours.read_text())
    assert "trusted" not in stored["cells"][0]["metadata"]
    assert not {"orig_nbformat", "signature"} & set(stored["metadata"])
    assert built.cells[0].metadata["trusted"] and built.metadata["signature"] == "x"      # what it was given is kept
    assert len(ours.read_text().splitlines()) == 1                                      # compact


def test_files_placed_beside_are_written_only_when_they_change(tmp_path):
    """A regrade places the same timestamp and secret again: an unchanged file is left as it is (not rewritten), a
    changed one is written."""
    course = Course(tmp_path)
    when = nbgrader_files.dt.datetime(2026, 3, 1, 9, 30)
    nbgrader_files.place_beside(course, "ann", ASSIGNMENT, when)
    placed = [root / "ann" / ASSIGNMENT / name for root in (course.autograded, course.feedback)
              for name in (nbgrader_files.TIMESTAMP, nbgrader_files.SECRET)]
    for path in placed:
        os.utime(path, ns=(0, 0))
    nbgrader_files.place_beside(course, "ann", ASSIGNMENT, when)
    assert [path.stat().st_mtime_ns for path in placed] == [0, 0, 0, 0]
    later = when + nbgrader_files.dt.timedelta(hours=1)
    nbgrader_files.place_beside(course, "ann", ASSIGNMENT, later)
    assert {placed[0].read_text(), placed[2].read_text()} == {nbgrader_files.format_timestamp(later)}
    assert placed[0].stat().st_mtime_ns > 0 and placed[1].stat().st_mtime_ns == 0
