"""LMS downloads for the collect tests: a zip built from a table of member names, tiny notebooks that say
which attempt they stand for, and what `make collect` left in submitted/ and the roster."""
import csv
import zipfile

from posenc_autograder.intake.roster import ROSTER_FILE

NB = "positional_encoding"


def notebook(tag: str) -> bytes:
    """A tiny valid notebook whose only cell names the attempt it stands for."""
    return ('{"cells": [{"cell_type": "markdown", "metadata": {}, "source": "%s"}], "metadata": {}, '
            '"nbformat": 4, "nbformat_minor": 5}' % tag).encode()


# Downloads as each LMS names them (the collect tests parse these; the feedback bundles are checked against them).
CANVAS = {
    f"smithjohn_12345_67890_{NB}.ipynb": notebook("smith first"),
    f"smithjohn_12345_67891_{NB}-1.ipynb": notebook("smith resubmitted"),
    f"doejane_late_23456_78901_{NB}.ipynb": notebook("doe late"),
    f"leeann_34567_89012_{NB} (1).ipynb": notebook("lee renamed it herself"),
}

MOODLE = {f"John Smith_12345_assignsubmission_file_/{NB}.ipynb": notebook("john"),
          f"Jane Doe_23456_assignsubmission_file_/{NB}.ipynb": notebook("jane"),
          "Jane Doe_23456_assignsubmission_onlinetext_/onlinetext.html": b"<p>hello</p>"}

BB = "Positional Encoding"
BLACKBOARD = {
    f"{BB}_jsmith_attempt_2026-11-20-10-15-02_{NB}.ipynb": notebook("jsmith early"),
    f"{BB}_jsmith_attempt_2026-11-20-10-15-02.txt": b"Name: John Smith (jsmith)\nAssignment: PE\n",
    f"{BB}_jsmith_attempt_2026-11-21-09-00-00_{NB}.ipynb": notebook("jsmith later"),
    f"{BB}_jsmith_attempt_2026-11-21-09-00-00.txt": b"Name: John Smith (jsmith)\nAssignment: PE\n",
    f"{BB}_j_doe_attempt_2026-11-19-08-00-00_{NB}.ipynb": notebook("jdoe"),
    f"{BB}_j_doe_attempt_2026-11-19-08-00-00.txt": b"Name: Jane Doe (j_doe)\nAssignment: PE\n",
}

PLAIN = {f"j_smith_{NB}.ipynb": notebook("smith"), f"j_doe_{NB}.ipynb": notebook("doe")}


def make_zip(path, members: dict, when=(2026, 11, 20, 10, 0, 0), times: dict | None = None):
    """`when`: every entry's DOS time (no zone); `times`: member name -> its own DOS time."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(times or {}).get(name, when))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def stored(course, assignment=NB):
    """student -> (file names, attempt tag) of what is in submitted/ now."""
    found = {}
    for folder in course.submitted.glob(f"*/{assignment}"):
        files = sorted(p.name for p in folder.glob("*.ipynb"))
        found[folder.parent.name] = (files, [p.read_text().split('"source": "')[1].split('"')[0]
                                             for p in sorted(folder.glob("*.ipynb"))])
    return found


def roster_rows(course):
    return {r["student_id"]: r for r in csv.DictReader(open(course.path(ROSTER_FILE)))}
