"""Is exercises/ what `make release` would make of solutions/ now? Compared by content, not file times
(git does not keep them): an assignment whose released files are byte for byte what nbgrader generated from its
source as it is now (authoring/generation.py's entry kept by digest) is current; otherwise each solution notebook is
cleared with nbgrader's own preprocessors, configured by the course's nbgrader_config.py, and its cells compared
with the released notebook's (outputs and checksums aside). Nothing is generated for the check: on a course never
released, generating every assignment costs over ten times what comparing its cells does, and gives the same
answer (files byte for byte nbgrader's have its cells). Only when the settings add a header or footer, which the
cells' comparison does not make, is an assignment with no kept entry generated."""
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
        if _generated_now(course, assignment, config):
            continue
        for notebook in course.notebooks(assignment):
            released = course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb"
            if not released.is_file() or _cells(nbformat.read(released, as_version=4)) != \
                    _cells(released_view(course, assignment, notebook, config)):
                stale.append(f"{assignment}/{notebook}.ipynb")
    return stale


def _generated_now(course: Course, assignment: str, config) -> bool:
    """exercises/<assignment> is byte for byte what nbgrader generates from its source now, as kept (generated now
    only when the cells' comparison cannot tell: a header or footer)."""
    try:
        made = generation.generated(course, assignment) if generation.includes_files(config) \
            else generation.kept(course, assignment)
    except generation.GenerationFailed:
        return False                          # the cells are compared instead
    return made is not None and made.same_as(course.path(RELEASE_DIRECTORY) / assignment)
