"""Make the built book self-contained and free of script errors.

- MathJax is served from the built site, not a CDN, so math typesets offline and behind school
  firewalls. It comes from the pinned `django-static-mathjax` wheel (MathJax 3.2.2); `mathjax_path`
  in _config.yml points at `_static/mathjax/tex-chtml.js`, which this extension fills.
- The theme's colour mode is set (it is empty by default, which logs a console error).
- sphinx-thebe (live code, disabled in _config.yml) still injects its configuration script, twice
  per page when the environment is read twice, which raises "Identifier 'THEBE_JS_URL' has already
  been declared" in every page; its scripts are dropped from the pages.
"""
from __future__ import annotations

import pathlib
import shutil

import mathjax  # the django-static-mathjax distribution installs this package

SOURCE = pathlib.Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def copy_mathjax(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        shutil.copytree(SOURCE, pathlib.Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


def clean_page_context(app, pagename, templatename, context, doctree) -> None:
    # The pydata layout starts from `default_mode`, which sphinx-book-theme leaves empty: the theme
    # then logs "Got invalid theme mode" on every page.
    if not context.get("default_mode"):
        context["default_mode"] = "auto"
    scripts = context.get("script_files")
    if scripts is not None:
        context["script_files"] = [s for s in scripts if "thebe" not in str(s).lower()
                                   and "THEBE" not in str(getattr(s, "attributes", {}).get("body", ""))]


def setup(app):
    app.connect("build-finished", copy_mathjax)
    app.connect("html-page-context", clean_page_context, priority=1000)   # after the theme
    return {"parallel_read_safe": True, "parallel_write_safe": True}
