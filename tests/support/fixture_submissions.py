"""Build a class of fixture submissions, each a way students really hand things in.

Built from the released notebook and the solution code at test time, so they follow the
notebooks when those change. `EXPECTED` is the exact outcome each must get.
"""
from __future__ import annotations

import atexit
import copy
import fcntl
import functools
import hashlib
import os
import pathlib
import shutil
import tempfile

import nbformat
import precompile
from notebook_tools import ROOT

from posenc_autograder import settings
from posenc_autograder.authoring import generation
from posenc_autograder.checks import REGISTRY, total_points
from posenc_autograder.course import GRADEBOOK, SOURCE_DIRECTORY, Course
from posenc_autograder.devtools import bench
from posenc_autograder.records import gradebook, results_store

ASSIGNMENT = NOTEBOOK = "positional_encoding"
FULL = total_points(ASSIGNMENT)
DOT = REGISTRY["hidden_dot_product"].points                     # the test that calls dot_product_distance
CONTRACT = 0.5     # one to three functions' cases of the 12 in hidden_contracts (2 points, prorated to half points)
# slow_notebook: cells of this many seconds each, short so that the limits a test grades it under wait little
SLOW_CELL_SECONDS, SLOW_CELLS = 3, 6


def points_after(grade_id: str) -> float:
    """The hidden tests' points after the cell `grade_id`, in the notebook's order: what a run that
    stops in that cell leaves unearned (a notebook is run once; a dead process stops it there)."""
    ids = [cell.metadata.get("nbgrader", {}).get("grade_id") for cell in solved_notebook().cells]
    return sum(REGISTRY[i].points for i in ids[ids.index(grade_id) + 1:] if i in REGISTRY)


def _grade_id(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def solved_notebook(assignment=ASSIGNMENT):
    """The released notebook with every answer cell filled in from the solution."""
    return bench.solved(ROOT, assignment)


def _with_answer(nb, grade_id, transform):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if _grade_id(cell) == grade_id:
            cell.source = transform(cell.source)
    return nb


def _insert_after(nb, grade_id, *sources):
    nb = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(nb.cells) if _grade_id(c) == grade_id)
    nb.cells[index + 1:index + 1] = [nbformat.v4.new_code_cell(source) for source in sources]
    return nb


def _without(nb, grade_id):
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if _grade_id(c) != grade_id]
    return nb


def _edit_metadata(nb, grade_id, **changes):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if _grade_id(cell) == grade_id:
            cell.metadata["nbgrader"].update(changes)
    return nb


def build(submitted: pathlib.Path) -> None:
    solved = solved_notebook()
    release = nbformat.read(ROOT / "exercises" / ASSIGNMENT / f"{NOTEBOOK}.ipynb", as_version=4)
    solution_cell = next(c for c in solved.cells if _grade_id(c) == "dot_product_and_statistics")
    stub_moved = _insert_after(solved, "dot_product_and_statistics", solution_cell.source)
    stub_moved = _with_answer(stub_moved, "dot_product_and_statistics",
                              lambda s: "def dot_product_distance(pe):\n    # YOUR CODE HERE\n"
                                        "    raise NotImplementedError()\n")
    notebooks = {
        "correct": solved,
        "untouched": release,
        "deleted_test_cell": _without(_without(solved, "hidden_pe_values"), "test_pe_visible"),
        "edited_metadata": _edit_metadata(_edit_metadata(solved, "hidden_pe_shapes", grade=False, points=200),
                                          "test_pe_visible", points=25),
        "os_exit_in_cell": _with_answer(solved, "dot_product_and_statistics",
                                        lambda s: s + "\n\nimport os\nos._exit(3)\n"),
        "os_exit_in_function": _with_answer(solved, "dot_product_and_statistics",
                                            lambda s: s.replace('    return pe @ pe.T',
                                                                '    import os\n    os._exit(1)')),
        "infinite_loop": _with_answer(solved, "dot_product_and_statistics",
                                      lambda s: s.replace('    return pe @ pe.T', '    while True:\n        pass')),
        # Every cell stays under the per-cell timeout; together they exceed the whole-notebook limit.
        "slow_notebook": _insert_after(solved, "imports",
                                       *[f"import time\ntime.sleep({SLOW_CELL_SECONDS})"] * SLOW_CELLS),
        "output_flood": _insert_after(solved, "imports", "print('x' * 10_000_000)\nfor _ in range(20000):\n"
                                                         "    print('flood line')"),
        "memory_hog": _with_answer(solved, "dot_product_and_statistics",
                                   lambda s: s.replace('    return pe @ pe.T',
                                                       '    hog = np.ones(20 * 2**30 // 8)\n    return pe @ pe.T')),
        "code_in_added_cell": stub_moved,
        "syntax_error": _with_answer(solved, "self_attention",
                                     lambda s: s.replace("Q, K, V = X @ W_q", "Q, K, V = X @@ W_q")),
        "indentation_error": _with_answer(solved, "relative_position_matrix",
                                          lambda s: s.replace("    M = np.zeros((d_model, d_model))",
                                                              "      M = np.zeros((d_model, d_model))")),
    }
    for student, nb in notebooks.items():
        folder = submitted / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{NOTEBOOK}.ipynb")
    conflict = submitted / "merge_conflict" / ASSIGNMENT
    conflict.mkdir(parents=True)
    lines = nbformat.writes(solved).splitlines()
    lines[40:40] = ["<<<<<<< HEAD", '  "x": 1,', "=======", '  "x": 2,', ">>>>>>> branch"]
    (conflict / f"{NOTEBOOK}.ipynb").write_text("\n".join(lines))
    renamed = submitted / "renamed" / ASSIGNMENT
    renamed.mkdir(parents=True)
    nbformat.write(solved, renamed / f"{NOTEBOOK} (1).ipynb")
    (submitted / "missing" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "missing" / ASSIGNMENT / "notes.txt").write_text("forgot the notebook")


# student -> (score, graded, phrases its notes must contain)
MEMORY = settings.size(settings.Limits().memory_bytes)      # the sandbox's, as the grader states it
EXPECTED = {
    "correct": (FULL, True, []),
    "untouched": (0, True, []),
    "deleted_test_cell": (FULL, True, ["deleted cells were restored and run: test_pe_visible, hidden_pe_values"]),
    "edited_metadata": (FULL, True, ["read-only cells were edited", "test_pe_visible", "hidden_pe_shapes"]),
    "os_exit_in_cell": (FULL - points_after("dot_product_and_statistics"), True,
                        ["process died while running cell 'dot_product_and_statistics'",
                         "the cells after it were not run"]),
    # The visible self-check is the first cell to call dot_product_distance.
    "os_exit_in_function": (FULL - points_after("test_dot_stats_visible"), True,
                            ["process died while running cell 'test_dot_stats_visible'"]),
    # Interrupted once in the self-check; from then on the function raises at once, so only its own cases fail.
    "infinite_loop": (FULL - DOT - CONTRACT, True, ["cell 'test_dot_stats_visible' ran longer than",
                                                    "the notebook went on with the next cell"]),
    "slow_notebook": (0, True, ["the notebook reached its total time limit"]),
    "output_flood": (FULL, True, ["printed too much output"]),
    "memory_hog": (FULL - DOT - CONTRACT, True, ["ran out of memory in", "hidden_dot_product",
                                                  f"allows each notebook {MEMORY}"]),
    # The answer cell keeps the stub and a cell of the student's own defines the functions after it: graded, and said
    # once, as the definition that was graded (cells of their own that ran fine have no note of their own).
    "code_in_added_cell": (FULL, True, ["the version graded is the one", "after answer cell "
                                                                         "'dot_product_and_statistics'"]),
    # A broken answer cell: its functions' tests (self_attention 3, integration 3) and their contract cases; named once.
    "syntax_error": (FULL - 6 - CONTRACT, True, ["Fix this first: the answer cell 'self_attention' did not run "
                                                 "(SyntaxError: invalid syntax (line 4))"]),
    "indentation_error": (FULL - REGISTRY["hidden_relative_position"].points - CONTRACT, True,
                          ["Fix this first: the answer cell 'relative_position_matrix' did not run (IndentationError: "
                           "unexpected indent (line 5))"]),
    "merge_conflict": (0, False, ["not valid notebook JSON", "merge-conflict markers"]),
    "renamed": (FULL, True, ["renamed to 'positional_encoding (1).ipynb'"]),
    "missing": (0, False, ["'positional_encoding.ipynb' is missing"]),
}


def make_course(tmp: pathlib.Path, registered: bool = True) -> pathlib.Path:
    """A throwaway course directory: the repository's notebooks and config, and a gradebook where every
    assignment is registered, as after `make release`, with the generated assignments that release keeps (a check of
    exercises/ against solutions/, as make grade's, reads them instead of running nbgrader again); registered=False:
    no gradebook and nothing kept yet."""
    for folder in ("solutions", "exercises"):
        shutil.copytree(ROOT / folder, tmp / folder)
    (tmp / "autograder").mkdir()
    shutil.copy(ROOT / "autograder" / "nbgrader_config.py", tmp / "autograder")
    shutil.copy(ROOT / "nbgrader_config.py", tmp)          # nbgrader started from the root finds autograder/
    if registered:
        kept = registered_gradebook()
        shutil.copy(kept, tmp / GRADEBOOK)
        shutil.copytree(kept.parent / generation.KEPT, Course(tmp).work / generation.KEPT)
    return tmp


def course_with_solvers(tmp: pathlib.Path, *students: str) -> Course:
    """make_course with each student's submission of the core assignment: its solved notebook."""
    course = Course(make_course(tmp))
    for student in students:
        folder = course.submitted / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(solved_notebook(), folder / f"{NOTEBOOK}.ipynb")
    return course


def set_released_points(course: Course, cell_id: str, points: float) -> None:
    """What `make release` does to the core notebook as released when a hidden test's points change."""
    path = course.path("exercises") / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if _grade_id(c) == cell_id)
    cell.metadata["nbgrader"]["points"] = points
    nbformat.write(nb, path)


def _registration_key() -> str:
    """What a registered gradebook depends on: the released notebooks, and each assignment's generation digest
    (the code, the tools' versions, the settings, the source notebooks and the hidden tests: a hidden test's points
    change no released notebook, yet the gradebook holds them)."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "exercises").rglob("*.ipynb")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    checkout = Course(ROOT)
    config = generation.course_config(checkout)
    for assignment in checkout.assignments():
        source = checkout.path(SOURCE_DIRECTORY) / assignment
        digest.update(f"{assignment}\0{generation.digest(checkout, assignment, source, config)}".encode())
    return digest.hexdigest()[:16]


KEPT_GRADEBOOKS = ROOT / ".pytest_cache" / "posenc-gradebook"
# The generated assignments' kept entries, for a new checkout's first registering: each is recalled only under the
# digest of everything that decides it (this code, nbgrader's version, the sources, the settings) and intact
GENERATED_SEED = precompile.USER_CACHE / "generated"


@functools.lru_cache(maxsize=1)
def registered_gradebook() -> pathlib.Path:
    """A gradebook with every assignment registered: registering (nbgrader's alembic and generate_assignment)
    takes about 10 s, which each fresh course would pay again. Made once and kept in the git-ignored
    .pytest_cache under the key of what it depends on, so a rerun of `make test-fast` does not pay it; beside it,
    the generated assignments registering kept (generation.KEPT: each entry is recalled only under its own digest).
    Made by one process: the test workers that ask for it at once (a fresh checkout's first run) wait for it under a
    lock rather than each register every assignment again."""
    kept = KEPT_GRADEBOOKS / _registration_key() / "gradebook.db"
    if _is_kept(kept):
        return kept
    kept.parent.mkdir(parents=True, exist_ok=True)
    with open(kept.parent.with_name(kept.parent.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # released when the file closes, also if registering fails
        if not _is_kept(kept):
            _register_into(kept)
    return kept


def _seed_entries(entries: pathlib.Path) -> None:
    """Each kept entry copied to GENERATED_SEED, whole or not at all. Best effort: a next checkout generates again."""
    try:
        GENERATED_SEED.mkdir(parents=True, exist_ok=True)
        for entry in entries.glob("*.json"):
            partial = GENERATED_SEED / f"{entry.name}.{os.getpid()}.partial"
            shutil.copyfile(entry, partial)
            partial.replace(GENERATED_SEED / entry.name)
    except OSError:
        pass


def _is_kept(kept: pathlib.Path) -> bool:
    return kept.is_file() and (kept.parent / generation.KEPT).is_dir()


def _register_into(kept: pathlib.Path) -> None:
    folder = pathlib.Path(tempfile.mkdtemp(prefix="posenc-gradebook-"))
    atexit.register(shutil.rmtree, folder, True)
    course = Course(make_course(folder / "course", registered=False))
    entries = course.work / generation.KEPT
    if GENERATED_SEED.is_dir():
        shutil.copytree(GENERATED_SEED, entries, dirs_exist_ok=True)
    for release in sorted(p for p in (ROOT / "exercises").iterdir() if p.is_dir()):
        gradebook.register(course, release.name)
    _seed_entries(entries)
    partial_entries = kept.parent / f"{generation.KEPT}.{os.getpid()}.partial"
    shutil.copytree(course.work / generation.KEPT, partial_entries)
    try:
        partial_entries.rename(kept.parent / generation.KEPT)     # whole or absent; another worker's may be there
    except OSError:
        shutil.rmtree(partial_entries, ignore_errors=True)
    partial = kept.with_suffix(f".{os.getpid()}.partial")       # whole or absent, whoever reads it
    shutil.copy(course.root / GRADEBOOK, partial)
    partial.replace(kept)


def disagreements(course: Course) -> list[str]:
    """Students whose stored result's points are not what the gradebook holds for that notebook."""
    found = []
    with gradebook.open_gradebook(course) as gb:
        for r in results_store.stored_results(course):
            held = gradebook.cell_scores(gb, r.student, r.assignment, r.notebook)
            if any(held.get(t.cell_id, (None,))[0] != t.points for t in r.tests):
                found.append(r.student)
    return found
