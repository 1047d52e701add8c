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


def make_zip(path, members: dict, when=(2026, 11, 20, 10, 0, 0)):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=when)
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
