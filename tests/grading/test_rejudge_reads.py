"""A re-judge from kept records (a hidden test's points changed) reads each notebook's text once: the autograded
notebook of the last run, whose outputs it keeps. The assembled notebook prepare built is read as it is by the run's
digests, the judge's readers and the autograded notebook's writer, never written as text and parsed again."""
import json

import nbformat
from fixture_submissions import NOTEBOOK, course_with_solvers, set_released_points

from posenc_autograder.course import RELEASE_DIRECTORY, SOURCE_DIRECTORY
from posenc_autograder.grading import pipeline
from posenc_autograder.orchestration import grade
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=60)
TEST = "hidden_pe_values"


def test_a_rejudge_parses_only_the_last_autograded_notebook(tmp_path, monkeypatch):
    course = course_with_solvers(tmp_path, "ann", "ben")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    set_released_points(course, TEST, 5)
    pipeline.executed.cache_clear()
    parsed, real_loads, real_reads = [], json.loads, nbformat.v4.reads

    def loads(text, *args, **kwargs):
        if isinstance(text, (str, bytes)) and b'"nbformat_minor"' in (text if isinstance(text, bytes)
                                                                       else text.encode("utf-8", "surrogatepass")):
            parsed.append(text if isinstance(text, str) else text.decode())
        return real_loads(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", loads)
    monkeypatch.setattr(nbformat.v4, "reads", lambda text, **kw: parsed.append("reads") or real_reads(text, **kw))
    autograded = {s: (course.autograded / s / "positional_encoding" / f"{NOTEBOOK}.ipynb").read_text()
                  for s in ("ann", "ben")}
    course_files = {path.read_text() for folder in (RELEASE_DIRECTORY, SOURCE_DIRECTORY)
                    for path in course.path(folder).glob("*/*.ipynb")}
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert [next(t.max_points for t in r.tests if t.cell_id == TEST) for r in results] == [5, 5]
    assert "reads" not in parsed               # no executed notebook's text: the judge reads the one built here
    per_notebook = [text for text in parsed if text not in course_files]      # the release and source: once a run
    assert sorted(per_notebook) == sorted(autograded.values())       # each notebook's last autograded one, once


def test_a_points_regrade_reads_each_record_once_and_hashes_each_submission_once_a_look(tmp_path, monkeypatch):
    """The stored records are read once a run (the class files are made from this run's results and digests, not
    from the records read again), and each submission is hashed once each time make grade looks at submitted/
    (before the round and after it, place_counted), the round taking the first look's digests."""
    import hashlib

    from posenc_autograder.records import results_store

    course = course_with_solvers(tmp_path, "ann", "ben")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    set_released_points(course, TEST, 5)
    pipeline.executed.cache_clear()
    submitted = {path.read_bytes() for path in course.submitted.glob("*/*/*.ipynb")}     # both the same solution
    assert len(list(course.submitted.glob("*/*/*.ipynb"))) == 2
    loaded, hashed = [], []
    real_load, real_sha256 = results_store.load, hashlib.sha256

    def load(file):
        loaded.append(file.parent.parent.name)
        return real_load(file)

    def sha256(data=b"", *args, **kwargs):
        if isinstance(data, bytes) and data in submitted:
            hashed.append(data)
        return real_sha256(data, *args, **kwargs)

    shown, real_class_results = [], results_store.class_results
    monkeypatch.setattr(results_store, "load", load)
    monkeypatch.setattr(hashlib, "sha256", sha256)
    monkeypatch.setattr(results_store, "class_results",
                        lambda *args, **kwargs: shown.append(real_class_results(*args, **kwargs)) or shown[-1])
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert [next(t.max_points for t in r.tests if t.cell_id == TEST) for r in results] == [5, 5]
    assert sorted(loaded) == ["ann", "ben"]
    # Two notebooks, each hashed by place_counted before the round and after it (the old code: twice a look, and again
    # by the round), and not again for the class files: the late policy's time of the attempt in submitted/ takes the
    # round's look (older code hashed it once more, and before that for each of the four places that state it).
    assert len(hashed) == 2 * 2
    monkeypatch.undo()
    on_disk = results_store.class_results(course)       # every record read: what the class files were made from
    assert len(shown) == 1 and shown[0].files == on_disk.files and len(on_disk.files) == 2
    assert [r.to_json() for r in shown[0].results] == [r.to_json() for r in on_disk.results]
    assert {f.sha256 for f in on_disk.files.values()} == {real_sha256(data).hexdigest() for data in submitted}


def test_a_points_regrade_builds_no_students_inputs_and_a_run_builds_them(tmp_path, monkeypatch):
    """A student's own inputs are built and framed only for a notebook that runs: a re-weigh takes each test's inputs
    digest as its kept record holds it, since the code that makes the inputs is the same (the old code built every
    test's inputs for every student again, to digest them)."""
    from posenc_autograder.checks import hidden, variants

    course = course_with_solvers(tmp_path, "ann", "ben")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    set_released_points(course, TEST, 5)
    pipeline.executed.cache_clear()
    students = {variants.student_variant(course, s) for s in ("ann", "ben")}
    built, real = [], hidden.HiddenTest.variant_inputs
    monkeypatch.setattr(hidden.HiddenTest, "variant_inputs",
                        lambda test, variant=None: built.append(variant) or real(test, variant))
    hidden._inputs_frame.cache_clear()
    hidden._decoded_inputs.cache_clear()
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert [next(t.max_points for t in r.tests if t.cell_id == TEST) for r in results] == [5, 5]
    assert not students & set(built)
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True, force=True)
    assert students <= set(built) and [r.score for r in results] == [r.max_score for r in results]


def test_make_grade_says_what_the_class_files_leave_out_from_the_records_it_read_once(tmp_path, monkeypatch):
    """make grade's word on the roster (what the LMS files leave out) is made from the class its class files were made
    from: each stored record read once a run (the old code read every record again after the class files)."""
    from posenc_autograder import cli
    from posenc_autograder.records import results_store

    course = course_with_solvers(tmp_path, "ann", "ben")
    command = ["grade", "--no-sandbox", "--jobs", "1", "--course", str(course.root)]
    assert cli.main(command) == 0
    set_released_points(course, TEST, 5)
    loaded, real_load = [], results_store.load
    monkeypatch.setattr(results_store, "load", lambda file: loaded.append(file.parent.parent.name) or real_load(file))
    assert cli.main(command) == 0
    assert sorted(loaded) == ["ann", "ben"]
    loaded.clear()
    assert cli.main(command) == 0
    assert sorted(loaded) == ["ann", "ann", "ben", "ben"]            # nothing graded: the class files stood, read again


def test_a_rejudge_reads_the_released_test_cells_once_a_run(tmp_path, monkeypatch):
    """prepare, the graded checks and the judge each read the released notebook's test cells, for every notebook:
    worked out once while the released file is unchanged (pipeline.released_tests)."""
    course = course_with_solvers(tmp_path, "ann", "ben")
    grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    set_released_points(course, TEST, 5)
    release, real, read = pipeline.released(course, "positional_encoding", NOTEBOOK), pipeline.test_cells, []
    monkeypatch.setattr(pipeline, "test_cells", lambda nb: read.append(nb is release) or real(nb))
    results = grade.grade_all(course, jobs=1, isolate=False, limits=LIMITS, quiet=True)
    assert [next(t.max_points for t in r.tests if t.cell_id == TEST) for r in results] == [5, 5]
    assert read.count(True) == 1 and len(read) == 1 + len(results)      # the release once, each assembled notebook
