"""`make portal-links`: a sign-in link for every student of the roster, as a CSV to paste into an LMS message.

Tokens are stored hashed, so a link can be shown only when it is made: students who already have one are
listed without a link unless --renew replaces theirs (their old link then stops working).
"""
from __future__ import annotations

import os
import sys

from sqlalchemy import select

from posenc_autograder import csvsafe
from posenc_autograder.course import course_for_command
from posenc_autograder.intake import roster
from posenc_autograder.intake.lms import is_safe_id
from posenc_autograder.portal import auth
from posenc_autograder.portal.models import Student
from posenc_autograder.portal.service import database

LINKS_FILE = "portal-links.csv"          # in autograder/reports/ (git-ignored), readable by its owner only
FIELDS = ["student_id", "name", "link"]


def students_of(course, extra: list[str]) -> dict[str, str]:
    """student id -> name, from the roster and the ids given."""
    found = {row["student_id"]: row.get("name", "") for row in roster.load(course).values()}
    found.update({student: found.get(student, "") for student in extra})
    return {s: n for s, n in sorted(found.items()) if is_safe_id(s)}


def make_links(sessions, students: dict[str, str], base_url: str, renew: bool) -> list[dict]:
    rows = []
    with sessions() as db:
        holding = set(db.execute(select(Student.id).where(Student.token_hash.is_not(None))).scalars())
        for student, name in students.items():
            if student in holding and not renew:
                rows.append({"student_id": student, "name": name, "link": "(issued earlier; --renew replaces it)"})
                continue
            rows.append({"student_id": student, "name": name,
                         "link": f"{base_url.rstrip('/')}/s/{auth.issue_token(db, student, name)}"})
        db.commit()
    return rows


def arguments(parser) -> None:
    parser.add_argument("--base-url", default=os.environ.get("PORTAL_URL", "http://127.0.0.1:8080"),
                        help="the portal's public address (default $PORTAL_URL or http://127.0.0.1:8080)")
    parser.add_argument("--student", action="append", default=[], help="also make a link for this id (repeatable)")
    parser.add_argument("--renew", action="store_true", help="replace every listed student's link")


def run_command(args) -> int:
    course = course_for_command(args.course, args.db_url)
    students = students_of(course, args.student)
    if not students:
        print("No students: `make collect` fills autograder/roster.csv, or name them with --student ID",
              file=sys.stderr)
        return 1
    rows = make_links(database(course), students, args.base_url, args.renew)
    target = course.reports / LINKS_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600, exist_ok=True)
    target.chmod(0o600)
    csvsafe.write(target, FIELDS, rows)
    made = sum(r["link"].startswith("http") for r in rows)
    print(f"{made} new sign-in link(s) for {len(rows)} student(s) in {target} (keep it private: each link signs "
          f"its student in)")
    return 0

