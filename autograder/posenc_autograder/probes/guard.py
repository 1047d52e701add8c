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
import ctypes
import sys
import threading
import types

import numpy as np

_SNAPSHOT: list[tuple[dict, dict]] = []
_length = len             # restore() runs when a cell may have replaced or deleted builtins.len
_TAGS: list = []          # each kept namespace's version tag (read live), where this interpreter's dicts have one
_LEFT: list[int] = []     # each tag as snapshot() or restore() last left the namespace: holding what was kept


# Where CPython keeps a dict's length and its version tag (PEP 509's ma_version_tag): after the object's header
LENGTH_AT = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
TAG_AT = LENGTH_AT + ctypes.sizeof(ctypes.c_ssize_t)


def _tag_of(namespace: dict):
    """The dict's version tag, read live."""
    return ctypes.c_uint64.from_address(id(namespace) + TAG_AT)


def _tags_mark_every_change() -> bool:
    """Whether this interpreter's dicts carry such a tag, and every change of a dict changes it (tried on a dict of
    its own): then a namespace whose tag restore() left is unchanged since and needs no restoring. Elsewhere (another
    implementation or layout, a Python whose tag marks no change) every namespace is restored every time."""
    if sys.implementation.name != "cpython":
        return False
    trial = {"a": 1, "b": 2, "c": 3}
    if ctypes.c_ssize_t.from_address(id(trial) + LENGTH_AT).value != 3:
        return False
    tag = _tag_of(trial)
    seen = [tag.value]
    for change in (lambda d: d.__setitem__("a", 4), lambda d: d.__setitem__("d", 5), lambda d: d.__delitem__("d"),
                   lambda d: d.update(b=6), lambda d: d.setdefault("e", 7), lambda d: d.pop("e"),
                   lambda d: d.popitem(), dict.clear):
        change(trial)
        if tag.value in seen:
            return False
        seen.append(tag.value)
    return True


def _namespaces() -> list[dict]:
    package = __name__.rsplit(".", 1)[0]
    probes = [module.__dict__ for name, module in list(sys.modules.items())
              if module is not None and (name == package or name.startswith(package + "."))]
    return [np.__dict__, np.linalg.__dict__, np.random.__dict__, builtins.__dict__, *probes]


def snapshot() -> None:
    """Keep a copy of every namespace the probes rely on (call before any student code runs)."""
    tagged = _tags_mark_every_change()
    _SNAPSHOT[:] = [(namespace, dict(namespace)) for namespace in _namespaces()]
    _TAGS[:] = [_tag_of(namespace) for namespace, _ in _SNAPSHOT] if tagged else []
    _LEFT[:] = [tag.value for tag in _TAGS]


def restore() -> None:
    """Put every kept namespace back as it was at snapshot() (nothing happens before one is taken). A namespace whose
    version tag is the one it was left with is unchanged since, and left as it is: a probe restores after every call
    of student code, ~200 times a notebook, and putting back the ~1,200 kept names each time cost ~60 us."""
    if not _SNAPSHOT:
        return
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)
    threading.setprofile(None)
    tags, left = _TAGS, _LEFT
    index = -1
    for namespace, kept in _SNAPSHOT:
        index += 1                             # no builtin (enumerate, zip) a cell may have replaced
        if tags and tags[index].value == left[index]:
            continue
        namespace.update(kept)
        # Every kept name is back, so a namespace longer than its copy holds names added since; looking for them
        # only then keeps the common case (nothing added) to one update in C (numpy alone has 500 names).
        if _length(namespace) != _length(kept):
            for name in namespace.keys() - kept.keys():
                if not _imported_since(namespace, name):
                    del namespace[name]
        if tags:
            left[index] = tags[index].value


def _imported_since(namespace: dict, name: str) -> bool:
    """Whether the name is the namespace's own submodule, imported after the snapshot (numpy imports np.ma on first
    use, from np.median, say): removed, it would be imported again on every use, forever (a RecursionError)."""
    value, owner = namespace[name], namespace.get("__name__")
    return isinstance(value, types.ModuleType) and isinstance(owner, str) \
        and sys.modules.get(f"{owner}.{name}") is value


def clear() -> None:
    """Forget the snapshot (tests that took one in-process)."""
    _SNAPSHOT.clear()
    _TAGS.clear()
    _LEFT.clear()
