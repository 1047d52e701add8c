"""Hostile notebooks and files gain no point, change no other grade and cannot stop the run.

One class is graded with two honest students (one full marks, one untouched), every attack in
hostile_notebooks.py, and student folders with hostile names. Then each promise of the README's
threat model is checked the way it would be broken.
"""
import hashlib
import json
import pathlib
import re

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, FULL, NOTEBOOK, make_course, solved_notebook
from hostile_notebooks import ATTACKS, CLASSES, HOSTILE_FILES, HOSTILE_FOLDER_NAMES
from notebook_tools import ROOT

from posenc_autograder import cli
from posenc_autograder.course import Course
from posenc_autograder.grading import pipeline
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.records import gradebook
from posenc_autograder.results import NoteKind
from posenc_autograder.sandbox import warm
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=6, notebook_seconds=24)    # victims are graded before the attacks, on an idle machine
VICTIMS = {"victim_full": FULL, "victim_zero": 0}
# A full solution that also sends the grader what it cannot read, right after its imports: graded on that one run (its
# forged frames stop it there: nothing after them can be read), said as its own, never reported as the grader failing.
HONEST_FORGER = "forger_full"
HOST_MARKERS = [pathlib.Path("/usr/pwned"), ROOT / ".venv/lib/python3.11/site-packages/x.pth"]
ALL_ATTACKS = sorted(ATTACKS) + sorted(HOSTILE_FILES)


def _with_attack(release, source):
    nb = nbformat.from_dict(release)
    index = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "imports")
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(source))
    return nb


def _tree_digest(root: pathlib.Path, skip: tuple[str, ...]) -> dict[str, str]:
    """Every file under root except the folders the grader writes, by content hash."""
    found = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and not path.is_symlink() and not relative.startswith(skip) \
                and path.name != "timestamp.txt":         # nbgrader's submission time, written by the grader
            size = path.stat().st_size                       # the sparse attack file is not read whole
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest() if size < 2**26 else str(size)
    return found


GRADER_WRITES = ("autograder/autograded", "autograder/feedback", "autograder/reports", "autograder/gradebook",
                 "autograder/.work", "autograder/grades.csv", "autograder/release_history",
                 "autograder/nbgrader", "autograder/results",
                 "autograder/attempts")    # make grade records each file placed in submitted/ as a hand-door attempt


@pytest.fixture(scope="module")
def attacked_class(tmp_path_factory):
    course = Course(make_course(tmp_path_factory.mktemp("attacked")))
    release = nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    for student, nb in {"victim_full": solved_notebook(), "victim_zero": release}.items():
        (course.submitted / student / ASSIGNMENT).mkdir(parents=True)
        nbformat.write(nb, course.submitted / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    before = grade_all(course, jobs=2, limits=LIMITS, quiet=True)
    for name, source in ATTACKS.items():
        folder = course.submitted / f"attack_{name}" / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(_with_attack(release, source), folder / f"{NOTEBOOK}.ipynb")
    for name, make in HOSTILE_FILES.items():
        folder = course.submitted / f"attack_{name}" / ASSIGNMENT
        folder.mkdir(parents=True)
        make(folder / f"{NOTEBOOK}.ipynb", release, course.root)
    nbformat.write(_with_attack(solved_notebook(), ATTACKS["announce_an_impossible_frame"]),
                   _submission_folder(course, HONEST_FORGER) / f"{NOTEBOOK}.ipynb")
    for name in HOSTILE_FOLDER_NAMES:
        (course.submitted / name / ASSIGNMENT).mkdir(parents=True)
        nbformat.write(solved_notebook(), course.submitted / name / ASSIGNMENT / f"{NOTEBOOK}.ipynb")
    untouched = _tree_digest(course.root, GRADER_WRITES)
    zygotes_lost = warm.losses()
    after = grade_all(course, jobs=2, limits=LIMITS, quiet=True)
    WARM_PATH.update(status=warm.status(), lost=warm.losses() - zygotes_lost)
    return course, {r.student: r for r in before}, {r.student: r for r in after}, untouched


def _submission_folder(course, student):
    folder = course.submitted / student / ASSIGNMENT
    folder.mkdir(parents=True)
    return folder


WARM_PATH = {}


def test_the_attacks_ran_in_the_warm_sandbox_and_none_reached_its_zygote(attacked_class):
    """Isolated grading forks each job from the zygote; a job that could kill the zygote would be retried unseen."""
    assert WARM_PATH["status"].startswith("a warm interpreter"), WARM_PATH
    assert WARM_PATH["lost"] == 0, WARM_PATH


def test_suite_covers_every_class_with_at_least_35_attacks():
    assert len(ALL_ATTACKS) >= 35
    assert set(CLASSES) == {"escape", "supervisor", "crash", "exhaust", "nan", "host_services", "symlink",
                            "injection"}
    assert sorted(n for names in CLASSES.values() for n in names) == sorted(ALL_ATTACKS)


@pytest.mark.parametrize("name", ALL_ATTACKS)
def test_attack_gains_no_point(attacked_class, name):
    course, _, after, _ = attacked_class
    result = after[f"attack_{name}"]
    assert result.score == 0, [(t.cell_id, t.points) for t in result.tests if t.points]
    assert final_scores(course, f"attack_{name}", ASSIGNMENT)[0] == 0


def test_attacks_alter_no_other_grade(attacked_class):
    course, before, after, _ = attacked_class
    for victim, expected in VICTIMS.items():
        assert before[victim].score == after[victim].score == expected
        assert final_scores(course, victim, ASSIGNMENT) == (float(expected), float(FULL))


def test_no_file_outside_the_job_is_touched(attacked_class):
    course, _, _, untouched = attacked_class
    assert _tree_digest(course.root, GRADER_WRITES) == untouched, "an attack changed a file of the course"
    assert [p for p in HOST_MARKERS if p.exists()] == []


def test_run_completes_with_grades_report_and_feedback_for_everyone(attacked_class):
    course, _, after, _ = attacked_class
    assert set(after) == set(VICTIMS) | {f"attack_{n}" for n in ALL_ATTACKS} | {HONEST_FORGER}
    for student in after:
        assert (course.feedback / student / ASSIGNMENT / f"{NOTEBOOK}.html").is_file(), student
    assert (course.reports / "grading-report.md").is_file()
    rows = (course.reports / "grades.csv").read_text() if (course.reports / "grades.csv").exists() \
        else course.grades_csv.read_text()
    assert all(f"attack_{n}" in rows for n in ALL_ATTACKS)


@pytest.mark.parametrize("name", ["symlink_into_solutions", "fifo_instead_of_notebook", "sparse_five_gigabytes",
                                  "deeply_nested_json", "hundred_thousand_cells", "nbgrader_metadata_is_a_string",
                                  "assignment_folder_links_to_solutions"])
def test_hostile_files_are_refused_with_a_reason(attacked_class, name):
    _, _, after, _ = attacked_class
    result = after[f"attack_{name}"]
    if name == "nbgrader_metadata_is_a_string":       # readable: its cells are graded as plain cells
        assert result.graded and result.score == 0
        return
    assert not result.graded
    assert result.notes, "a refused submission must say why"


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_what_an_attack_sends_or_logs_is_its_own_never_the_grader_failing(attacked_class, name):
    """Forged, malformed or impossible frames and words in the job's log are the student's: graded (0 here), never
    "not graded" or a grader error."""
    _, _, after, _ = attacked_class
    result = after[f"attack_{name}"]
    assert result.graded and not result.notes_of(NoteKind.GRADER_ERROR), [str(n) for n in result.notes]


def test_frames_the_grader_cannot_read_are_the_students_attempt_and_named(attacked_class):
    course, _, after, _ = attacked_class
    result = after[HONEST_FORGER]
    assert result.graded and result.score < FULL, [str(n) for n in result.notes]
    assert final_scores(course, HONEST_FORGER, ASSIGNMENT) == (float(result.score), float(FULL))
    said = [str(n) for n in result.notes_of(NoteKind.UNREADABLE_DATA)]
    assert len(said) == 1 and "announced" in said[0] and "not run again" in said[0], said
    assert not result.notes_of(NoteKind.GRADER_ERROR, NoteKind.CRASHED)
    assert "grader crashed" not in (course.feedback / HONEST_FORGER / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()


def test_the_job_can_neither_import_nor_find_the_grader_package(attacked_class):
    course, _, _, _ = attacked_class
    cells = nbformat.read(course.autograded / "attack_read_grader_package_and_env" / ASSIGNMENT / f"{NOTEBOOK}.ipynb",
                          as_version=4).cells
    printed = "".join(o.get("text", "") for c in cells if c.cell_type == "code" for o in c.outputs)
    assert "grader not imported: ModuleNotFoundError" in printed, printed[-2000:]
    # the search of every folder may outlive the cell's limit on a loaded machine; when it ends, it found nothing
    found = re.findall(r"^grader files (\[.*)$", printed, re.M)
    assert found in ([], ["[]"]), found


def test_hostile_folder_names_are_not_graded(attacked_class):
    _, _, after, _ = attacked_class
    assert not set(HOSTILE_FOLDER_NAMES) & set(after)


def test_feedback_holds_no_grader_text(attacked_class):
    course, _, _, _ = attacked_class
    grader_lines = {line.strip() for text in pipeline.probe_files().values() for line in text.splitlines()
                    if len(line.strip()) >= 30}
    for name in ("leak_grader_code_in_messages", "exceptions_that_fight_back", "forge_channel_frames",
                 "leak_grader_code_through_visible_checks"):
        text = (course.feedback / f"attack_{name}" / ASSIGNMENT / f"{NOTEBOOK}.html").read_text()
        assert not [line for line in grader_lines if line in text], name
        assert "<script" not in text.replace("&lt;script", "")


def test_autograded_notebooks_keep_plain_text_outputs_only(attacked_class):
    course, _, _, _ = attacked_class
    for path in course.autograded.rglob("*.ipynb"):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            for output in cell.get("outputs", []):
                assert output["output_type"] in ("stream", "error"), (path, output)


def test_nan_and_inf_fail_the_checks(attacked_class):
    _, _, after, _ = attacked_class
    result = after["attack_nan_and_inf_tables"]
    failed = {t.cell_id for t in result.tests if t.hidden and not t.passed}
    assert failed == {t.cell_id for t in result.tests if t.hidden}


def final_scores(course, student, assignment):
    with gradebook.open_gradebook(course) as gb:
        return gradebook.final_scores(gb, student, assignment)


def test_the_integrity_report_reads_every_attacker_back(attacked_class):
    """Evidence posing as the codec's own structures (or an amplified frame) never switches the
    copying report off for the class."""
    from posenc_autograder.integrity import report
    course, _, _, _ = attacked_class
    assert cli.main(["integrity", "--course", str(course.root)]) == 0
    page = (course.reports / report.REPORT_NAME).read_text()
    assert "0 skipped" in page
