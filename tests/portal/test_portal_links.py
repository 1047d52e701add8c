"""`make portal-links` for new students leaves everyone else's link as it was, and its private file keeps every
link that still signs its student in, so the class can be sent its links again without renewing them."""
import csv

from fixture_submissions import ASSIGNMENT

from posenc_autograder import cli
from posenc_autograder.intake import roster
from posenc_autograder.portal import auth, links
from posenc_autograder.portal.service import database


def _roster(course, *students):
    roster.save(course, {(s, ASSIGNMENT): {**dict.fromkeys(roster.FIELDS, ""), "student_id": s,
                                           "assignment": ASSIGNMENT, "name": s.title()} for s in students})


def _links(course, *args):
    assert cli.main(["portal-links", "--course", str(course.root), "--base-url", "https://portal.example", *args]) == 0
    with open(course.reports / links.LINKS_FILE, newline="") as src:
        return {row["student_id"]: row for row in csv.DictReader(src)}


def _signs_in(course, student, link) -> bool:
    with database(course)() as db:
        found = auth.student_for_token(db, link.rsplit("/s/", 1)[-1])
        return found is not None and found.id == student


def test_links_for_a_new_student_keep_the_others_and_the_file_keeps_every_valid_link(course):
    _roster(course, "ada", "bo")
    first = _links(course)
    assert {s: r["new"] for s, r in first.items()} == {"ada": "yes", "bo": "yes"}
    assert (course.reports / links.LINKS_FILE).stat().st_mode & 0o077 == 0          # its owner's only

    second = _links(course, "--student", "kate")
    assert {s: r["new"] for s, r in second.items()} == {"ada": "no", "bo": "no", "kate": "yes"}
    for student in ("ada", "bo"):
        assert second[student]["link"] == first[student]["link"]
        assert _signs_in(course, student, second[student]["link"])
    assert _signs_in(course, "kate", second["kate"]["link"])

    third = _links(course)                       # kate is not on the roster: her link stays listed all the same
    assert {s: (r["link"], r["new"]) for s, r in third.items()} == {s: (r["link"], "no") for s, r in second.items()}


def test_a_link_no_longer_valid_is_not_handed_out_again(course):
    _roster(course, "ada", "bo")
    first = _links(course)
    with database(course)() as db:                # bo's token replaced elsewhere (the portal's instructor page)
        auth.issue_token(db, "bo")
        db.commit()
    again = _links(course)
    assert again["ada"]["link"] == first["ada"]["link"]
    assert again["bo"]["link"] == links.NO_LINK and not _signs_in(course, "bo", first["bo"]["link"])


def test_renew_replaces_every_link(course):
    _roster(course, "ada")
    first = _links(course)
    renewed = _links(course, "--renew")
    assert renewed["ada"]["new"] == "yes" and renewed["ada"]["link"] != first["ada"]["link"]
    assert not _signs_in(course, "ada", first["ada"]["link"]) and _signs_in(course, "ada", renewed["ada"]["link"])
