"""assemble(): the notebook that is run takes every read-only cell from the release and every answer from the
student."""
import copy
import json

import nbformat
import pytest

from posenc_autograder.grading.assemble import assemble
from posenc_autograder.intake.submissions import read_notebook


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



HOSTILE = [  # as handed in: sources as lists or mappings, odd metadata, outputs and ids, cells of other types
    {"cell_type": "code", "source": {"key": 1}, "id": "intro", "metadata": [], "outputs": [{"output_type": "x"}]},
    {"cell_type": "raw", "source": ["def f(x):\n", "    return 2 * x"], "id": "a b",
     "metadata": {"nbgrader": {"grade_id": "answer", "points": "lots", "solution": True}, "x": [None]}},
    {"cell_type": "markdown", "source": ["# Mine"], "id": "intro", "metadata": {"nbgrader": {"grade_id": "intro"}}},
    {"cell_type": "code", "source": "extra = 1", "execution_count": "x", "metadata": {"nbgrader": {"grade_id": 3}}},
    {"cell_type": "code", "source": "\ud800 = 1", "id": "x" * 80, "attachments": {"a": 1}},
]


def _submissions(tmp_path):
    """What prepare hands assemble: each file read as a submission is (intake's read_notebook normalises it)."""
    found = []
    for index, cells in enumerate([HOSTILE, HOSTILE[::-1], [], json.loads(nbformat.writes(release()))["cells"]]):
        path = tmp_path / f"{index}.ipynb"
        path.write_text(json.dumps({"cells": cells, "metadata": {"kernelspec": []}, "nbformat": 4}))
        found.append(read_notebook(path))
    return found


def test_an_assembled_notebook_is_valid_by_construction_and_the_release_is_validated_once(tmp_path, monkeypatch):
    """Every assembled notebook is a valid notebook with a unique id for every cell, whatever the submission held;
    what nbformat's validation checked is the same for every notebook of a release, so a release is validated once,
    not once a notebook (~1.5 ms each), and a release missing cell ids gets them in every notebook, as nbformat's
    validation gave them."""
    given, calls, submissions = release(), [], _submissions(tmp_path)
    for cell in given.cells:
        del cell["id"]                                 # a release written before cell ids
    real = nbformat.validate
    monkeypatch.setattr(nbformat, "validate", lambda *args, **kwargs: calls.append(1) or real(*args, **kwargs))
    built = [assemble(given, submission).notebook for submission in submissions]
    assert len(calls) == 1
    monkeypatch.setattr(nbformat, "validate", real)
    for nb in built:
        ids = [cell["id"] for cell in nb.cells]
        assert len(set(ids)) == len(ids) == len(nb.cells)
        nbformat.validate(nb)                          # raises when invalid (and would give missing ids)
        assert [cell["id"] for cell in nb.cells] == ids
    assert any("extra = 1" in cell.source for cell in built[0].cells)


def test_an_invalid_release_fails_every_notebook_as_before():
    given = release()
    given.cells[1]["execution_count"] = "not a number"
    for _ in range(2):
        with pytest.raises(nbformat.ValidationError):
            assemble(given, release())


class Unwalked(str):
    """A source that fails when walked one character at a time."""

    def __iter__(self):
        raise AssertionError("a cell's text was rebuilt from its characters")


def test_a_cells_text_is_compared_and_kept_as_it_is_never_rebuilt_from_its_characters():
    student = release()
    for cell in student.cells:
        cell.source = Unwalked(cell.source)
    student.cells[2].source = Unwalked("def f(x):\n    return 2 * x")
    student.cells[3].source = Unwalked("assert True")                 # a read-only cell edited
    student.cells.append(_cell("code", "print(f(2))"))
    student.cells[-1].source = Unwalked(student.cells[-1].source)
    result = assemble(release(), student)                            # old code: "".join walked every source
    assert sources(result.notebook)[2:4] == ["def f(x):\n    return 2 * x", "assert f(1) == 2"]
    assert sources(result.notebook)[-1] == "print(f(2))" and "visible" in str(result.notes)
    lines = release()
    lines.cells[2].source = ["def f(x):\n", "    return 3"]             # a source as a list of lines: joined
    assert sources(assemble(release(), lines).notebook)[2] == "def f(x):\n    return 3"
