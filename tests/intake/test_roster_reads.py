"""roster.csv read once per change (the portal reads it for every page and status in a rush): what load() returns is
always what parsing the file now would give, whoever wrote it, and a reader never sees half a file."""
import csv
import os
import threading

from posenc_autograder.course import Course
from posenc_autograder.intake import roster

TRICKY = {("ana", "pe"): {"student_id": "ana", "assignment": "pe", "name": "=HYPERLINK(1)", "late": "no",
                          "attempt": "'=already quoted", "source_zip": "a,b \"c\"\nd", "sha256": 3},
          ("ben", "pe"): {"student_id": "ben", "assignment": "pe", "name": "-1", "submitted_at": 0.5, "late": None}}


def course_at(tmp_path) -> Course:
    (tmp_path / "autograder").mkdir()
    return Course(tmp_path)


def parsed(course: Course) -> dict:
    """The file parsed now, as load() did before it kept anything."""
    with open(roster.path(course), newline="") as src:
        rows = [{k: roster._unquote(v or "") for k, v in row.items() if k in roster.FIELDS}
                for row in csv.DictReader(src)]
    return {(r["student_id"], r["assignment"]): r for r in rows}


def test_what_save_keeps_is_what_the_file_parses_to(tmp_path):
    course = course_at(tmp_path)
    roster.save(course, TRICKY)
    assert roster.load(course) == parsed(course)
    assert roster.load(course)[("ana", "pe")]["name"] == "=HYPERLINK(1)"       # the file holds it quoted
    assert "'=HYPERLINK(1)" in roster.path(course).read_text()
    rows = roster.load(course)                     # saved again as read, one row changed: the kept lines reused
    rows[("ben", "pe")] = {**rows[("ben", "pe")], "late": "yes"}
    roster.save(course, rows)
    assert roster.load(course) == parsed(course)
    assert roster.load(course)[("ben", "pe")]["late"] == "yes"


def test_a_change_by_another_writer_is_read(tmp_path):
    course = course_at(tmp_path)
    roster.save(course, TRICKY)
    assert roster.load(course)[("ana", "pe")]["late"] == "no"
    file = roster.path(course)
    before = file.stat()
    text = file.read_text().replace(",no,", ",ok,")           # the same size, written in place (same inode)
    with open(file, "w", newline="") as out:
        out.write(text)
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert roster.load(course)[("ana", "pe")]["late"] == "ok"
    with open(file, "w", newline="") as out:                  # again, within the same tick: the same time stamp
        out.write(text.replace(",ok,", ",OK,"))
    os.utime(file, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert roster.load(course)[("ana", "pe")]["late"] == "OK"        # a file changed this recently is parsed again


def test_a_copy_changed_by_its_caller_changes_nothing_kept(tmp_path):
    course = course_at(tmp_path)
    roster.save(course, TRICKY)
    rows = roster.load(course)
    rows[("ana", "pe")]["late"] = "yes"
    del rows[("ben", "pe")]
    assert roster.load(course) == parsed(course)
    assert roster.load(course)[("ana", "pe")]["late"] == "no"


def test_a_reader_never_sees_half_a_roster(tmp_path):
    course = course_at(tmp_path)
    big = {(f"s{i:04d}", "pe"): {"student_id": f"s{i:04d}", "assignment": "pe", "name": "x" * 200}
           for i in range(2000)}
    roster.save(course, big)
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            seen.append(len(parsed(course)))
    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(20):
            roster.save(course, {**big, ("new", str(i)): {"student_id": "new", "assignment": str(i)}})
    finally:
        stop.set()
        reader.join()
    assert seen and set(seen) <= {2000, 2001}


def test_rows_reused_from_an_earlier_read_are_what_parsing_gives(tmp_path):
    course = course_at(tmp_path)
    roster.save(course, TRICKY)
    assert roster.load(course) == parsed(course)
    with open(roster.path(course), "a", newline="") as out:      # another writer: a short line, a blank one
        out.write("cy,pe,portal\r\n\r\n")
    os.utime(roster.path(course), ns=(1, 1))                      # an old file: its parse is trusted from now on
    assert roster.load(course) == parsed(course)
    assert roster.load(course)[("cy", "pe")]["extension"] == ""
    assert roster.load(course)[("ana", "pe")]["source_zip"] == "a,b \"c\"\nd"


def test_a_roster_another_process_just_wrote_is_parsed_once_while_its_bytes_stay(tmp_path, monkeypatch):
    course = course_at(tmp_path)
    roster.save(course, TRICKY)
    monkeypatch.setattr(roster, "_cache", roster._Cache())        # this process never saw the write: another did
    parses = []
    real = roster._read
    monkeypatch.setattr(roster, "_read", lambda data, known=None: parses.append(1) or real(data, known))
    for _ in range(5):                                            # changed a moment ago: not trusted by its time
        assert roster.load(course) == parsed(course)
    assert len(parses) == 1                                       # each read compared its bytes, parsed once
    rows = roster.load(course)
    roster.save(course, {**rows, ("cy", "pe"): {"student_id": "cy", "assignment": "pe"}})
    monkeypatch.setattr(roster._cache, "kept", {})                # as another process's write again
    assert ("cy", "pe") in roster.load(course) and len(parses) == 2
