"""One hidden test is one HiddenTest object: the notebooks, the test plan and the README agree with the objects."""
import re
import types

import nbformat
import pytest
from notebook_tools import ROOT

from posenc_autograder.authoring import release
from posenc_autograder.authoring.spec_bullets import all_spec_bullets
from posenc_autograder.checks import REGISTRY, HiddenTest, hidden_tests, total_points
from posenc_autograder.checks.hidden import registry
from posenc_autograder.course import Course, grade_id, nbgrader_meta
from posenc_autograder.probes.helpers import call_each

ASSIGNMENTS = sorted({t.assignment for t in REGISTRY.values()})


def test_solution_notebooks_and_plan_are_what_make_release_writes():
    stale = release.stale_files(Course(ROOT))
    assert stale == {}, f"run `make release`: stale {sorted(str(p) for p in stale)}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_released_hidden_cells_carry_each_tests_title_and_points(assignment):
    nb = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    cells = {grade_id(c): c for c in nb.cells if (grade_id(c) or "").startswith("hidden_")}
    assert set(cells) == {t.id for t in hidden_tests(assignment)}
    for test in hidden_tests(assignment):
        assert nbgrader_meta(cells[test.id])["points"] == test.points
        assert cells[test.id].source.splitlines()[0] == release.cell_title(test)


def test_readme_totals_are_the_objects_totals():
    rows = re.findall(r"^\| `(\w+)`[^|]*\|[^|]*\| (\d+) \| (\d+) \|$", (ROOT / "README.md").read_text(), re.M)
    assert {a for a, _, _ in rows} == set(ASSIGNMENTS)
    for assignment, count, points in rows:
        assert (int(count), float(points)) == (len(hidden_tests(assignment)), total_points(assignment)), assignment


def test_every_hidden_test_names_known_spec_bullets():
    for test in REGISTRY.values():
        assert set(test.bullets) <= set(all_spec_bullets()), test.id


def _judge(inputs, observations):
    return []


def _test(test_id, **changes):
    fields = dict(id=test_id, assignment="rope_alibi", title="a new check", points=5, answer_cell="rope",
                  probe=call_each, judge=_judge)
    return HiddenTest(**{**fields, **changes})


def test_release_writes_a_new_tests_cell_after_its_answer_cells_tests_and_drops_a_removed_ones(monkeypatch):
    kept = [t for t in hidden_tests("rope_alibi") if t.id != "hidden_alibi_bias"]
    monkeypatch.setattr(release, "hidden_tests", lambda assignment: kept + [_test("hidden_new")])
    nb = nbformat.read(ROOT / "solutions" / "rope_alibi" / "rope_alibi.ipynb", as_version=4)
    written = release.written_notebook(nb, "rope_alibi")
    ids = [grade_id(c) for c in written.cells]
    assert "hidden_alibi_bias" not in ids
    assert ids.index("hidden_new") == ids.index("hidden_rope_relative") + 1
    cell = written.cells[ids.index("hidden_new")]
    assert cell.source.splitlines()[0] == "# Hidden tests: a new check, with inputs you have not seen (5 points)."
    assert 'hidden_test("hidden_new", globals())' in cell.source
    assert nbgrader_meta(cell)["points"] == 5 and nbgrader_meta(cell)["grade"] is True
    assert len(ids) == len(nb.cells)


def test_a_test_must_say_its_assignment_and_keep_its_probe_in_the_probes_package():
    with pytest.raises(TypeError):
        HiddenTest(id="hidden_x", title="t", points=1, answer_cell="rope", probe=call_each, judge=_judge)
    with pytest.raises(ValueError, match="probes package"):
        _test("hidden_x", probe=_judge)
    with pytest.raises(ValueError, match="points"):
        _test("hidden_x", points=0)


def test_ids_are_unique_across_modules():
    one = types.SimpleNamespace(TESTS=[_test("hidden_same")])
    with pytest.raises(ValueError, match="duplicate"):
        registry(one, one)


def test_the_first_release_on_a_fresh_clone_reports_every_assignment_registered(tmp_path, capsys):
    """nbgrader's update_or_create_assignment commits: the dry run used to leave all but the last assignment
    registered, so the real run said only 'rope_alibi ... registered'."""
    import shutil

    from fixture_submissions import make_course

    from posenc_autograder import cli
    from posenc_autograder.course import Course

    course = Course(make_course(tmp_path / "course", registered=False))
    shutil.copy(ROOT / "autograder" / "test_plan.csv", course.path("autograder/test_plan.csv"))
    assert cli.main(["release", "--course", str(course.root)]) == 0
    said = capsys.readouterr().out
    for assignment in course.assignments():
        assert f"gradebook: {assignment}/{assignment}: registered" in said, (assignment, said)
