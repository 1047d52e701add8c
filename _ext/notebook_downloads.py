"""Offer every executed chapter as an .ipynb download, next to its .md source.

sphinx-book-theme adds an ".ipynb" entry to a page's download menu only when the page context holds
`ipynb_source`, and nothing sets it for MyST Markdown notebooks, so chapters offered only ".md".
myst-nb writes each parsed notebook to `_build/jupyter_execute/<page>.ipynb`, but when its
outputs come from the execution cache it writes the cells without them (myst-nb 1.4 merges the
cached outputs into a copy). This extension merges them from the cache again, publishes the
executed notebook under `_sources/` and names it in the page context.
"""
from __future__ import annotations

import pathlib

import nbformat
from jupyter_cache import get_cache
from myst_nb.sphinx_ext import OUTPUT_FOLDER  # where myst-nb writes notebooks, beside the HTML folder

BUILD_ONLY_METADATA = ("jupytext", "source_map")


def executed_notebook(app, pagename: str) -> pathlib.Path:
    return pathlib.Path(app.outdir).parent / OUTPUT_FOLDER / f"{pagename}.ipynb"


def publish_notebook(app, pagename, templatename, context, doctree) -> None:
    if context.get("page_source_suffix") == ".ipynb":
        return                      # the source itself is a notebook: the theme offers it already
    executed = executed_notebook(app, pagename)
    if not executed.exists():
        return                      # a plain Markdown page, not a notebook
    notebook = nbformat.read(executed, as_version=4)
    try:
        _, notebook = get_cache(app.env.mystnb_config.execution_cache_path).merge_match_into_notebook(notebook)
    except KeyError:
        pass                        # executed fresh in this build: the outputs are already in place
    for key in BUILD_ONLY_METADATA:         # build bookkeeping, meaningless to a reader's Jupyter
        notebook.metadata.pop(key, None)
    target = pathlib.Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def setup(app):
    app.connect("html-page-context", publish_notebook, priority=500)   # before the theme's buttons (501)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
