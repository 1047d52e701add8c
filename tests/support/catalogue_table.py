"""The closing note's table, from the catalogue itself: every catalogued mistake, the points it loses (partial
credit included, as `make grade` counts them), the hidden tests it fails, the start of its diagnosis, and whether
`nbgrader validate` catches it: "yes"/"no" from real `nbgrader validate` for the notebooks test_validate_catalogue
builds, "yes*"/"no*" for the others from the same visible cells run in-process.

    .venv/bin/python tests/catalogue_table.py            # about a minute: one nbgrader validate run
"""
from __future__ import annotations

import pathlib
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import contextlib  # noqa: E402
import io  # noqa: E402

import nbformat  # noqa: E402
from notebook_tools import implementation_source, namespace_from, solution_notebook  # noqa: E402
from test_validate_catalogue import CATALOGUES, build_and_validate, caught_by_validate  # noqa: E402

from posenc_autograder.checks import REGISTRY, hidden_tests  # noqa: E402
from posenc_autograder.course import grade_id, nbgrader_meta  # noqa: E402
from posenc_autograder.notebook import record_in_process  # noqa: E402

SHOWN = 60          # characters of the diagnosis in the table


def graded(assignment: str, code: str) -> dict[str, tuple[float, list[str]]]:
    """Hidden test id -> (points lost, problems) for each test the solution with `code` fails."""
    ns = namespace_from(implementation_source(solution_notebook(assignment)), code)
    lost = {}
    for test in hidden_tests(assignment):
        problems, passed, total = test.graded(record_in_process(test.task_entry(), ns))
        if problems:
            lost[test.id] = (test.points - test.points_for(passed, total), problems)
    return lost


def visible_checks_fail(assignment: str, code: str) -> bool:
    """Whether any visible test cell raises on the solution with `code`, run in-process as validate runs it."""
    cells = [c.source for c in nbformat.read(solution_notebook(assignment), as_version=4).cells
             if nbgrader_meta(c).get("grade") and grade_id(c) not in REGISTRY]
    ns = namespace_from(implementation_source(solution_notebook(assignment)), code)
    try:                            # in order, in one namespace: the last cell sums up what the others reported
        with contextlib.redirect_stdout(io.StringIO()):
            for source in cells:
                exec(compile(source, "<visible>", "exec"), ns)  # noqa: S102 - the course's own cells
    except Exception:  # noqa: BLE001 - a failing self-check is what we count
        return True
    return False


def diagnosis(problems: list[str]) -> str:
    """The likely cause when the message names one, else the message itself."""
    first = problems[0]
    return first.cause or first.text


def cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def rows(caught: dict[str, dict[str, bool]]) -> list[str]:
    lines = ["| assignment | mistake | points lost | tests failed | diagnosis (first 60 characters) "
             "| caught by validate |",
             "| --- | --- | --- | --- | --- | --- |"]
    for assignment, (mistakes, *_) in CATALOGUES.items():
        for mistake in mistakes:
            failed = graded(assignment, mistake.code)
            lost = sum(points for points, _ in failed.values())
            said = diagnosis(failed[mistake.failing_check][1]) if mistake.failing_check in failed else "(not failed)"
            validate = caught[assignment].get(mistake.name)
            shown = ("yes" if validate else "no") if validate is not None else \
                ("yes*" if visible_checks_fail(assignment, mistake.code) else "no*")
            lines.append(f"| {assignment} | {cell(mistake.name)} | {lost:g} | {', '.join(sorted(failed))} | "
                         f"{cell(said[:SHOWN])} | {shown} |")
    return lines


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        outputs = build_and_validate(pathlib.Path(folder))
    print("\n".join(rows({assignment: caught_by_validate(outputs, assignment) for assignment in CATALOGUES})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
