"""The one front for the course's commands: `python -m posenc_autograder <command> [options]`.

Each command lives in its stage's package with a `main(argv) -> exit status`; the Makefile's targets
call these. Imports are deferred so that `--help` of one command does not load every stage.
"""
from __future__ import annotations

import importlib
import sys

# command -> (module with main(argv), what it does)
COMMANDS = {
    "release": ("authoring.release", "write hidden-test cells and the test plan, then exercises/ from solutions/"),
    "collect": ("intake.collect", "unpack an LMS download into autograder/submitted"),
    "uncollect": ("orchestration.uncollect", "remove a student's (or a zip's) submissions and every trace of them"),
    "grade": ("orchestration.grade", "grade every submission: gradebook, feedback, grade files, reports"),
    "feedback": ("orchestration.rebuild", "after manual grading: feedback pages and grade files again"),
    "formgrader": ("reports.formgrader", "nbgrader's formgrader for this course on 127.0.0.1"),
    "integrity": ("integrity.report", "autograder/reports/integrity.html: evidence of copying"),
    "bench": ("devtools.bench", "stock nbgrader autograde against make grade"),
    "bench-scale": ("devtools.bench_scale", "a generated class of N graded and compared: time, memory, disk"),
    "portal": ("portal.app", "the submission portal on 127.0.0.1: uploads, live status, feedback, policies"),
    "portal-links": ("portal.links", "a CSV of sign-in links for the roster's students"),
    "bench-portal": ("devtools.portal_load", "load test of the portal: 200 simulated students"),
    "mutate": ("devtools.mutate", "mutants of the reference graded by the hidden tests"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m posenc_autograder <command> [options]", "", "commands:"]
    lines += [f"  {name:<{width}}  {doc}" for name, (_, doc) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(usage(), file=sys.stderr if argv and argv[0] not in ("-h", "--help") else sys.stdout)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(f"posenc_autograder.{COMMANDS[argv[0]][0]}")
    return module.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
