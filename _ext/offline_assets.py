"""Serve MathJax from the built site, not a CDN, so the book works offline and behind firewalls.

MathJax comes from the pinned `django-static-mathjax` wheel (MathJax 3.2.2); `mathjax_path` in
_config.yml points at `_static/mathjax/tex-chtml.js`, which this extension fills after the build.
"""
from __future__ import annotations

import pathlib
import shutil

import mathjax  # the django-static-mathjax distribution installs this package

SOURCE = pathlib.Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def copy_mathjax(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        shutil.copytree(SOURCE, pathlib.Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


def setup(app):
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
