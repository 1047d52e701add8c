"""`make hub-setup EXCHANGE=/srv/nbgrader/exchange [GROUP=instructors]`: the course laid out for a JupyterHub, where
students have accounts on the machine that holds it.

nbgrader's exchange must be writable by every student (its root is 0777, its inbound 0733), so it cannot be inside
the course: students would have to be able to enter the course's folder, where the solutions, the gradebook and the
secrets are. The safe layout, applied and then checked here:

- the exchange outside the course (recorded in autograder/exchange_root, read by nbgrader_config.py and by
  `make collect-exchange`), made if missing with the mode nbgrader requires;
- the course's folder 0750: its owner (the instructor) and GROUP (other instructors, graders) only, nobody else;
- everything in it closed to other accounts as well (o-rwx), so that a later `chmod` of the folder alone opens
  nothing (the virtual environment and the built book excepted: the folder's mode closes them).

`intake.exchange.layout_problems` says what is still unsafe; `make collect-exchange` repeats it while the course uses
a shared exchange.
"""
from __future__ import annotations

import grp
import os
import pathlib
import stat
import sys

from posenc_autograder.course import EXCHANGE_ROOT_FILE, Course, course_for_command
from posenc_autograder.intake.exchange import COURSE_MODE, layout_problems

EXCHANGE_MODE = 0o777                  # what nbgrader's release_assignment sets and its submit needs
LEFT_OPEN = {".venv", "_build", ".git"}          # closed by the course folder's own mode


def close(course: Course, group: str | None) -> int:
    """The course's folder 0750 (with `group`), everything in it o-rwx; returns the number of entries changed."""
    root = course.root.resolve()
    gid = grp.getgrnam(group).gr_gid if group else -1
    changed = 0
    for folder, folders, files in os.walk(root):
        if pathlib.Path(folder) == root:
            folders[:] = [name for name in folders if name not in LEFT_OPEN]
        for name in [*folders, *files]:
            path = pathlib.Path(folder) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode) or not info.st_mode & 0o007:
                continue
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~0o007)
            changed += 1
    os.chown(root, -1, gid)
    os.chmod(root, COURSE_MODE)
    return changed


def arguments(parser) -> None:
    parser.add_argument("--exchange", help="nbgrader's exchange root, outside the course (e.g. /srv/nbgrader/exchange)")
    parser.add_argument("--group", help="the group of the instructors and graders, who may enter the course")


def run_command(args) -> int:
    course = course_for_command(args.course)
    if not args.exchange:
        print("say where the exchange goes: make hub-setup EXCHANGE=/srv/nbgrader/exchange [GROUP=<instructors>]",
              file=sys.stderr)
        return 2
    exchange = pathlib.Path(args.exchange).resolve()
    root = course.root.resolve()
    if exchange == root or root in exchange.parents:
        print(f"error: {exchange} is inside the course; students' accounts must reach the exchange without entering "
              f"{root}: choose a folder outside it", file=sys.stderr)
        return 2
    if args.group:
        try:
            grp.getgrnam(args.group)
        except KeyError:
            print(f"error: no group '{args.group}' on this machine (groupadd {args.group}, then add the instructors)",
                  file=sys.stderr)
            return 2
    if not exchange.is_dir():
        exchange.mkdir(parents=True)
    exchange.chmod(EXCHANGE_MODE)
    course.path(EXCHANGE_ROOT_FILE).write_text(f"{exchange}\n")
    changed = close(course, args.group)
    left = layout_problems(course, exchange)
    group = f", group {args.group}" if args.group else ""
    print(f"nbgrader's exchange: {exchange} (mode {EXCHANGE_MODE:o}, recorded in {EXCHANGE_ROOT_FILE}); the course "
          f"{root}: mode {COURSE_MODE:o}{group}, {changed} entries in it closed to other accounts.")
    for problem in left:
        print(f"Still unsafe: {problem}", file=sys.stderr)
    return 1 if left else 0
