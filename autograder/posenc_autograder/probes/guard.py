"""What the probes use, kept as it was before any student cell ran.

Probes share the student's process, so a cell can replace a probe's function, the record function,
numpy's functions or builtins, or install a tracing hook. snapshot() (called by the shell runner before
the first cell) keeps the namespaces of numpy, builtins and this package; restore() puts them back and
removes tracing and profiling hooks. The runner calls it before each probe and the probes after each
call of student code, so what a probe records is what the student's functions did, measured with the
probe's own tools. This narrows tampering, it does not make it impossible (code in the same process can
reach anything): the grade rests on the trusted side judging raw outputs, never on a verdict from here.
"""
from __future__ import annotations

import builtins
import sys
import threading
import types

import numpy as np

_SNAPSHOT: list[tuple[dict, dict]] = []
_length = len             # restore() runs when a cell may have replaced or deleted builtins.len


def _namespaces() -> list[dict]:
    package = __name__.rsplit(".", 1)[0]
    probes = [module.__dict__ for name, module in list(sys.modules.items())
              if module is not None and (name == package or name.startswith(package + "."))]
    return [np.__dict__, np.linalg.__dict__, np.random.__dict__, builtins.__dict__, *probes]


def snapshot() -> None:
    """Keep a copy of every namespace the probes rely on (call before any student code runs)."""
    _SNAPSHOT[:] = [(namespace, dict(namespace)) for namespace in _namespaces()]


def restore() -> None:
    """Put every kept namespace back as it was at snapshot() (nothing happens before one is taken)."""
    if not _SNAPSHOT:
        return
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)
    threading.setprofile(None)
    for namespace, kept in _SNAPSHOT:
        namespace.update(kept)
        # Every kept name is back, so a namespace longer than its copy holds names added since; looking for them
        # only then keeps the common case (nothing added) to one update in C (numpy alone has 500 names).
        if _length(namespace) != _length(kept):
            for name in namespace.keys() - kept.keys():
                if not _imported_since(namespace, name):
                    del namespace[name]


def _imported_since(namespace: dict, name: str) -> bool:
    """Whether the name is the namespace's own submodule, imported after the snapshot (numpy imports np.ma on first
    use, from np.median, say): removed, it would be imported again on every use, forever (a RecursionError)."""
    value, owner = namespace[name], namespace.get("__name__")
    return isinstance(value, types.ModuleType) and isinstance(owner, str) \
        and sys.modules.get(f"{owner}.{name}") is value


def clear() -> None:
    """Forget the snapshot (tests that took one in-process)."""
    _SNAPSHOT.clear()
