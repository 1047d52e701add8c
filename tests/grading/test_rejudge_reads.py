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
