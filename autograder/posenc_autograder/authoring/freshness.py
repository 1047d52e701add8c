"""Is exercises/ what `make release` would make of solutions/ now? Compared by content, not file times
(git does not keep them): each solution notebook is cleared with nbgrader's own preprocessors, configured
by the course's nbgrader_config.py, and its cells compared with the released notebook's."""
from __future__ import annotations

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearSolutions
from traitlets.config.loader import PyFileConfigLoader

from posenc_autograder.course import CONFIG, RELEASE_DIRECTORY, Course

CLEARING = (ClearSolutions, ClearHiddenTests, ClearMarkScheme)


def _cells(nb) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def course_config(course: Course):
    return PyFileConfigLoader(CONFIG.rsplit("/", 1)[-1], path=str(course.path(CONFIG).parent)).load_config()


def released_view(course: Course, assignment: str, notebook: str, config):
    """The solution notebook as students would get it (sources only; outputs and checksums aside)."""
    nb, resources = nbformat.read(course.source_notebook(assignment, notebook), as_version=4), {}
    for preprocessor in CLEARING:
        nb, resources = preprocessor(config=config).preprocess(nb, resources)
    return nb


def stale_notebooks(course: Course, assignments: list[str] | None = None) -> list[str]:
    """'<assignment>/<notebook>.ipynb' for every released notebook that differs from its solution now."""
    stale, config = [], course_config(course)
    for assignment in assignments or course.assignments():
        for notebook in course.notebooks(assignment):
            released = course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb"
            if not released.is_file() or _cells(nbformat.read(released, as_version=4)) != \
                    _cells(released_view(course, assignment, notebook, config)):
                stale.append(f"{assignment}/{notebook}.ipynb")
    return stale
