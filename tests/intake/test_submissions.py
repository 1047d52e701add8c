"""submissions: find each student's notebook under submitted/ and read it without trusting it."""
import json
import os

import nbformat
import pytest
from fixture_submissions import make_course

from posenc_autograder.course import Course
from posenc_autograder.intake.submissions import UnreadableNotebook, discover, read_notebook, sha256

ASSIGNMENT = NOTEBOOK = "rope_alibi"


@pytest.fixture
def course(tmp_path):
    return Course(make_course(tmp_path / "course"))


def hand_in(course, student, name=f"{NOTEBOOK}.ipynb", text=None):
    folder = course.submitted / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text if text is not None else nbformat.writes(nbformat.v4.new_notebook()))
    return path


def found(course, **options):
    return {(s.student, s.notebook): s for s in discover(course, **options)}


def test_each_student_notebook_is_found_in_a_stable_order(course):
    for student in ("zoe", "adam"):
        hand_in(course, student)
    subs = discover(course)
    assert [(s.student, s.assignment, s.notebook) for s in subs] == \
        [("adam", ASSIGNMENT, NOTEBOOK), ("zoe", ASSIGNMENT, NOTEBOOK)]
    assert all(s.path.is_file() and s.notes == [] for s in subs)


def test_a_renamed_notebook_is_graded_under_its_expected_name_with_a_note(course):
    path = hand_in(course, "ann", name=f"{NOTEBOOK} (2).ipynb")
    sub = found(course)[("ann", NOTEBOOK)]
    assert sub.path == path and "renamed" in sub.notes[0].text


def test_a_missing_notebook_is_reported_and_names_what_was_there(course):
    hand_in(course, "bob", name="a.ipynb")
    hand_in(course, "bob", name="b.ipynb")
    sub = found(course)[("bob", NOTEBOOK)]
    assert sub.path is None
    assert "missing" in sub.notes[0].text and "a.ipynb" in sub.notes[0].text and "b.ipynb" in sub.notes[0].text


def test_filters_by_student_and_ignores_unknown_assignment_folders(course):
    hand_in(course, "ann")
    hand_in(course, "bob")
    (course.submitted / "ann" / "not_an_assignment").mkdir()
    assert set(found(course, students=["bob"])) == {("bob", NOTEBOOK)}
    assert {s.assignment for s in discover(course)} == {ASSIGNMENT}


def test_no_submitted_folder_means_nothing_to_grade(tmp_path):
    assert discover(Course(make_course(tmp_path / "empty"))) == []


def test_a_valid_notebook_is_read(course):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    path = hand_in(course, "ann", text=nbformat.writes(nb))
    assert read_notebook(path).cells[0].source == "x = 1"


@pytest.mark.parametrize("text, phrase", [
    ("<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> b", "merge-conflict markers"),
    ('{"cells": 3, "nbformat": 4}', "not a Jupyter notebook"),
    ("[" * 10_000 + "]" * 10_000, "nests JSON"),
    ("\xff\xfe not text", "not valid notebook JSON"),
])
def test_broken_files_get_a_reason_the_student_can_act_on(course, text, phrase):
    path = hand_in(course, "ann", text=text)
    with pytest.raises(UnreadableNotebook, match=phrase):
        read_notebook(path)


def test_an_oversized_file_is_refused_before_it_is_parsed(course):
    path = hand_in(course, "ann", text=json.dumps({"cells": [], "pad": "x" * 2000}))
    with pytest.raises(UnreadableNotebook, match="MB"):
        read_notebook(path, max_bytes=1000)


def test_a_symbolic_link_is_not_followed(course, tmp_path):
    secret = tmp_path / "secret.ipynb"
    secret.write_text(nbformat.writes(nbformat.v4.new_notebook()))
    folder = course.submitted / "mallory" / ASSIGNMENT
    folder.mkdir(parents=True)
    os.symlink(secret, folder / f"{NOTEBOOK}.ipynb")
    with pytest.raises(UnreadableNotebook, match="link"):
        read_notebook(folder / f"{NOTEBOOK}.ipynb")
    assert sha256(folder / f"{NOTEBOOK}.ipynb") is None


def test_the_digest_follows_the_content(course):
    path = hand_in(course, "ann")
    before = sha256(path)
    path.write_text(path.read_text() + " ")
    assert sha256(path) != before and len(before) == 64
