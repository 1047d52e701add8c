"""jsonschema's IRI grammars deferred in every Python of the course's environment, not only in the grader's.

jsonschema (imported by nbformat and nbgrader) loads the optional `rfc3987_syntax` package when it is installed, and
that package compiles some forty Earley grammars at import: about 2 CPU-s a process, spent to check the "iri" string
format, which neither the notebook schema nor anything we validate uses. A stand-in module takes its place until the
checker is first called; then the real package is imported and answers, so validation stays exactly what it was.

The grader's package puts the stand-in in place as it is imported (lazy_imports.py), but jupyter-book and nbgrader's
command line (validate, generate_assignment, export, a Jupyter server) import jsonschema before any code of ours runs.
So `make install` writes HOOK_FILE into the environment's site-packages: Python's site module runs its one line at
every start, which loads this file by its path (not the package, whose __init__ sets the grader's own OpenBLAS
threads) and puts the stand-in in place. The path is the checkout's copy, found from the environment's prefix (the
Makefile's environment is the checkout's .venv), not an absolute path: a clone whose .venv links to another
checkout's environment loads its own copy. This module imports only what a Python start has imported already; a start
that cannot read it (a sandbox that does not mount the course) goes on as before, silently.

    python -c 'from posenc_autograder import iri_deferral; iri_deferral.install_hook()'   # into this Python's
"""
from __future__ import annotations

import importlib
import importlib.util
import pathlib
import sys
import types

IRI_GRAMMAR = "rfc3987_syntax"
HOOK_FILE = "posenc-defer-iri-grammar.pth"
SOURCE = "autograder/posenc_autograder/iri_deferral.py"          # this file, in the checkout


def defer_iri_grammar() -> None:
    """Put the stand-in in place, unless the package is absent or already imported."""
    if IRI_GRAMMAR in sys.modules or importlib.util.find_spec(IRI_GRAMMAR) is None:
        return
    stand_in = types.ModuleType(IRI_GRAMMAR, "stands in for rfc3987_syntax until its checker is first called")

    def is_valid_syntax(term: str, value: str) -> bool:
        real = _import_real(stand_in)
        return real.is_valid_syntax(term, value)

    stand_in.is_valid_syntax = is_valid_syntax       # type: ignore[attr-defined]  # a module takes attributes
    stand_in.__deferred__ = True                      # type: ignore[attr-defined]
    sys.modules[IRI_GRAMMAR] = stand_in


def _import_real(stand_in: types.ModuleType) -> types.ModuleType:
    if sys.modules.get(IRI_GRAMMAR) is stand_in:
        del sys.modules[IRI_GRAMMAR]
    real = importlib.import_module(IRI_GRAMMAR)
    stand_in.is_valid_syntax = real.is_valid_syntax  # type: ignore[attr-defined]  # later calls go straight to it
    return real


def hook_line(source: str = SOURCE) -> str:
    """The .pth line that loads `source` (this file, by its path in the checkout that holds the environment) and
    defers the grammars; any failure is silent (a .pth line that raises prints a traceback at every start). Its names
    live in a dict of their own, not in site's."""
    code = ("try:\n"
            "    import importlib.util, os, sys\n"
            f"    path = os.path.join(os.path.dirname(sys.prefix), {source!r})\n"
            "    spec = importlib.util.spec_from_file_location('_posenc_iri_deferral', path)\n"
            "    module = importlib.util.module_from_spec(spec)\n"
            "    spec.loader.exec_module(module)\n"
            "    module.defer_iri_grammar()\n"
            "except Exception:\n"
            "    pass\n")
    return f"import sys; exec({code!r}, {{}})\n"


def install_hook() -> pathlib.Path:
    """Write the hook into the site-packages of the Python running this, whose environment must lie in a checkout."""
    import sysconfig
    if not (pathlib.Path(sys.prefix).parent / SOURCE).is_file():
        raise SystemExit(f"{sys.prefix} is not the .venv of a checkout of the course: its hook would find no {SOURCE}")
    hook = pathlib.Path(sysconfig.get_paths()["purelib"]) / HOOK_FILE
    hook.write_text(hook_line())
    return hook
