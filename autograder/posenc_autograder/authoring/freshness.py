"""Is exercises/ what `make release` would make of solutions/ now? Compared by content, not file times
(git does not keep them): an assignment whose released files are byte for byte what nbgrader generates from its
source now (authoring/generation.py, kept by digest, which `make grade` registers from anyway) is current;
otherwise each solution notebook is cleared with nbgrader's own preprocessors, configured by the course's
nbgrader_config.py, and its cells compared with the released notebook's (outputs and checksums aside)."""
from __future__ import annotations

import nbformat

from posenc_autograder.authoring import generation
from posenc_autograder.course import RELEASE_DIRECTORY, Course


def _cells(nb) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def released_view(course: Course, assignment: str, notebook: str, config):
    """The solution notebook as students would get it (sources only; outputs and checksums aside)."""
    from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme, ClearSolutions

    nb, resources = nbformat.read(course.source_notebook(assignment, notebook), as_version=4), {}
    for preprocessor in (ClearSolutions, ClearHiddenTests, ClearMarkScheme):
        nb, resources = preprocessor(config=config).preprocess(nb, resources)
    return nb


def stale_notebooks(course: Course, assignments: list[str] | None = None) -> list[str]:
    """'<assignment>/<notebook>.ipynb' for every released notebook that differs from its solution now."""
    stale, config = [], generation.course_config(course)
    for assignment in assignments or course.assignments():
        if _generated_now(course, assignment):
            continue
        for notebook in course.notebooks(assignment):
            released = course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb"
            if not released.is_file() or _cells(nbformat.read(released, as_version=4)) != \
                    _cells(released_view(course, assignment, notebook, config)):
                stale.append(f"{assignment}/{notebook}.ipynb")
    return stale


def _generated_now(course: Course, assignment: str) -> bool:
    """exercises/<assignment> is byte for byte what nbgrader generates from its source now."""
    try:
        return generation.generated(course, assignment).same_as(course.path(RELEASE_DIRECTORY) / assignment)
    except generation.GenerationFailed:
        return False                          # the cells are compared instead
