"""assemble(): the notebook that is run takes every read-only cell from the release and every answer from the
student."""
import copy

import nbformat
import pytest

from posenc_autograder.grading.assemble import assemble


def _cell(kind, source, grade_id=None, **flags):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "grade": False, "solution": False, "locked": True,
                                     "schema_version": 3, **flags}
    return cell


def release():
    return nbformat.v4.new_notebook(cells=[
        _cell("markdown", "# Instructions", "intro"),
        _cell("code", "import numpy as np", "imports"),
        _cell("code", "def f(x):\n    raise NotImplementedError()", "answer", solution=True, locked=False),
        _cell("code", "assert f(1) == 2", "visible", grade=True, points=0),
        _cell("code", "hidden_test('hidden_f', globals())", "hidden_f", grade=True, points=3),
    ])


def sources(nb):
    return [c.source for c in nb.cells]


def test_an_untouched_submission_runs_as_released():
    result = assemble(release(), release())
    assert sources(result.notebook) == sources(release()) and result.notes == []


def test_the_answer_comes_from_the_student_and_tests_from_the_release():
    student = release()
    student.cells[2].source = "def f(x):\n    return 2 * x"
    student.cells[4].source = "print('all good')"                       # an edited hidden test
    student.cells[4].metadata["nbgrader"]["points"] = 300                # and its points
    result = assemble(release(), student)
    assert sources(result.notebook)[2] == "def f(x):\n    return 2 * x"
    assert sources(result.notebook)[4] == release().cells[4].source
    assert result.notebook.cells[4].metadata["nbgrader"]["points"] == 3
    assert any("read-only cells were edited" in n.text and "hidden_f" in n.text for n in result.notes)


def test_deleted_test_cells_are_restored_in_place():
    student = release()
    del student.cells[3:5]
    result = assemble(release(), student)
    assert sources(result.notebook) == sources(release())
    assert any("deleted cells were restored" in n.text and "visible, hidden_f" in n.text for n in result.notes)


def test_a_deleted_answer_cell_runs_the_stub_and_says_so():
    student = release()
    del student.cells[2]
    result = assemble(release(), student)
    assert "NotImplementedError" in sources(result.notebook)[2]
    assert any("'answer' was deleted" in n.text for n in result.notes)


def test_added_code_cells_run_where_the_student_put_them_and_empty_ones_are_dropped():
    student = release()
    student.cells.insert(3, nbformat.v4.new_code_cell("helper = 1"))
    student.cells.insert(0, nbformat.v4.new_code_cell("import math"))
    student.cells.insert(1, nbformat.v4.new_code_cell("   "))
    result = assemble(release(), student)
    got = sources(result.notebook)
    assert got[0] == "import math" and got[got.index("helper = 1") - 1] == student.cells[4].source
    assert got.index("helper = 1") < got.index("assert f(1) == 2")
    assert "   " not in got
    assert result.notes == []       # cells that ran fine: no note (one that raises gets its own, from the run)


def test_cells_are_matched_by_grade_id_even_when_reordered():
    student = release()
    student.cells[2].source = "def f(x):\n    return 2 * x"
    student.cells = [student.cells[i] for i in (0, 1, 4, 3, 2)]
    result = assemble(release(), student)
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in result.notebook.cells] == \
        ["intro", "imports", "answer", "visible", "hidden_f"]
    assert sources(result.notebook)[2] == "def f(x):\n    return 2 * x"


def test_the_release_is_never_modified():
    original = release()
    kept = copy.deepcopy(original)
    student = release()
    student.cells[4].source = "x = 1"
    assemble(original, student)
    assert original == kept


def test_the_release_is_copied_whole_without_copy_deepcopy(monkeypatch):
    """Each released cell and the release's metadata are copied as deep as copy.deepcopy copies them, in a third of
    its time (the old code called it for every released cell of every notebook prepared)."""
    given = release()
    given.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "extra": [{"deep": [1, 2.5]}]}
    expected = copy.deepcopy(given)
    monkeypatch.setattr(copy, "deepcopy", lambda *args, **kwargs: pytest.fail("copy.deepcopy was called"))
    nb = assemble(given, release()).notebook
    assert nb.cells == expected.cells and nb.metadata == expected.metadata
    for cell in nb.cells:
        cell.metadata.setdefault("nbgrader", {})["grade_id"] = "changed"
        cell.source = "changed"
    nb.metadata["kernelspec"]["extra"][0]["deep"].append(3)
    assert given == expected and isinstance(nb.cells[0].metadata, nbformat.NotebookNode)
