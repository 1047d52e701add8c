"""Each LMS is one module in intake/lms/, and collect, the grade files and the feedback bundles loop over the
registry: a new LMS added in a test (one module, its registry entry) is detected, collected, exported and given
its return names, whatever its place in the registry."""
import io
import re
import types

import pytest

from fixture_submissions import make_course
from lms_zips import CANVAS, NB, make_zip, notebook, roster_rows
from posenc_autograder.course import Course
from posenc_autograder.intake import lms
from posenc_autograder.intake.collect import collect
from posenc_autograder.intake.lms.base import Entry, GradeFile
from posenc_autograder.reports import lms_bundles, lms_exports

TINY = re.compile(r"TINY-(?P<user>\d+)-(?P<login>[a-z]+)__")


def _parse(member, expected, **_):
    m = TINY.match(member)
    if not m or m.end() == len(member):
        return None
    return Entry(member, "tinylms", m["login"], m["login"].title(), m["user"], member[m.end():], (0,), None,
                 prefix=m.group(0)[:-2])


def tiny_module():
    return types.SimpleNamespace(
        NAME="tinylms", FALLBACK=False, parse=_parse, attempt_label=lambda entry: "the only one",
        return_name=lambda row, notebook: f"{row['lms_prefix']}/{notebook}.html",
        grade_files=lambda rows, scores, column_of: [GradeFile(
            "grades-tinylms.csv", ["user", "points"],
            [{"user": row["lms_user_id"], "points": scores[key][0]} for key, row in sorted(rows.items())])])


@pytest.fixture(params=["first", "last"])
def registered(request, monkeypatch):
    """The new LMS's module in the registry, first or last: detection must not depend on its place."""
    others = dict(lms.REGISTRY)
    entries = [("tinylms", tiny_module())] + list(others.items())
    if request.param == "last":
        entries = entries[1:] + entries[:1]
    monkeypatch.setattr(lms, "REGISTRY", dict(entries))


def test_a_new_lms_is_one_module_in_the_registry(tmp_path, registered):
    course = Course(make_course(tmp_path / "course"))
    download = {f"TINY-41-ann__{NB}.ipynb": notebook("ann"), f"TINY-42-bo__{NB}.ipynb": notebook("bo")}
    assert collect(course, make_zip(tmp_path / "tiny.zip", download), NB, out=io.StringIO()) == 0
    rows = roster_rows(course)
    assert {s: (r["lms"], r["lms_user_id"], r["attempt"]) for s, r in rows.items()} == {
        "ann": ("tinylms", "41", "the only one"), "bo": ("tinylms", "42", "the only one")}
    assert lms.detect(list(CANVAS), {NB}) == "canvas"                   # the others are still told apart
    people = {(s, NB): r for s, r in rows.items()}
    [sheet] = lms_exports.write_lms(course, "tinylms", {key: (3.0, 4.0, True) for key in people}, people)
    assert sheet.read_text().splitlines() == ["user,points", "41,3", "42,3"]
    assert lms_bundles.bundle_entry(rows["ann"], "ann", NB) == ("tinylms", f"TINY-41-ann/{NB}.html")
