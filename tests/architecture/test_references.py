"""Every reference is true: each path, module, `make` target and `python -m` command that README.md or a
docstring of the grader (or of the book's extensions) names exists, and no comment cites an issue number of a
tracker that is not in the repository."""
import ast
import fnmatch
import functools
import importlib.util
import io
import pathlib
import re
import subprocess
import tokenize

import posenc_autograder
from posenc_autograder import cli, course
from posenc_autograder.authoring import release_history
from posenc_autograder.checks import variants
from posenc_autograder.intake import roster
from posenc_autograder.portal import auth, uploads
from posenc_autograder.portal.lti import registration as lti

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = pathlib.Path(posenc_autograder.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py")) + sorted((ROOT / "_ext").glob("*.py"))
# What a path is read against: the repository, the grader's folder, its package (stages are named by folder).
BASES = (ROOT, ROOT / "autograder", PACKAGE, ROOT / "tests")
TOP_FOLDERS = {p.name for base in BASES for p in base.iterdir() if p.is_dir()}
EXTENSIONS = (".py", ".md", ".csv", ".toml", ".yml", ".ipynb", ".txt", ".html", ".json", ".db", ".cfg", ".ini")
# Written by the commands (a fresh clone has none of them): the course's own constants name them.
GENERATED = (course.SUBMITTED_DIRECTORY, course.ATTEMPTS_DIRECTORY, course.AUTOGRADED_DIRECTORY,
             course.FEEDBACK_DIRECTORY, course.DOWNLOADED_DIRECTORY, course.GRADEBOOK, course.DATABASE_FILE,
             course.EXCHANGE_ROOT_FILE,
             course.NBGRADER_EXPORT,
             course.EXCHANGE_DIRECTORY,
             "autograder/reports", roster.ROSTER_FILE, variants.SECRET_FILE, auth.SECRET_FILE,
             uploads.UPLOADS_DIRECTORY, release_history.HISTORY_DIRECTORY, lti.CONFIG_FILE,
             "autograder/" + lti.PRIVATE_KEY, "autograder/" + lti.PUBLIC_KEY, "_build", ".work",
             "submitted", "autograded", "feedback", "downloaded",
             "_static/mathjax")                    # filled by _ext/offline_assets.py when the book is built
PATH = re.compile(r"(?<![\w/.$:-])((?:[\w.<>*-]+/)+[\w.<>*-]*|[\w<>*-]+\.(?:py|ipynb|yml|toml))(?![\w/])")
MODULE = re.compile(r"\bposenc_autograder(?:\.\w+)+")
PYTHON_M = re.compile(r"python -m ([\w.]+)(?: (<command>|[a-z][\w-]*))?")
MAKE = re.compile(r"`make ([a-z][\w-]*)|^\s*make ([a-z][\w-]*)", re.M)
ISSUE = re.compile(r"\b[Ii]ssues? \d+|(?<![\w/])#\d{2,}\b")


def readme() -> str:
    return (ROOT / "README.md").read_text()


def docstrings() -> dict[str, str]:
    """'file:line' -> docstring, for every module, class and function of the grader and of _ext."""
    return {f"{path.relative_to(ROOT)}:{line}": text for path in SOURCES for line, text in _docstring_lines(path)
            if text}


# Each test reads the same files: they are parsed and tokenised once a run (the tests only read what these return).
@functools.cache
def texts() -> dict[str, str]:
    return {"README.md": readme(), **docstrings()}


def as_glob(path: str) -> str:
    return re.sub(r"<[^>]*>|\bNN_\w+", "*", path).rstrip("/")


def generated(path: str) -> bool:
    clean = path.strip("/")
    return any(clean == g or clean.startswith(g.rstrip("/") + "/") for g in GENERATED)


@functools.cache
def tracked_names() -> frozenset[str]:
    """The names of the repository's own files and folders (not the environment's, the book's build or a cache)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return frozenset(part for name in listed.decode().split("\0") if name for part in pathlib.PurePath(name).parts)


def path_exists(path: str) -> bool:
    pattern = as_glob(path)
    if "/" not in pattern:                           # a bare file name: one of the repository's files
        return any(fnmatch.fnmatchcase(name, pattern) for name in tracked_names())
    return any(any(base.glob(pattern)) for base in BASES)


def named_paths(text: str) -> set[str]:
    """Path-like words: a known top folder (or a placeholder for one) first, or a bare source file name. A path
    that starts with another placeholder ("<lms>-<assignment>/...") is relative to a folder the sentence names."""
    found = set()
    for word in PATH.findall(text):
        word = word.rstrip(".,;:)")
        first = word.split("/", 1)[0]
        if word.startswith(("http", "www.")) or "//" in word or not word:
            continue
        if ("/" in word and first in TOP_FOLDERS) or ("/" not in word and word.endswith(EXTENSIONS)):
            found.add(word)
    return found


def module_exists(dotted: str) -> bool:
    """A module, or an attribute of one (a function, class or constant)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        name = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is not None:
            target = importlib.import_module(name)
            for attribute in parts[cut:]:
                if not hasattr(target, attribute):
                    return False
                target = getattr(target, attribute)
            return True
    return False


def runnable(module: str, command: str | None) -> bool:
    if module == "posenc_autograder":
        return command in (None, "<command>") or command in cli.COMMANDS
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return False
    source = pathlib.Path(spec.origin).read_text()
    return spec.submodule_search_locations is not None or '__name__ == "__main__"' in source


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def test_every_named_path_exists():
    missing = sorted(f"{where}: {path}" for where, text in texts().items() for path in named_paths(text)
                     if not generated(path) and not path_exists(path))
    assert missing == []


@functools.cache
def comments() -> dict[str, str]:
    """'file:line' -> comment, for every comment of the grader and of _ext that names a module."""
    return {f"{path.relative_to(ROOT)}:{line}": comment for path in SOURCES
            for line, comment in _comments_matching(path, MODULE)}


def test_every_named_module_exists():
    missing = sorted(f"{where}: {name}" for where, text in {**texts(), **comments()}.items()
                     for name in MODULE.findall(text) if not module_exists(name))
    assert missing == []


def test_every_python_m_command_runs_something():
    wrong = sorted(f"{where}: python -m {module} {command}".rstrip() for where, text in texts().items()
                   for module, command in PYTHON_M.findall(text) if not runnable(module, command or None))
    assert wrong == []


def whole_texts() -> dict[str, str]:
    """The README and each source file's whole text: its docstrings, and its comments and strings too, unparsed."""
    return {"README.md": readme(), **{str(path.relative_to(ROOT)): path.read_text() for path in SOURCES}}


def test_every_make_target_named_exists():
    """Read in the files' whole text, where texts() holds their docstrings only: parsing every file for them cost
    this test ~0.7 CPU-s of its ~0.75 in a run of it alone (make test-fast's)."""
    targets = make_targets()
    wrong = sorted(f"{where}: make {a or b}" for where, text in whole_texts().items() for a, b in MAKE.findall(text)
                   if (a or b) not in targets)
    assert wrong == []


def test_no_comment_cites_an_issue_number():
    citing = []
    for path in SOURCES + sorted((ROOT / "tests").rglob("*.py")) + [ROOT / "Makefile"]:
        if path.suffix == ".py":
            comments = _comments_matching(path, ISSUE) + _docstring_lines(path)
        else:
            comments = [(i + 1, line) for i, line in enumerate(path.read_text().splitlines())
                        if line.lstrip().startswith("#")]
        citing += [f"{path.relative_to(ROOT)}:{line}" for line, comment in comments if ISSUE.search(comment)]
    assert citing == []


@functools.cache
def _docstring_lines(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, docstring) of the module, each class and each function of a Python file ("" where none)."""
    tree = ast.parse(path.read_text())
    return [(getattr(node, "lineno", 1), ast.get_docstring(node, clean=False) or "") for node in _statements(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]


def _statements(node):
    """The node and every statement under it (a docstring's owner is one; expressions, most of a tree, hold none)."""
    yield node
    for field in ("body", "orelse", "finalbody", "handlers", "cases"):
        children = getattr(node, field, None)
        if isinstance(children, list):
            for child in children:
                yield from _statements(child)


def _comments_matching(path: pathlib.Path, pattern: re.Pattern) -> list[tuple[int, str]]:
    """(line, comment) of the file's comments that pattern finds something in. A comment runs from one of its
    line's '#' to the line's end, so a file where the pattern finds nothing from any '#' to its line's end has none,
    and is not tokenised."""
    if not any(pattern.search(line[start:]) for line in path.read_text().split("\n") for start in _hashes(line)):
        return []
    return [(line, comment) for line, comment in _comment_lines(path) if pattern.search(comment)]


def _hashes(line: str):
    start = line.find("#")
    while start >= 0:
        yield start
        start = line.find("#", start + 1)


@functools.cache
def _comment_lines(path: pathlib.Path) -> list[tuple[int, str]]:
    return [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            if t.type == tokenize.COMMENT]


def test_the_checks_find_a_planted_stale_reference():
    planted = ("See `tests/test_nothing_here.py`, posenc_autograder.grade, `make nothing` and "
               "python -m posenc_autograder.plan.")
    assert [p for p in named_paths(planted) if not path_exists(p)] == ["tests/test_nothing_here.py"]
    assert [m for m in MODULE.findall(planted) if not module_exists(m)] == ["posenc_autograder.grade",
                                                                            "posenc_autograder.plan"]
    assert [a for a, _ in MAKE.findall(planted) if a not in make_targets()] == ["nothing"]
    assert not runnable("posenc_autograder.plan", None)
    assert ISSUE.search("# see issue 23") and not ISSUE.search("# the 23 cases")


def test_a_comment_or_docstring_the_pattern_finds_is_found_wherever_it_stands(tmp_path):
    """The checks tokenise only a file with a '#' the pattern finds something after, and walk only statements."""
    planted = tmp_path / "planted.py"
    planted.write_text('y = "#"; x = 1#12\nif x:\n    def f():\n        try:\n            pass\n        finally:\n'
                       '            class C:\n                """Issue 3."""\ns = "# issue 4"\n')
    assert _comments_matching(planted, ISSUE) == [(1, "#12")]
    assert (7, "Issue 3.") in _docstring_lines(planted)
    quiet = tmp_path / "quiet.py"
    quiet.write_text('s = "#"  # the 23 cases\n')
    assert _comments_matching(quiet, ISSUE) == [] and _comments_matching(quiet, re.compile("23")) == [
        (1, "# the 23 cases")]
