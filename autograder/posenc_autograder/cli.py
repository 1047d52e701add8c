"""The one front for the course's commands: `python -m posenc_autograder <command> [options]`.

Each command lives in its stage's package with `arguments(parser)` (its own options, when it has any) and
`run_command(args) -> exit status`; the options several commands share (--course, --db-url, --jobs, --scheduler) are
defined once here and given to each command that takes them. The Makefile's targets call this front.
Imports are deferred so that `--help` of one command does not load every stage.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import signal
import sys
from typing import Any


@dataclasses.dataclass(frozen=True)
class Command:
    module: str                         # under posenc_autograder, with arguments(parser) and run_command(args)
    doc: str
    shared: tuple[str, ...] = ()        # names in SHARED_OPTIONS
    checks_database: bool = True        # with DB_URL: first check the database holds the course's grades
    owns_servers: bool = False          # starts servers or scratch copies that its finally blocks remove: SIGTERM
                                        # unwinds it as Ctrl-C does, instead of leaving them running


COURSE, DB_URL, JOBS, SCHEDULER = "course", "db_url", "jobs", "scheduler"
COMMANDS = {
    "release": Command("orchestration.release", "write hidden-test cells and the test plan, then exercises/ from "
                       "solutions/", (COURSE,)),
    "collect": Command("intake.collect", "unpack an LMS download into autograder/submitted", (COURSE,)),
    "collect-exchange": Command("intake.exchange", "record every submission made with nbgrader's exchange "
                                "(nbgrader submit)", (COURSE,)),
    "uncollect": Command("orchestration.uncollect", "remove a student's (or a zip's) submissions and every trace "
                         "of them", (COURSE, DB_URL)),
    "grade": Command("orchestration.grade", "grade every submission: gradebook, feedback, grade files, reports",
                     (COURSE, DB_URL, JOBS, SCHEDULER)),
    "feedback": Command("orchestration.rebuild", "after manual grading: feedback pages and grade files again",
                        (COURSE, DB_URL)),
    "formgrader": Command("reports.formgrader", "nbgrader's formgrader for this course on 127.0.0.1", (COURSE,),
                          owns_servers=True),
    "integrity": Command("integrity.report", "autograder/reports/integrity.html: evidence of copying", (COURSE,)),
    "bench": Command("devtools.bench", "stock nbgrader autograde against make grade", (JOBS,), owns_servers=True),
    "bench-scale": Command("devtools.bench_scale", "a generated class of N graded and compared: time, memory, disk",
                           (JOBS,), owns_servers=True),
    "portal": Command("portal.app", "the submission portal on 127.0.0.1: uploads, live status, feedback, policies",
                      (COURSE, DB_URL, JOBS, SCHEDULER)),
    "lti-register": Command("portal.lti.registration", "register the portal with an LMS (LTI 1.3): keys, "
                            "autograder/lti.json, what to paste into Canvas and Moodle", (COURSE,)),
    "portal-links": Command("portal.links", "a CSV of sign-in links for the roster's students", (COURSE, DB_URL)),
    "hub-setup": Command("orchestration.hub_setup", "lay the course out for a JupyterHub: nbgrader's exchange outside "
                         "it, the course closed to students' accounts", (COURSE,)),
    "move-db": Command("orchestration.move_db", "move the course's database (grades, manual grades, comments, "
                       "attempts, sign-in links) to another one", (COURSE, DB_URL), checks_database=False),
    "bench-waits": Command("devtools.bench_waits", "where the instructor waits: each step timed beside its goal",
                           (), owns_servers=True),
    "bench-portal": Command("devtools.portal_load", "load test of the portal: 200 simulated students", (JOBS,),
                            owns_servers=True),
    "mutate": Command("devtools.mutate", "mutants of the reference graded by the hidden tests", (COURSE,),
                      owns_servers=True),
}


# Each shared option's flags and settings, written once.
SHARED_OPTIONS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    COURSE: (("--course", "--root"), {"dest": "course", "help": "course folder (default: the working directory or a "
                                      "parent of it, or $POSENC_COURSE)"}),
    DB_URL: (("--db-url",), {"help": "gradebook database URL (default: SQLite in autograder/)"}),
    JOBS: (("--jobs",), {"type": int, "default": 0, "help": "sandboxes grading at once (default: every core)"}),
    SCHEDULER: (("--scheduler",), {"help": "a Dask scheduler's address (tcp://host:8786): grade on its workers"}),
}


def shared_parser(options: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parent parser of a command: the shared options it takes (a fresh one, so a command's own
    defaults never leak into another's)."""
    parent = argparse.ArgumentParser(add_help=False)
    for option in options:
        flags, settings = SHARED_OPTIONS[option]
        parent.add_argument(*flags, **settings)
    return parent


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m posenc_autograder <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {command.doc}" for name, command in COMMANDS.items()]
    return "\n".join(lines)


def parser_for(name: str, module) -> argparse.ArgumentParser:
    """The command's parser: the shared options it takes, then its own."""
    command = COMMANDS[name]
    parser = argparse.ArgumentParser(prog=f"make {name}", description=(module.__doc__ or "").split("\n\n")[0],
                                     parents=[shared_parser(command.shared)])
    if hasattr(module, "arguments"):
        module.arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(usage(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command = COMMANDS[argv[0]]
    module = importlib.import_module(f"posenc_autograder.{command.module}")
    args = parser_for(argv[0], module).parse_args(argv[1:])
    if DB_URL in command.shared and command.checks_database:
        problem = foreign_database(args)
        if problem:
            print(problem, file=sys.stderr)
            return 2
    if command.owns_servers:
        signal.signal(signal.SIGTERM, exit_on_signal)
    return module.run_command(args)


def exit_on_signal(number: int, _frame) -> None:
    """Stopped by a signal: leave as an uncaught exit does, through every finally block on the way out."""
    raise SystemExit(128 + number)


def foreign_database(args) -> str | None:
    """Why the command must not run on the database it is pointed at (None: it holds the course's grades)."""
    from posenc_autograder.course import course_for_command
    from posenc_autograder.records import database
    try:
        database.check(course_for_command(args.course, args.db_url))
    except database.ForeignDatabase as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    sys.exit(main())
