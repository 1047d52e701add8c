"""Start-up costs paid only by the code that needs them.

jsonschema (imported by nbformat and nbgrader) loads the optional `rfc3987_syntax` package when it is
installed, and that package compiles some forty Earley grammars at import: seconds of CPU for every
command, spent to check the "iri" string format, which neither the notebook schema nor anything we
validate uses. A stand-in module takes its place until the checker is first called; then the real
package is imported and answers, so validation stays exactly what it was.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import types

IRI_GRAMMAR = "rfc3987_syntax"


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
