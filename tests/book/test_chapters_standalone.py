"""Every chapter runs as a downloaded notebook: numpy, matplotlib and a Jupyter kernel, nothing else.

The kernel runs in a fresh virtual environment whose only packages are numpy, matplotlib and
ipykernel (with what they need), linked from the course environment. The grader package and
myst-nb are not importable there, which a test proves before trusting the others. Each chapter's
outputs (text and figures) must be the same in two independent runs, so numbers glued into the
prose cannot change from one build to the next: the reader's run and the book build's own (its
execution cache), where they agree, else a second reader's run. Without myst-nb, each chapter's
`glue` stand-in prints the glued values, so they are part of the compared outputs.
"""
import ast
import difflib
import importlib.metadata as metadata
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import nbformat
import pytest
from jupyter_cache import get_cache
from jupyter_client.manager import AsyncKernelManager
from myst_nb.core.read import read_myst_markdown_notebook
from nbclient import NotebookClient
from own_loop import run_in_own_loop

pytestmark = pytest.mark.slow      # runs every chapter in a fresh kernel

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("*.md"))
READER_PACKAGES = ("numpy", "matplotlib", "ipykernel")     # what a reader is assumed to have
FORBIDDEN = ("posenc_autograder", "myst_nb")                # must not be importable there
KERNEL_NAME = "reader"
CELL_TIMEOUT = 120
STAND_IN = "[quoted in the text] {name} = {value}\n"        # what a chapter's glue stand-in prints
GLUE_RECORD = "application/papermill.record/text/plain"      # myst-nb's record of a glued value: its repr


def requirement_closure(roots) -> set[str]:
    """The distributions `roots` need at run time (extras and markers that do not apply skipped)."""
    seen, todo = set(), list(roots)
    while todo:
        name = re.split(r"[\s;<>=!~\[(]", todo.pop(), maxsplit=1)[0].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        for requirement in metadata.distribution(name).requires or []:
            marker = requirement.split(";", 1)[1] if ";" in requirement else ""
            if "extra" in marker:
                continue
            if marker and not _marker_applies(marker):
                continue
            todo.append(requirement)
    return seen


def _marker_applies(marker: str) -> bool:
    from packaging.markers import Marker
    return Marker(marker).evaluate()


def link_packages(distributions, target: pathlib.Path) -> None:
    """Symlink each distribution's top-level modules, .libs and .dist-info folders into target.

    The .dist-info folders carry entry points: matplotlib finds the notebook backend through them.
    """
    target.mkdir(parents=True)
    for name in distributions:
        dist = metadata.distribution(name)
        for top in {pathlib.PurePath(f).parts[0] for f in dist.files or []}:
            source = pathlib.Path(dist.locate_file(top))
            if top.endswith(".pth") or top == ".." or not source.exists():
                continue
            if not (target / top).exists():
                (target / top).symlink_to(source)


@pytest.fixture(scope="module")
def reader_python(tmp_path_factory) -> pathlib.Path:
    """A fresh venv that sees only the reader's packages; returns its python."""
    base = tmp_path_factory.mktemp("reader")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    packages = base / "packages"
    link_packages(requirement_closure(READER_PACKAGES), packages)
    (pathlib.Path(site) / "reader_packages.pth").write_text(f"{packages}\n")
    return python


@pytest.fixture(scope="module")
def reader_kernel(reader_python, tmp_path_factory, monkeypatch_module):
    """A kernelspec named KERNEL_NAME that starts ipykernel in the reader's venv."""
    spec_dir = tmp_path_factory.mktemp("jupyter") / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True)
    # No history database: the two kernels of execute_twice would share ~/.ipython's SQLite file, and the one
    # that finds it locked prints "The history saving thread hit an unexpected error" into a cell's output.
    argv = [str(reader_python), "-m", "ipykernel_launcher", "-f", "{connection_file}",
            "--HistoryManager.enabled=False"]
    (spec_dir / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "reader", "language": "python"}))
    monkeypatch_module.setenv("JUPYTER_PATH", str(spec_dir.parents[1]))
    monkeypatch_module.delenv("PYTHONPATH", raising=False)      # the venv alone decides
    return KERNEL_NAME


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def test_reader_environment_has_only_numpy_and_matplotlib(reader_python):
    for module in ("numpy", "matplotlib.pyplot", "ipykernel"):
        subprocess.run([str(reader_python), "-c", f"import {module}"], check=True)
    for module in FORBIDDEN:
        proc = subprocess.run([str(reader_python), "-c", f"import {module}"],
                              capture_output=True, text=True)
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, module


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_source_imports_no_course_package(chapter):
    assert "posenc_autograder" not in chapter.read_text()


async def execute(chapter: pathlib.Path, kernel_name: str) -> nbformat.NotebookNode:
    notebook = read_myst_markdown_notebook(chapter.read_text())
    with tempfile.TemporaryDirectory(prefix="kernel-", dir="/tmp") as sockets:
        # Unix sockets in a folder of this kernel's own: TCP ports are picked free and bound later by the kernel,
        # and another kernel or server of the test run took one in between ("Address already in use").
        manager = AsyncKernelManager(kernel_name=kernel_name, transport="ipc", ip=f"{sockets}/k")
        try:
            await NotebookClient(notebook, km=manager, timeout=CELL_TIMEOUT,
                                 resources={"metadata": {"path": str(chapter.parent)}}).async_execute()
        finally:        # a client given its manager leaves the kernel running: 26 idle kernels by the last chapter
            if manager.has_kernel:
                await manager.shutdown_kernel(now=True)
    return notebook


@pytest.fixture(scope="module")
def book_executed(book_build):
    """The book build's execution cache (myst-nb's, beside its html): each chapter as the build executed it."""
    proc, html_dir = book_build
    assert proc.returncode == 0, "the book did not build"
    return get_cache(str(html_dir.parent / ".jupyter_cache"))


def the_builds_run(cache, chapter: pathlib.Path) -> nbformat.NotebookNode | None:
    """The chapter as the book's build executed it, its glued values as the chapter's stand-in prints them; None
    if the cache holds no run of the chapter as it is now."""
    try:
        record = cache.match_cache_notebook(read_myst_markdown_notebook(chapter.read_text()))
    except KeyError:
        return None
    notebook = cache.get_cache_bundle(record.pk).nb
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [as_printed(out) for out in cell.outputs]
    return notebook


def as_printed(output):
    """A glued value (myst-nb's record of its repr) as the line the glue stand-in prints, when the repr is a Python
    literal; any other output as it is (a record left as it is does not compare equal: a reader's run decides)."""
    record = output.get("metadata", {}).get("scrapbook")
    if not record:
        return output
    try:
        value = ast.literal_eval(output["data"][GLUE_RECORD])
    except (KeyError, ValueError, SyntaxError):
        return output
    return nbformat.v4.new_output("stream", name="stdout", text=STAND_IN.format(name=record["name"], value=value))


def outputs_of(notebook) -> list:
    """Every code cell's outputs without the execution counters. Consecutive pieces of one stream are
    joined, as Jupyter shows them: how the kernel batches a cell's prints varies from run to run."""
    cleaned = []
    for cell in notebook.cells:
        if cell.cell_type == "code":
            outputs = []
            for out in cell.outputs:
                out = {k: v for k, v in out.items() if k != "execution_count"}
                previous = outputs[-1] if outputs else {}
                if out.get("output_type") == "stream" and previous.get("output_type") == "stream" \
                        and previous.get("name") == out.get("name"):
                    previous["text"] += out["text"]
                else:
                    outputs.append(out)
            cleaned.append(outputs)
    return cleaned


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_alone_and_twice_the_same(chapter, reader_kernel, book_executed):
    """The second run is the book build's own where its outputs are the reader's (two processes, two environments:
    nothing a run draws afresh, a seed, a clock, a hash order, agrees by chance), else a second reader's run."""
    first = run_in_own_loop(execute(chapter, reader_kernel))
    errors = [out for cell in outputs_of(first) for out in cell if out["output_type"] == "error"]
    assert errors == []
    assert any(out.get("data", {}).get("image/png") for cell in outputs_of(first) for out in cell)
    glued = "".join(out.get("text", "") for cell in outputs_of(first) for out in cell)
    assert "glue(" not in chapter.read_text() or "[quoted in the text]" in glued
    second = the_builds_run(book_executed, chapter)
    if second is None or outputs_of(second) != outputs_of(first):
        second = run_in_own_loop(execute(chapter, reader_kernel))
    for index, (a, b) in enumerate(zip(outputs_of(first), outputs_of(second), strict=True)):
        assert a == b, f"{chapter.name}: code cell {index} gave different outputs in two runs:\n" + differences(a, b)


def differences(first: list, second: list) -> str:
    """The lines where two runs' outputs of one cell differ (pytest cuts long reprs in the middle)."""
    lines = [json.dumps(outputs, indent=1, sort_keys=True).replace("\\n", "\n").splitlines()
             for outputs in (first, second)]
    return "\n".join(difflib.unified_diff(*lines, "first run", "second run", lineterm="", n=1))
