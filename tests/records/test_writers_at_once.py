"""What is kept between runs (a stamp, a generated assignment's entry) may be written by two processes at once:
make grade and the portal's worker both register assignments and keep stamps. Each writer puts a whole file in
place, and neither fails because the other was writing."""
import os
import stat

import pytest

from posenc_autograder.authoring import generation
from posenc_autograder.course import Course
from posenc_autograder.records import stamps


def other_writer_renames_first(monkeypatch, other):
    """The first rename waits while `other` (a second writer) does its whole write, rename included."""
    real, started = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if not started:
            started.append(True)
            other()
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def leftovers(folder):
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith((".partial", ".tmp")))


def test_two_processes_keeping_the_same_stamp_at_once_both_finish(tmp_path, monkeypatch):
    course = Course(root=tmp_path)
    other_writer_renames_first(monkeypatch, lambda: stamps.remember(course, "release-check", "b", "theirs"))
    stamps.remember(course, "release-check", "a", "ours")          # the old shared '.tmp' name: FileNotFoundError
    assert stamps.recall(course, "release-check", "a") == "ours"
    assert leftovers(course.work) == []


def test_two_processes_keeping_the_same_generated_entry_at_once_both_finish(tmp_path, monkeypatch):
    course = Course(root=tmp_path)
    ours = generation.Generated({"a.ipynb": b'{"cells": []}'}, {})
    theirs = generation.Generated({"a.ipynb": b'{"cells": [1]}'}, {})
    other_writer_renames_first(monkeypatch, lambda: generation._keep(course, "pe", "key-b", theirs, "unweighed-b", {}))
    generation._keep(course, "pe", "key-a", ours, "unweighed-a", {})  # old shared '.partial' name: FileNotFoundError
    assert generation._recall(course, "pe", "key-a")[0] == ours
    assert generation._recall(course, "pe", "key-b") is None
    assert leftovers(course.work) == []


def test_a_replaced_file_keeps_its_mode_and_a_failed_write_leaves_the_old_one_and_no_partial(tmp_path, monkeypatch):
    from posenc_autograder.course import write_replacing

    path = tmp_path / "kept.json"
    path.write_bytes(b"old")
    path.chmod(0o640)
    write_replacing(path, b"new")
    assert path.read_bytes() == b"new" and stat.S_IMODE(path.stat().st_mode) == 0o640

    def refuse(src, dst, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_replacing(path, b"never")
    assert path.read_bytes() == b"new" and leftovers(tmp_path) == []
