"""What `make release` writes from the HiddenTest objects (orchestration/release.py runs it, all or nothing).

For every HiddenTest the solution notebook gets one cell whose title, points and metadata come
from the object (a new test's cell goes after the tests of its answer cell; a cell whose test was
deleted goes too); autograder/test_plan.csv, the README's totals and its table of course settings (from
course.toml, posenc_autograder.settings) are rewritten. `stale_files` says which of them disagree with the objects.
"""
from __future__ import annotations

import copy
import re

import nbformat

from posenc_autograder import settings, words
from posenc_autograder.authoring.plan import render_plan_csv
from posenc_autograder.checks import REGISTRY, HiddenTest, hidden_tests, total_points
from posenc_autograder.course import Course, grade_id, nbgrader_meta

PLAN = "autograder/test_plan.csv"
README = "README.md"
# A row of the README's table of assignments: | `name` (note) | what students implement | tests | points |
README_ROW = re.compile(r"^\| `(?P<name>\w+)`(?P<middle>[^|]*\|[^|]*\|) \d+ \| [\d.]+ \|$", re.M)
# A row of the README's table of course settings: | `[section] key` | value as written in course.toml | meaning |
SETTING_ROW = re.compile(r"^\| `\[(?P<section>\w+)\] (?P<key>\w+)` \| [^|]* \|(?P<rest>.*)$", re.M)
HIDDEN_CALL = "hidden_test("


def cell_title(test: HiddenTest) -> str:
    share = "; points in proportion to the independent cases passed, rounded down to a half point" \
        if test.partial else ""
    return f"# Hidden tests: {test.title}, with inputs you have not seen ({words.count(test.points, 'point')}{share})."


def cell_source(test: HiddenTest) -> str:
    return (f"{cell_title(test)}\n### BEGIN HIDDEN TESTS\nfrom posenc_autograder.notebook import hidden_test\n"
            f'hidden_test("{test.id}", globals())\n### END HIDDEN TESTS')


def cell_metadata(test: HiddenTest) -> dict:
    return {"grade": True, "grade_id": test.id, "locked": True, "points": test.points, "schema_version": 3,
            "solution": False, "task": False}


def _is_generated(cell) -> bool:
    """A hidden-test cell this module writes (a removed test's cell is recognised by its call)."""
    return (grade_id(cell) or "").startswith("hidden_") and HIDDEN_CALL in cell.source


def _insert_position(cells, answer_cell: str) -> int:
    """After the answer cell and the graded cells that follow it."""
    ids = [grade_id(c) for c in cells]
    if answer_cell not in ids:
        raise ValueError(f"answer cell '{answer_cell}' is not in the solution notebook")
    position = ids.index(answer_cell) + 1
    while position < len(cells) and nbgrader_meta(cells[position]).get("grade"):
        position += 1
    return position


def written_notebook(nb, assignment: str):
    """The solution notebook with its hidden-test cells as the objects say."""
    nb = copy.deepcopy(nb)
    tests = {t.id: t for t in hidden_tests(assignment)}
    nb.cells = [c for c in nb.cells if not _is_generated(c) or grade_id(c) in tests]
    for test in tests.values():
        cell = next((c for c in nb.cells if grade_id(c) == test.id), None)
        if cell is None:
            cell = nbformat.v4.new_code_cell(id=test.id)
            nb.cells.insert(_insert_position(nb.cells, test.answer_cell), cell)
        cell.source = cell_source(test)
        cell.metadata["nbgrader"] = cell_metadata(test)
    return nb


def readme_with_totals(text: str, titles: dict[str, str]) -> str:
    """The README with each assignment's number of hidden tests and points taken from the objects;
    an assignment without a row gets one after the last, described by its notebook's title."""
    def row(name, middle):
        return f"| `{name}`{middle} {len(hidden_tests(name))} | {total_points(name):g} |"
    rows = list(README_ROW.finditer(text))
    if not rows:
        return text
    missing = [row(name, f" | {title} |") for name, title in titles.items()
               if name not in {m["name"] for m in rows}]
    end = rows[-1].end()
    text = text[:end] + "".join(f"\n{line}" for line in missing) + text[end:]
    return README_ROW.sub(lambda m: row(m["name"], m["middle"]), text)


def setting_text(key: str, value) -> str:
    """A value as course.toml would write it: "3 GiB", 30, "best", true."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f'"{value}"'
    return f'"{settings.size(value)}"' if key.endswith("_bytes") else str(value)


def readme_with_settings(text: str, course_settings: settings.Settings) -> str:
    """The README with each listed setting's value taken from the course's settings (course.toml, else the
    default in settings.py)."""
    def row(match):
        section, key = match["section"], match["key"]
        if section not in settings.SECTIONS or key not in settings.SECTIONS[section].__dataclass_fields__:
            return match[0]                   # not a setting: left for the README's test to name
        value = getattr(getattr(course_settings, section), key)
        return f"| `[{section}] {key}` | {setting_text(key, value)} |{match['rest']}"
    return SETTING_ROW.sub(row, text)


def notebook_title(course: Course, assignment: str) -> str:
    nb = nbformat.read(course.source_notebook(assignment, assignment), as_version=4)
    heading = next((line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()
                    if line.startswith("#")), assignment)
    return heading.lstrip("# ").strip()


def stale_files(course: Course) -> dict:
    """path -> new text, for every generated file that disagrees with the objects."""
    changed = {}
    assignments = sorted({t.assignment for t in REGISTRY.values()})
    for assignment in assignments:
        path = course.source_notebook(assignment, assignment)
        text = path.read_text()
        new = nbformat.writes(written_notebook(nbformat.reads(text, as_version=4), assignment)) + "\n"
        if new != text:
            changed[path] = new
    plan = course.path(PLAN)
    if plan.read_text() != render_plan_csv():
        changed[plan] = render_plan_csv()
    readme = course.path(README)
    titles = {assignment: notebook_title(course, assignment) for assignment in assignments}
    if readme.is_file():
        text = readme.read_text()
        new = readme_with_settings(readme_with_totals(text, titles), settings.load(course))
        if new != text:
            changed[readme] = new
    return changed
