"""What a student sees before submitting: `nbgrader validate` on notebooks built from the mistake catalogue.

Flawed notebooks must fail with the visible checks' own diagnosis (written inline in the notebook,
so a downloaded copy needs nothing but numpy); every catalogued correct alternative must pass.
One nbgrader process validates a whole batch of notebooks (a kernel each, a few seconds apiece).
"""
import pathlib
import re

import nbformat
import pytest
from fixture_submissions import solved_notebook
from notebook_tools import nbgrader_validate

from posenc_autograder.checks.positional_encoding.catalogue import ALTERNATIVES, MISTAKES
from posenc_autograder.checks.rope_alibi.catalogue import ALTERNATIVES as ROPE_ALTERNATIVES
from posenc_autograder.checks.rope_alibi.catalogue import MISTAKES as ROPE_MISTAKES

# catalogued mistake -> the diagnosis its visible check must print
CAUGHT_WITH = {
    "float32 computation cast to float64 at the end (a PyTorch recipe ported)": "the size of float32 rounding",
    "forward adds the encoding into the caller's array": "changed its argument 0 in place",
    "table returned as a Python list": "built as a Python list",
    "softmax shifted by the maximum over the wrong axis": "the maximum is subtracted along the wrong axis",
    "softmax without keepdims": "keepdims is missing",
    "gradient accumulated across calls": "gradients from the earlier call are kept",
    "forward reads a frozen copy of the table": "not a table or alias kept in __init__",
    "window assumed to start at position 0": "positions 25..89",
    "error assumed to be zero": "the error must be measured",
    "sin and cos swapped": "sin and cos are swapped",
    "encoding added after attention": "the encoding is added after attention",
    "rng argument ignored": "not drawn from the `rng` argument",
}
ROPE_CAUGHT_WITH = {
    "naive slopes for any head count": "take the slopes of the next lower power of two",
    "no ValueError for an odd head_dim": "must raise ValueError",
    "apply_rope rotates x in place": "apply_rope changed its argument x in place",
    "halves instead of pairs": "a legitimate RoPE convention",
    "frequencies returned as float32": "returned a float32 ndarray; expected a float64",
}
# assignment -> (mistakes, correct alternatives, the mistakes built into notebooks, how many must be caught)
CATALOGUES = {"positional_encoding": (MISTAKES, ALTERNATIVES, CAUGHT_WITH, 9),
              "rope_alibi": (ROPE_MISTAKES, ROPE_ALTERNATIVES, ROPE_CAUGHT_WITH, len(ROPE_CAUGHT_WITH))}


def defined_names(code: str) -> list[str]:
    return re.findall(r"^(?:def|class) (\w+)", code, re.M)


def alternative_rounds(alternatives: dict[str, str]) -> list[dict[str, str]]:
    """The alternatives in as few notebooks as possible, at most one per function in each."""
    rounds: list[dict[str, str]] = []
    for name, code in alternatives.items():
        target = next((r for r in rounds if not set(defined_names(code)) & {n for c in r.values()
                                                                             for n in defined_names(c)}), None)
        if target is None:
            rounds.append(target := {})
        target[name] = code
    return rounds


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return build_and_validate(tmp_path_factory.mktemp("validate"))


def build_and_validate(folder: pathlib.Path) -> dict[str, str]:
    """Every assignment's flawed and alternative notebooks, validated in one nbgrader process."""
    names = []
    for assignment, (mistakes, alternatives, caught_with, _) in CATALOGUES.items():
        by_name = {m.name: m for m in mistakes}
        for index, name in enumerate(caught_with):
            nbformat.write(_appended(solved_notebook(assignment), by_name[name].code),
                           folder / f"{assignment}_mistake_{index}.ipynb")
            names.append(f"{assignment}_mistake_{index}.ipynb")
        for index, codes in enumerate(alternative_rounds(alternatives)):
            nb = solved_notebook(assignment)
            for code in codes.values():
                nb = _appended(nb, code)
            nbformat.write(nb, folder / f"{assignment}_alternatives_{index}.ipynb")
            names.append(f"{assignment}_alternatives_{index}.ipynb")
    return nbgrader_validate(folder, names)


def _appended(nb, code):
    """nb with `code` appended to the answer cell that defines its names (as a student would edit it)."""
    names = defined_names(code)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("solution") and \
                any(re.search(rf"^(?:def|class) {n}\b", cell.source, re.M) for n in names):
            cell.source += "\n\n" + code
            return nb
    raise AssertionError(f"no answer cell defines {names}")


def caught_by_validate(outputs, assignment: str) -> dict[str, bool]:
    """Catalogued mistake -> whether `nbgrader validate` failed its notebook with the visible check's diagnosis."""
    caught = {}
    for index, (name, phrase) in enumerate(CATALOGUES[assignment][2].items()):
        text = " ".join(outputs[f"{assignment}_mistake_{index}.ipynb"].split())     # validate wraps long messages
        caught[name] = "VALIDATION FAILED" in text and phrase in text
    return caught


def test_validate_catches_the_flawed_notebooks_with_the_right_diagnosis(outputs):
    assert len(CAUGHT_WITH) >= 10 and len(ROPE_CAUGHT_WITH) >= 3
    for assignment, (*_, must_catch) in CATALOGUES.items():
        caught = caught_by_validate(outputs, assignment)
        assert sum(caught.values()) >= must_catch, {name: ok for name, ok in caught.items() if not ok}


@pytest.mark.parametrize("assignment", sorted(CATALOGUES))
def test_validate_passes_every_correct_alternative(outputs, assignment):
    alternatives = CATALOGUES[assignment][1]
    rounds = alternative_rounds(alternatives)
    assert sum(len(r) for r in rounds) == len(alternatives)
    for index, codes in enumerate(rounds):
        text = outputs[f"{assignment}_alternatives_{index}.ipynb"]
        assert "Success! Your notebook passes all the tests." in text, (sorted(codes), text[-1500:])
