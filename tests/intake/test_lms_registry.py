"""Each LMS is one module in intake/lms/, and collect, the grade files, the roster check and the feedback bundles
loop over the registry: a new LMS written as one module file in a folder of its own (found by discovery, nothing
else edited) is detected, collected with its notes and attempt labels, exported with its settings, checked for a
missing setting and given its return names, whatever its place in the registry."""
import io
import sys
import textwrap

import pytest
from fixture_submissions import make_course
from lms_zips import CANVAS, NB, make_zip, notebook, roster_rows

from posenc_autograder.course import Course
from posenc_autograder.intake import lms
from posenc_autograder.intake.collect import collect
from posenc_autograder.reports import lms_bundles, lms_exports, roster_check

# A made-up LMS: "TINY-<user>-<login>-<try>__<file>", and beside each attempt its note "TINY-<user>-<login>-<try>.note"
# ("user: ...", "name: ...", "day: YYYY-MM-DD"). Its grade file needs a course code from lms.toml's [tinylms].
TINY_MODULE = '''
"""A made-up LMS for a test."""
import datetime as dt
import re

from posenc_autograder.intake.lms.base import Entry, GradeFile, NoteFacts, Notes, basename

NAME = "tinylms"
TITLE = "Tiny"
FALLBACK = False
TAKES_BACK = "the return box"
PREFIX = re.compile(r"TINY-(?P<user>[0-9]+)-(?P<login>[a-z]+)-(?P<try>[0-9]+)")
NOTE_LINE = re.compile(r"^(?P<key>user|name|day): (?P<value>.+)$", re.M)


def note_attempt(member):
    m = PREFIX.fullmatch(basename(member).removesuffix(".note"))
    return m.group(0) if m and member.endswith(".note") else None


def note_facts(text):
    said = {m["key"]: m["value"].strip() for m in NOTE_LINE.finditer(text)}
    day = dt.date.fromisoformat(said["day"]) if "day" in said else None
    return NoteFacts(said.get("user"), said.get("name"), day)


NOTES = Notes("Tiny's note", max_bytes=1000, attempt_of=note_attempt, facts=note_facts)


def context(notebooks, notes):
    return {"notes": notes}


def parse(member, expected, notes=None, **_):
    m = PREFIX.match(member)
    if not m or not member[m.end():].startswith("__") or m.end() + 2 == len(member):
        return None
    facts = note_facts((notes or {}).get(m.group(0), ""))
    return Entry(member, NAME, m["login"], facts.name or m["login"], m["user"], member[m.end() + 2:],
                 (int(m["try"]),), dt.datetime(2026, 11, 20, 12, 0), prefix=m.group(0))


def attempt_label(entry):
    return f"try {entry.attempt[0]}"


def return_name(row, notebook):
    return f"{row['lms_prefix']}/{notebook}.html"


def grade_files(rows, scores, settings):
    return [GradeFile(f"grades-tinylms-{settings.get('course_code', 'none')}.csv", ["user", "points"],
                      [{"user": row["lms_user_id"], "points": scores[key][0]} for key, row in sorted(rows.items())])]


def missing_settings(settings, assignments):
    return [] if "course_code" in settings else sorted(assignments)


def missing_setting(assignment, settings_file):
    return f"Tiny needs the course code of {assignment} in {settings_file}"
'''


@pytest.fixture(params=["first", "last"])
def registered(request, tmp_path, monkeypatch):
    """The new LMS as a module file in a folder of its own, found by the registry's discovery, first or last in
    the registry: detection must not depend on its place."""
    folder = tmp_path / "more_lms"
    folder.mkdir()
    (folder / "tinylms.py").write_text(textwrap.dedent(TINY_MODULE))
    monkeypatch.setattr(lms, "__path__", [*lms.__path__, str(folder)])
    monkeypatch.delitem(sys.modules, f"{lms.__name__}.tinylms", raising=False)
    found = lms.discover()
    monkeypatch.delitem(sys.modules, f"{lms.__name__}.tinylms")       # undone at teardown with the path
    assert set(found) == {"tinylms", *lms.REGISTRY}
    entries = [("tinylms", found.pop("tinylms"))] + list(found.items())
    if request.param == "last":
        entries = entries[1:] + entries[:1]
    monkeypatch.setattr(lms, "REGISTRY", dict(entries))


def test_a_new_lms_is_one_module_in_its_folder(tmp_path, registered):
    course = Course(make_course(tmp_path / "course"))
    download = {f"TINY-41-ann-1__{NB}.ipynb": notebook("ann first"), f"TINY-41-ann-2__{NB}.ipynb": notebook("ann"),
                "TINY-41-ann-2.note": b"user: 41\nname: Ann Archer\nday: 2026-11-20\n",
                f"TINY-42-bo-1__{NB}.ipynb": notebook("bo"), "TINY-42-bo-1.note": b"user: 99\nday: 2026-10-01\n",
                f"TINY-43-cy-1__{NB}.ipynb": notebook("cy"), "TINY-43-cy-1.note": b"name: Cy\n",
                "copy/TINY-43-cy-1.note": b"name: Somebody Else\n"}
    out = io.StringIO()
    assert collect(course, make_zip(tmp_path / "tiny.zip", download), NB, out=out) == 0
    said = out.getvalue()
    rows = roster_rows(course)
    assert {s: (r["lms"], r["lms_user_id"], r["name"], r["attempt"]) for s, r in rows.items()} == {
        "ann": ("tinylms", "41", "Ann Archer", "try 2"), "bo": ("tinylms", "42", "bo", "try 1"),
        "cy": ("tinylms", "43", "cy", "try 1")}
    assert "Tiny's note names '99', the file name '42'" in said
    assert "Tiny's note says it was submitted on 2026-10-01" in said
    assert said.count("files are named as Tiny's note of this attempt; none was believed") == 2
    assert "not a notebook" not in said                      # its notes were read as notes
    assert lms.detect(list(CANVAS), {NB}) == "canvas"       # the others are still told apart

    people = {(s, NB): r for s, r in rows.items()}
    scores = {key: (3.0, 4.0, True) for key in people}
    [sheet] = lms_exports.write_lms(course, "tinylms", scores, people)
    assert sheet.name == "grades-tinylms-none.csv"
    assert sheet.read_text().splitlines() == ["user,points", "41,3", "42,3", "43,3"]
    assert lms_exports.missing_settings(course, "tinylms", [NB]) == [NB]
    course.path(lms_exports.LMS_SETTINGS).write_text('[tinylms]\ncourse_code = "PE101"\n')
    assert lms_exports.missing_settings(course, "tinylms", [NB]) == []
    [sheet] = lms_exports.write_lms(course, "tinylms", scores, people)
    assert sheet.name == "grades-tinylms-PE101.csv"
    assert lms_bundles.bundle_entry(rows["ann"], "ann", NB) == ("tinylms", f"TINY-41-ann-2/{NB}.html")


def test_the_roster_check_asks_the_new_lms_for_its_missing_settings(tmp_path, registered):
    course = Course(make_course(tmp_path / "course"))
    download = {f"TINY-41-ann-1__{NB}.ipynb": notebook("ann")}
    assert collect(course, make_zip(tmp_path / "tiny.zip", download), NB, out=io.StringIO()) == 0
    findings = roster_check.class_findings(course, [])
    assert findings[-1] == roster_check.Finding(roster_check.Gap.NO_LMS_SETTING, assignment=NB, lms="tinylms")
    assert findings[-1].text(course) == f"Tiny needs the course code of {NB} in {lms_exports.LMS_SETTINGS}"
