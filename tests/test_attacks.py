"""Hostile notebooks gain no point and change no other student's grade (issue: safe grading)."""
import hashlib

import nbformat
import pytest

from fixture_submissions import ASSIGNMENT, FULL, NOTEBOOK, make_course, solved_notebook
from hostile_notebooks import ATTACKS
from notebook_tools import ROOT
from posenc_autograder import gradebook
from posenc_autograder.course import Course
from posenc_autograder.grade import grade_all
from posenc_autograder.sandbox import Limits

LIMITS = Limits(cell_seconds=8, notebook_seconds=40)


def _with_attack(release, source):
    nb = nbformat.from_dict(release)
    index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "imports")
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
    return nb


def _digest(paths):
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


@pytest.fixture(scope="module")
def attacked_class(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("attacked")))
    release = nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    victims = {"victim_full": solved_notebook(), "victim_zero": release}
    for student, nb in victims.items():
        (course.submitted / student / ASSIGNMENT).mkdir(parents=True)
        nbformat.write(nb, course.submitted / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    before = grade_all(course, jobs=2, limits=LIMITS, quiet=True)
    protected = sorted((course.root / "solutions").rglob("*")) + sorted(course.submitted.rglob("*.ipynb"))
    protected = [p for p in protected if p.is_file()]
    digests = _digest(protected)
    for name, source in ATTACKS.items():
        folder = course.submitted / f"attack_{name}" / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(_with_attack(release, source), folder / f"{NOTEBOOK}.ipynb")
    after = grade_all(course, jobs=2, limits=LIMITS, quiet=True)
    return course, {r.student: r for r in before}, {r.student: r for r in after}, digests


def test_suite_has_at_least_ten_attacks():
    assert len(ATTACKS) >= 10


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_gains_no_point(attacked_class, name):
    course, _, after, _ = attacked_class
    result = after[f"attack_{name}"]
    assert result.score == 0, [(t.cell_id, t.points) for t in result.tests if t.points]
    score, _ = final_scores(course, f"attack_{name}", ASSIGNMENT)
    assert score == 0


def test_attacks_alter_no_other_grade(attacked_class):
    course, before, after, digests = attacked_class
    for victim, expected in (("victim_full", FULL), ("victim_zero", 0)):
        assert before[victim].score == after[victim].score == expected
        assert final_scores(course, victim, ASSIGNMENT) == (float(expected), float(FULL))
    assert _digest(list(digests)) == digests, "an attack changed a protected file"


def final_scores(course, student, assignment):
    with gradebook.open_gradebook(course) as gb:
        return gradebook.final_scores(gb, student, assignment)
