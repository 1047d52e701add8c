"""Execute the chapters the execution cache lacks, one kernel per core, before Sphinx reads them.

myst-nb (`execute_notebooks: cache`) executes a notebook while Sphinx reads it, one page after the other: from
nothing that is 13 chapters of 3-13 s each (most of it a kernel starting and importing numpy, matplotlib and, for
glue, nbformat) on one core of the machine's two, about half of `make book`. Here, when Sphinx is about to read,
every chapter whose outputs the cache lacks is executed first, several at once, and stored in the cache exactly as
myst-nb stores it: the notebook its own reader makes from the page (hence the same cache key), the same project
record and execution time.
Sphinx's reading then finds each one cached. A chapter that fails here is not stored: myst-nb executes it again as it
reads and reports the failure as it always did, so a failing cell still fails the build with the same message.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import threading
import time
from pathlib import PurePosixPath

from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from myst_nb.core.read import create_nb_reader
from nbclient import NotebookClient
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

# Run in each kernel before the chapter's first cell (IPython's exec_lines: no cell, no execution count, no name left):
# a chapter's first glue() imports nbformat, hence jsonschema, whose optional IRI grammars cost 1.3 CPU-s a kernel to
# check a string format no chapter uses. The environment and the grader's package defer them (iri_deferral.py), and
# the package keeps OpenBLAS to the kernel's own thread beside the other kernels; neither changes a number a chapter
# prints or plots.
KERNEL_START = ("from posenc_autograder import lazy_imports as _posenc_lazy_imports; "
                "del _posenc_lazy_imports")


def pending_chapters(env, docnames) -> list[tuple[pathlib.Path, dict, object]]:
    """(path, read format, notebook) of each page to read that myst-nb would execute and the cache lacks."""
    config = env.mystnb_config
    if config.execution_mode != "cache":
        return []
    cache = get_cache(config.execution_cache_path)
    pending = []
    for docname in sorted(docnames):
        path = pathlib.Path(env.doc2path(docname))
        if any(PurePosixPath(path.as_posix()).match(p) for p in config.execution_excludepatterns):
            continue
        text = path.read_text(encoding="utf8")
        reader = create_nb_reader(str(path), env.myst_config, config, text)
        if reader is None:
            continue                                   # a plain Markdown page
        notebook = reader.read(text)
        if config.metadata_key in notebook.metadata:
            continue                                   # its own execution settings: left to myst-nb as it reads
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            pending.append((path, reader.read_fmt, notebook))
    return pending


async def execute(notebook, path: pathlib.Path, timeout: int, allow_errors: bool) -> float | None:
    """Seconds the notebook took, its outputs written into it; None if it failed (myst-nb reports that)."""
    settings = notebook.metadata.get("execution", {})         # as jupyter-cache lets a notebook override them
    started = time.perf_counter()
    client = NotebookClient(notebook, timeout=settings.get("timeout", timeout),
                            allow_errors=settings.get("allow_errors", allow_errors), record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}},
                            extra_arguments=[f"--IPKernelApp.exec_lines={KERNEL_START}"])
    try:
        await client.async_execute()
    except Exception:  # noqa: BLE001 - any failure is myst-nb's to report when it executes the page itself
        return None
    return time.perf_counter() - started


def join_streams(notebook) -> None:
    """Each run of one stream's consecutive outputs in a cell as one output, its text the pieces in order: how the
    kernel's flushes split a cell's prints depends on how fast it ran, and each piece would be a block of its own on
    the page. (myst-nb's nb_merge_streams would also move prints above a figure and end every piece with a newline.)"""
    for cell in notebook.cells:
        joined = []
        for output in cell.get("outputs", []):
            previous = joined[-1] if joined else None
            if (previous is not None and output.output_type == "stream" and previous.output_type == "stream"
                    and output.name == previous.name):
                previous.text += output.text
            else:
                joined.append(output)
        if "outputs" in cell:
            cell.outputs = joined


async def execute_all(pending, config, jobs: int) -> list[float | None]:
    slots = asyncio.Semaphore(jobs)

    async def one(path, notebook):
        async with slots:
            return await execute(notebook, path, config.execution_timeout, config.execution_allow_errors)
    return await asyncio.gather(*(one(path, notebook) for path, _, notebook in pending))


def in_own_thread(coroutine):
    """Run a coroutine to its end on an event loop of its own thread (Sphinx's may hold one)."""
    result = {}
    thread = threading.Thread(target=lambda: result.update(value=asyncio.run(coroutine)))
    thread.start()
    thread.join()
    return result["value"]


def execute_pending(app, env, docnames) -> None:
    pending = pending_chapters(env, docnames)
    if not pending:
        return                          # one alone runs here too: its kernel starts as KERNEL_START says
    jobs = min(len(pending), os.cpu_count() or 1)
    config = env.mystnb_config
    LOGGER.info(f"executing {len(pending)} notebooks, {jobs} at a time [parallel_execution]")
    started = time.perf_counter()
    seconds = in_own_thread(execute_all(pending, config, jobs))
    cache = get_cache(config.execution_cache_path)
    for (path, read_fmt, notebook), taken in zip(pending, seconds, strict=True):
        if taken is None:
            continue
        join_streams(notebook)
        record = cache.add_nb_to_project(str(path), read_data=read_fmt)
        cache.cache_notebook_bundle(CacheBundleIn(notebook, record.uri, data={"execution_seconds": taken}),
                                    check_validity=False, overwrite=True)
    LOGGER.info(f"executed {sum(t is not None for t in seconds)} of {len(pending)} notebooks in "
                f"{time.perf_counter() - started:.1f} s [parallel_execution]")


def setup(app):
    app.connect("env-before-read-docs", execute_pending)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
