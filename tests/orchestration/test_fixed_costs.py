"""What a run costs before it grades anything: a `make grade` with nothing new reads no gradebook, rewrites
no class file and imports neither nbgrader nor matplotlib; and nothing imported at start-up compiles grammars
it does not use. (The CPU figures are printed by `make bench`, never asserted here.)"""
import os
import pathlib
import subprocess
import sys
import sysconfig
import threading

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, course_with_solvers, make_course, solved_notebook

from posenc_autograder import iri_deferral
from posenc_autograder.course import Course
from posenc_autograder.grading.execute import Execution
from posenc_autograder.intake import roster
from posenc_autograder.orchestration import grade
from posenc_autograder.records import gradebook
from posenc_autograder.sandbox import warm
from posenc_autograder.settings import Limits

SRC = str(pathlib.Path(grade.__file__).parents[2])


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A class of one, graded once with the command's default limits (so the command finds it unchanged)."""
    course = Course(make_course(tmp_path_factory.mktemp("fixed")))
    folder = course.submitted / "solver" / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(solved_notebook(), folder / f"{NOTEBOOK}.ipynb")
    grade.grade_all(course, jobs=1, isolate=False, limits=Limits(), quiet=True)
    return course


def _class_files(course):
    return {p: p.stat().st_mtime_ns for p in course.reports.rglob("*") if p.is_file()}


def test_nothing_to_grade_opens_no_gradebook_and_rewrites_no_class_file(graded, monkeypatch):
    before = _class_files(graded)
    assert before
    with monkeypatch.context() as patch:
        patch.setattr(gradebook, "open_gradebook", lambda *a, **k: pytest.fail("the gradebook was opened"))
        [result] = grade.grade_all(graded, jobs=1, isolate=False, limits=Limits(), quiet=True)
    assert result.graded and result.score > 0
    assert _class_files(graded) == before


def test_each_look_at_submitted_reads_a_students_record_of_attempts_twice(graded, monkeypatch):
    """make grade looks at submitted/ before the round and after it: each look reads the class's records of attempts
    (which students have any) and then each student's once more, after the exchange's door may have added to it (the
    old code read it again for the files placed by hand and for which attempt counts: three reads a look)."""
    from posenc_autograder.intake import attempts

    reads, real_read = [], attempts._read
    monkeypatch.setattr(attempts, "_read", lambda where: reads.append(where.name) or real_read(where))
    [result] = grade.grade_all(graded, jobs=1, isolate=False, limits=Limits(), quiet=True)
    assert result.graded
    assert reads == [ASSIGNMENT] * (2 * 2 + 2)     # two looks; the count of rounds, the unchanged notebook's points


@pytest.mark.parametrize("change", ["gradebook", "roster", "class file deleted"])
def test_a_change_the_class_files_are_made_from_writes_them_again(graded, change):
    if change == "gradebook":                      # a manual grade entered in formgrader changes the file
        os.utime(graded.path("autograder/gradebook.db"))
    elif change == "roster":
        roster.save(graded, {("solver", ASSIGNMENT): {"student_id": "solver", "assignment": ASSIGNMENT,
                                                       "name": "Sol Ver"}})
    else:
        (graded.reports / "class.html").unlink()
    before = _class_files(graded)
    grade.grade_all(graded, jobs=1, isolate=False, limits=Limits(), quiet=True)
    after = _class_files(graded)
    assert (graded.reports / "class.html").is_file()
    assert all(after[p] != mtime for p, mtime in before.items() if p.name == "class.html")
    assert set(after) >= set(before)


def test_the_command_with_nothing_to_grade_imports_neither_nbgrader_nor_matplotlib(graded):
    script = ("import sys; from posenc_autograder import cli; "
              f"status = cli.main(['grade', '--no-sandbox', '--course', {str(graded.root)!r}]); "
              "print(status, sorted(m for m in ('nbgrader', 'matplotlib', 'lark', 'sqlalchemy') if m in sys.modules))")
    for _ in range(2):        # the first run checks the release (nbgrader) and remembers that it did
        done = _fresh_process(script)
    assert done.stdout.splitlines()[-1] == "0 []", done.stdout + done.stderr


def _fresh_process(script: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": SRC})


def test_the_iri_format_is_still_checked_and_its_grammar_compiled_only_then():
    script = ("import sys, posenc_autograder, jsonschema, nbformat; compiled = 'lark' in sys.modules; "
              "checker = jsonschema.FormatChecker(); "
              "print(compiled, checker.conforms('https://example.org/wiki/\\u00e9t\\u00e9', 'iri'), "
              "checker.conforms('no scheme here', 'iri'), 'lark' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "False", "True"], done.stdout + done.stderr


def test_every_python_of_the_environment_defers_the_iri_grammars_until_the_format_is_checked():
    """jupyter-book and nbgrader's command line import jsonschema before any code of ours: the environment's start-up
    hook (`make install`) defers the grammars there too, and the format is still checked."""
    hook = pathlib.Path(sysconfig.get_paths()["purelib"]) / iri_deferral.HOOK_FILE
    assert hook.exists() and hook.read_text() == iri_deferral.hook_line(), \
        f"{hook} is missing or stale: run make install"
    script = ("import sys, nbformat, jsonschema; deferred = getattr(sys.modules['rfc3987_syntax'], '__deferred__', "
              "False); compiled = 'lark' in sys.modules; checker = jsonschema.FormatChecker(); "
              "print(deferred, compiled, checker.conforms('https://example.org/a', 'iri'), "
              "checker.conforms('no scheme here', 'iri'), 'lark' in sys.modules, 'posenc_autograder' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "False", "True", "False", "True", "False"], done.stdout + done.stderr


def test_the_hook_loads_the_copy_in_the_checkout_whose_environment_starts(tmp_path):
    """A clone whose .venv is a link to another checkout's environment (as make bench-waits makes one) loads its own
    copy, and the installing checkout its own: the hook names no checkout."""
    for name in ("installed", "clone"):
        source = tmp_path / name / iri_deferral.SOURCE
        source.parent.mkdir(parents=True)
        source.write_text(f"def defer_iri_grammar():\n    print({name!r})\n")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "installed" / ".venv")], check=True)
    (tmp_path / "clone" / ".venv").symlink_to(tmp_path / "installed" / ".venv")
    for name in ("installed", "clone"):
        done = subprocess.run([str(tmp_path / name / ".venv" / "bin" / "python"), "-I", "-c",
                               iri_deferral.hook_line()], capture_output=True, text=True, timeout=60)
        assert (done.stdout, done.stderr) == (f"{name}\n", ""), name


def test_a_start_that_cannot_read_the_hooks_file_goes_on_silently(tmp_path):
    line = iri_deferral.hook_line(str(tmp_path / "absent.py"))
    done = subprocess.run([sys.executable, "-c", f"{line}import sys; print('started', sys.modules.get('x'))"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "started None\n", "")


def test_the_release_check_is_worked_out_again_when_a_notebook_changes(graded, capsys):
    grade.warn_if_unreleased(graded, None)
    assert "Warning" not in capsys.readouterr().err
    released = graded.path("exercises") / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
    nb = nbformat.read(released, as_version=4)
    nb.cells[0].source += "\nedited by hand"
    nbformat.write(nb, released)
    grade.warn_if_unreleased(graded, None)
    assert f"{ASSIGNMENT}/{NOTEBOOK}.ipynb" in capsys.readouterr().err


def test_opening_a_gradebook_that_exists_reads_no_schema_scripts(graded):
    """nbgrader's schema revision (alembic's scripts) is looked up only to create a new gradebook."""
    script = ("import pathlib, sys; from posenc_autograder.course import Course, open_gradebook; "
              f"gb = open_gradebook(Course(pathlib.Path({str(graded.root)!r}))).__enter__(); "
              "print(sorted(m for m in ('alembic', 'mako') if m in sys.modules))")
    done = _fresh_process(script)
    assert done.stdout.splitlines()[-1] == "[]", done.stdout + done.stderr


def test_a_new_gradebooks_schema_revision_is_alembics_read_without_importing_it():
    script = ("import sys; from posenc_autograder.course import nbgrader_schema_revision; "
              "found = nbgrader_schema_revision(); imported = 'alembic' in sys.modules; "
              "from alembic.script import ScriptDirectory; from nbgrader.dbutil import ALEMBIC_DIR; "
              "print(found, imported, ScriptDirectory(ALEMBIC_DIR).get_heads())")
    done = _fresh_process(script)
    found, imported, heads = done.stdout.strip().split(maxsplit=2)
    assert imported == "False" and heads == f"['{found}']", done.stdout + done.stderr


@pytest.mark.parametrize("scripts", [{"b": "'a'", "c": "'a'"},                       # two heads: a branch
                                     {"b": "('a', 'x')"},                            # a merge
                                     {"b": "'a'\ndepends_on = 'x'"}])                # a dependency
def test_migration_scripts_that_are_not_one_chain_are_left_to_alembic(tmp_path, scripts):
    from posenc_autograder.course import _chain_head

    (tmp_path / "a.py").write_text("revision = 'a'\ndown_revision = None\n")
    for name, down in scripts.items():
        (tmp_path / f"{name}.py").write_text(f"revision = '{name}'\ndown_revision = {down}\n")
    assert _chain_head(tmp_path) is None
    (tmp_path / "a.py").unlink()
    for name in scripts:
        (tmp_path / f"{name}.py").unlink()
    for name, down in (("a", "None"), ("b", "'a'"), ("c", "'b'")):
        (tmp_path / f"{name}.py").write_text(f"revision = '{name}'\ndown_revision = {down}\nbranch_labels = None\n")
    assert _chain_head(tmp_path) == "c"


def test_nbgraders_server_extensions_are_imported_only_when_something_asks_the_package_for_them():
    """The grader imports nbgrader's submodules without the package's __init__ (its server extensions); the package
    is still nbgrader's own, and the first name asked of it that is not a submodule runs the __init__ as usual."""
    script = ("import importlib.metadata, sys, posenc_autograder; from posenc_autograder.course import Course; "
              "from nbgrader.api import Gradebook; from nbgrader import utils; import nbgrader.preprocessors; "
              "import nbgrader; "
              "before = sorted(m for m in sys.modules if m.startswith('nbgrader.server_extensions')); "
              "print(before, nbgrader.utils is utils, nbgrader.__file__ == nbgrader.__spec__.origin); "
              "print(nbgrader._jupyter_server_extension_points(), "
              "nbgrader.__version__ == importlib.metadata.version('nbgrader'), "
              "'nbgrader.server_extensions.formgrader' in sys.modules, hasattr(nbgrader, 'no_such_name'))")
    done = _fresh_process(script)
    assert done.stdout.splitlines()[-2:] == ["[] True True", "[{'module': 'nbgrader'}] True True False"], \
        done.stdout + done.stderr


@pytest.mark.parametrize("target", ["release", "grade"])
def test_release_and_grade_write_bytecode_whatever_the_environment_says(target):
    """Each run of them otherwise compiles every module it imports again (nbgrader, SQLAlchemy, the grader)."""
    root = pathlib.Path(SRC).parent
    shows = "sh -c 'echo \"[$$PYTHONDONTWRITEBYTECODE]\"' sh"          # stands for the venv's python
    done = subprocess.run(["make", "-s", "--no-print-directory", target, f"PY={shows}", "STAMP="], cwd=root,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "[]"


def test_setuptools_is_imported_only_when_nbgraders_archive_functions_are_used(tmp_path):
    """nbgrader.utils imports setuptools.archive_util (setuptools and pkg_resources: a third of a CPU-second); the
    grader's commands import nbgrader.utils without it, and nbgrader's unzip still unpacks with the real functions."""
    import zipfile
    with zipfile.ZipFile(tmp_path / "class.zip", "w") as archive:
        archive.writestr("ann/a.ipynb", "{}")
    (tmp_path / "out").mkdir()
    script = ("import sys, posenc_autograder; from nbgrader.api import Gradebook; from nbgrader import utils; "
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('setuptools', 'pkg_resources'))); "
              f"utils.unzip({str(tmp_path / 'class.zip')!r}, {str(tmp_path / 'out')!r}); "
              "import setuptools.archive_util as real; "
              "print('setuptools' in sys.modules, real.UnrecognizedFormat.__module__, "
              "sys.modules['setuptools.archive_util'] is real, not hasattr(real, '__deferred__'))")
    done = _fresh_process(script)
    assert done.stdout.splitlines()[-2:] == ["['setuptools.archive_util']", "True setuptools.archive_util True True"], \
        done.stdout + done.stderr
    assert (tmp_path / "out" / "ann" / "a.ipynb").read_text() == "{}"


def test_the_integrity_report_imports_matplotlib_only_when_it_compares_code():
    """copydetect imports matplotlib's pyplot: a process that imports the report (the portal, every test process
    collecting the suite) pays it only when it fingerprints code."""
    script = ("import sys; from posenc_autograder.integrity import report, text; before = 'matplotlib' in sys.modules; "
              "text.fingerprint('def f(x):\\n    return x + 1\\n'); print(before, 'matplotlib' in sys.modules)")
    done = _fresh_process(script)
    assert done.stdout.splitlines()[-1:] == ["False True"], done.stdout + done.stderr


def _run_nowhere(tasks, jobs):
    """Each job as if it ran and its notebook answered nothing: no sandbox, no zygote asked for."""
    for task in tasks:
        yield Execution(task.key, {}, [], {}, 0.01, executed_notebook=task.notebook_json)


@pytest.fixture
def zygote_asked(monkeypatch):
    """Set when the run asks for the warm sandbox's zygote (none is started: the jobs run nowhere)."""
    asked = threading.Event()
    monkeypatch.delenv(warm.SWITCH, raising=False)
    monkeypatch.setattr(warm, "zygote_for", lambda files: asked.set())
    monkeypatch.setattr(warm, "_starting", None)
    monkeypatch.setattr(grade, "run_local", _run_nowhere)
    return asked


def test_a_run_with_a_notebook_to_execute_starts_its_warm_sandbox_while_the_gradebook_is_made(tmp_path, monkeypatch,
                                                                                             zygote_asked):
    """The zygote's start (~1.5 CPU-s, in its own process) overlaps the gradebook's registration and the grader's
    digests instead of holding up the first job: it is asked for before the gradebook is touched (the old code asked
    at the first job, after them)."""
    course = course_with_solvers(tmp_path, "solver")
    waited, register = [], gradebook.register
    monkeypatch.setattr(gradebook, "register", lambda *a: waited.append(zygote_asked.wait(5)) or register(*a))
    grade.grade_all(course, jobs=1, limits=Limits(), quiet=True)
    assert waited == [True]


def test_a_run_that_may_execute_nothing_starts_no_warm_sandbox_early(tmp_path, zygote_asked):
    """A notebook whose stored result is of the same file may be re-judged from its kept record, with no job (a
    points change): no zygote is started for it ahead of the jobs; --force runs every notebook, and starts it."""
    course = course_with_solvers(tmp_path, "solver")
    grade.grade_all(course, jobs=1, limits=Limits(), quiet=True)
    warm.wait_for_start()
    zygote_asked.clear()
    grade.grade_all(course, jobs=1, limits=Limits(cell_seconds=9), quiet=True)       # another grader, the same file
    warm.wait_for_start()
    assert not zygote_asked.is_set()
    grade.grade_all(course, jobs=1, limits=Limits(cell_seconds=9), quiet=True, force=True)
    warm.wait_for_start()
    assert zygote_asked.is_set()


def test_a_first_grade_remembers_that_its_database_holds_the_grades(tmp_path, monkeypatch):
    """Once make grade has stored a class's grades, the next command does not read the database to know that it holds
    them (the check is free while the URL stays). (The old code read it once more: the first grade, finding nothing
    graded before it, remembered nothing.)"""
    from posenc_autograder import cli
    from posenc_autograder.records import database

    course = course_with_solvers(tmp_path / "course", "ada")
    assert cli.main(["grade", "--no-sandbox", "--course", str(course.root)]) == 0
    monkeypatch.setattr(database, "reachable_submissions", lambda url: pytest.fail("the database was read again"))
    database.check(course)
