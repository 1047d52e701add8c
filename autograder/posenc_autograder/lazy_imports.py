"""Start-up costs paid only by the code that needs them.

jsonschema's IRI grammars: iri_deferral.py (every Python of the environment defers them; the grader's processes
again here, should the environment lack that hook).

nbgrader's package module imports its four Jupyter Server extensions (tornado handlers, the exchange: about a third
of a CPU-second) for the server to find them; the grader uses only its submodules (api, converters, preprocessors).
Imported through defer_nbgrader_init's finder, the package is the real one (its path, spec and files) with its
__init__ run only when a name that is not a submodule is first asked of it (a server's discovery, __version__).

nbgrader.utils imports three archive functions from setuptools.archive_util, which imports setuptools and its
pkg_resources (every installed distribution scanned: a third of a CPU-second for each command that opens a
gradebook); only nbgrader's zip collect calls them. Stand-ins take their names until one is called or another name
of the module is asked for; then the real module is imported and answers.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

ARCHIVES = "setuptools.archive_util"
ARCHIVE_FUNCTIONS = ("unpack_archive", "unpack_tarfile", "unpack_zipfile")      # what nbgrader.utils imports


def defer_archive_util() -> None:
    """Put the stand-in in place, unless setuptools is absent or already imported."""
    if ARCHIVES in sys.modules or "setuptools" in sys.modules or importlib.util.find_spec("setuptools") is None:
        return
    stand_in = types.ModuleType(ARCHIVES, "stands in for setuptools.archive_util until it is first used")

    def real() -> types.ModuleType:
        if sys.modules.get(ARCHIVES) is stand_in:
            del sys.modules[ARCHIVES]
        return importlib.import_module(ARCHIVES)

    def deferred(name: str):
        def call(*args: Any, **kwargs: Any) -> Any:
            return getattr(real(), name)(*args, **kwargs)
        call.__name__ = call.__qualname__ = name
        return call

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):          # the import system's questions (__path__): a plain module's answers
            raise AttributeError(name)
        return getattr(real(), name)

    for name in ARCHIVE_FUNCTIONS:
        setattr(stand_in, name, deferred(name))
    stand_in.__getattr__ = __getattr__                # type: ignore[method-assign]  # any other name: the real one's
    stand_in.__deferred__ = True                      # type: ignore[attr-defined]
    sys.modules[ARCHIVES] = stand_in


NBGRADER = "nbgrader"


class _DeferredInit(importlib.abc.MetaPathFinder):
    """Finds the nbgrader package once (then leaves sys.meta_path) as the normal finders do, with a loader that
    runs its __init__ only when first needed."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != NBGRADER:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            return spec
        spec.loader = _InitWhenAsked(spec.loader)
        return spec


class _InitWhenAsked(importlib.abc.Loader):
    """The package's own loader, but for running its __init__: that waits for the first name asked of the module
    that none of its submodules is (asking for a submodule imports it, as without the deferral)."""

    def __init__(self, real: importlib.abc.Loader):
        self.real = real

    def create_module(self, spec):
        return self.real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        real = self.real

        def __getattr__(name: str) -> Any:
            if not name.startswith("__") and importlib.util.find_spec(f"{module.__name__}.{name}") is not None:
                raise AttributeError(name)
            del module.__getattr__
            real.exec_module(module)
            return getattr(module, name)

        module.__getattr__ = __getattr__          # type: ignore[method-assign]  # a module's own attribute hook

    def __getattr__(self, name: str) -> Any:      # resource readers and the rest: the real loader's
        return getattr(self.real, name)


def defer_nbgrader_init() -> None:
    """Put the finder first, unless nbgrader is imported already (a Jupyter server) or the finder is in place."""
    if NBGRADER not in sys.modules and not any(isinstance(f, _DeferredInit) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferredInit())
