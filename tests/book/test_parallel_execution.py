"""The book's kernels (_ext/parallel_execution.py) start as KERNEL_START says, and a chapter cannot tell; a cell's
prints are stored as the pieces' text in order, whatever pieces the kernel's flushes cut.

KERNEL_START runs before a chapter's first cell: the IRI grammars jsonschema would build when the chapter's first
glue() imports nbformat are deferred, and OpenBLAS keeps to one thread. What the chapter sees must be what a plain
kernel shows it: its first cell is In [1], and no name of the start line is left in its namespace.
"""
import pathlib

import nbformat
import pytest
from parallel_execution import execute, in_own_thread, join_streams

pytestmark = pytest.mark.slow      # starts a kernel

ROOT = pathlib.Path(__file__).resolve().parents[2]
CELLS = [
    "import os, sys\n"
    "print(getattr(sys.modules.get('rfc3987_syntax'), '__deferred__', False), os.environ.get('OPENBLAS_NUM_THREADS'))",
    "%who",
]


def test_kernel_start_defers_the_iri_grammars_and_leaves_no_trace():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    # on a loop of its own thread, as the extension runs it: the browser tests' Playwright holds this thread's loop
    seconds = in_own_thread(execute(notebook, ROOT / "chapters" / "start.md", timeout=120, allow_errors=False))
    assert seconds is not None, "the notebook did not run"
    first, names = notebook.cells
    assert first.outputs[0]["text"] == "True 1\n"                 # the start line ran in the chapter's kernel
    assert [cell.execution_count for cell in notebook.cells] == [1, 2]
    assert names.outputs[0]["text"].split() == ["os", "sys"]      # only the cell's own imports, no start-line name


def test_a_cells_consecutive_prints_are_one_output_in_order_and_nothing_moves():
    stream = nbformat.v4.new_output
    cell = nbformat.v4.new_code_cell("", outputs=[
        stream("stream", name="stdout", text="first pair below 2 pi:"), stream("stream", name="stdout", text=" {}\n"),
        stream("display_data", data={"text/plain": "<Figure>"}),
        stream("stream", name="stdout", text="after\n"), stream("stream", name="stderr", text="warned\n"),
        stream("stream", name="stdout", text="last")])
    notebook = nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_markdown_cell("text")])
    join_streams(notebook)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in cell.outputs] == [
        ("stream", "stdout", "first pair below 2 pi: {}\n"), ("display_data", None, None),
        ("stream", "stdout", "after\n"), ("stream", "stderr", "warned\n"), ("stream", "stdout", "last")]
    nbformat.validate(notebook)
