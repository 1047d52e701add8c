"""`make portal-links`: a sign-in link for every student of the roster, as a CSV to paste into an LMS message.

Tokens are stored hashed, so the database cannot show a link again: the CSV (autograder/reports/, readable by
its owner only) is where every link lives. Each run keeps the links of the file before it that still sign their
student in, adds links for students who have none, and marks which are new; so the class can be sent its links
again without renewing them. --renew replaces the links of the students listed (their old ones stop working).
A file is never overwritten with an earlier link left out (renewed, or the database is another one that does not know
it): that file is kept under a dated name first, and the run says so.
"""
from __future__ import annotations

import csv
import datetime as dt
import os
import pathlib
import sys

from sqlalchemy import select

from posenc_autograder import csvsafe, words
from posenc_autograder.course import course_for_command
from posenc_autograder.intake import roster
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.portal import auth
from posenc_autograder.portal.models import Student
from posenc_autograder.portal.service import database
from posenc_autograder.records.database import shown

LINKS_FILE = "portal-links.csv"          # in autograder/reports/ (git-ignored), readable by its owner only
FIELDS = ["student_id", "name", "link", "new"]
NO_LINK = "(issued earlier, not in this file; --renew replaces it)"


def students_of(course, extra: list[str]) -> dict[str, str]:
    """student id -> name, from the roster and the ids given."""
    found = {row["student_id"]: row.get("name", "") for row in roster.load(course).values()}
    found.update({student: found.get(student, "") for student in extra})
    return {s: n for s, n in sorted(found.items()) if is_safe_id(s)}


def make_links(sessions, students: dict[str, str], base_url: str, renew: bool,
               known: dict[str, str] | None = None) -> list[dict]:
    """A row per student: the link of `known` (student id -> earlier link) while it still signs them in, else a
    new one for a student without a token (or every student, with renew)."""
    rows, known = [], known or {}
    with sessions() as db:
        holding = dict(db.execute(select(Student.id, Student.token_hash).where(Student.token_hash.is_not(None))).all())
        for student, name in students.items():
            if student in holding and not renew:
                earlier = known.get(student, "")
                valid = auth.digest(earlier.rsplit("/s/", 1)[-1]) == holding[student] if "/s/" in earlier else False
                rows.append({"student_id": student, "name": name, "link": earlier if valid else NO_LINK, "new": "no"})
                continue
            rows.append({"student_id": student, "name": name, "new": "yes",
                         "link": f"{base_url.rstrip('/')}/s/{auth.issue_token(db, student, name)}"})
        db.commit()
    return rows


def earlier_links(target: pathlib.Path) -> dict[str, str]:
    """student id -> the link the last run's file gave them ({} without a file)."""
    if not target.is_file():
        return {}
    with open(target, newline="") as src:
        return {row.get("student_id", ""): row.get("link", "") for row in csv.DictReader(src)}


def dropped_links(known: dict[str, str], rows: list[dict]) -> list[str]:
    """Students whose link in the earlier file is not in the new one."""
    now = {row["student_id"]: row["link"] for row in rows}
    return sorted(s for s, link in known.items() if "/s/" in link and now.get(s) != link)


def keep_aside(target: pathlib.Path) -> pathlib.Path:
    """The earlier file moved to portal-links-until-<UTC time>.csv (still readable by its owner only)."""
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    kept = target.with_name(f"{target.stem}-until-{when}{target.suffix}")
    os.replace(target, kept)
    return kept


def arguments(parser) -> None:
    parser.add_argument("--base-url", default=os.environ.get("PORTAL_URL", "http://127.0.0.1:8080"),
                        help="the portal's public address (default $PORTAL_URL or http://127.0.0.1:8080)")
    parser.add_argument("--student", action="append", default=[], help="also make a link for this id (repeatable)")
    parser.add_argument("--renew", action="store_true", help="replace every listed student's link")


def run_command(args) -> int:
    course = course_for_command(args.course, args.db_url)
    target = course.reports / LINKS_FILE
    known = earlier_links(target)
    students = students_of(course, args.student + sorted(known))       # a student added by id stays listed
    if not students:
        print("No students: `make collect` fills autograder/roster.csv, or name them with --student ID",
              file=sys.stderr)
        return 1
    rows = make_links(database(course), students, args.base_url, args.renew, known)
    dropped = dropped_links(known, rows)
    if dropped:
        kept = keep_aside(target)
        why = ("replaced as asked (--renew)" if args.renew else
               f"they do not sign in with this database ({shown(course.gradebook_url)}): it is another one, or the "
               f"links were revoked or replaced in the portal")
        names = ", ".join(dropped[:5]) + (" ..." if len(dropped) > 5 else "")
        verb = "is" if len(dropped) == 1 else "are"
        print(f"{words.count(len(dropped), 'earlier link')} ({names}) {verb} not in the new file: {why}. "
              f"The earlier file is kept as {kept}.", file=sys.stderr)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600, exist_ok=True)
    target.chmod(0o600)
    csvsafe.write(target, FIELDS, rows)
    made, kept = sum(r["new"] == "yes" for r in rows), sum(r["new"] == "no" and r["link"] != NO_LINK for r in rows)
    print(f"{words.count(made, 'new sign-in link')} and {words.count(kept, 'earlier one')} still valid, "
          f"for {words.count(len(rows), 'student')}, in {target} "
          f"(keep it private: each link signs its student in; column new=yes marks whom to send one)")
    return 0

