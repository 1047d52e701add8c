"""Make the built book self-contained and free of script errors.

- MathJax is served from the built site, not a CDN, so math typesets offline and behind school
  firewalls. It comes from the pinned `django-static-mathjax` wheel (MathJax 3.2.2); `mathjax_path`
  in _config.yml points at `_static/mathjax/tex-chtml.js`, which this extension fills.
- The theme's colour mode is set (it is empty by default, which logs a console error).
- sphinx-thebe (live code, disabled in _config.yml) still injects its configuration script, twice
  per page when the environment is read twice, which raises "Identifier 'THEBE_JS_URL' has already
  been declared" in every page; its scripts are dropped from the pages.
- The theme's icon fonts (FontAwesome) are fetched in CORS mode, which a browser refuses for a page
  opened as a file (the address `make book` prints): three errors on every page and no icons. Their
  woff2 files are written into the stylesheet as data: addresses (the Font Awesome 6 faces the theme
  uses; the version 4 and 5 aliases, which nothing on the pages uses, are dropped), and the pages'
  `<link rel="preload" as="font">` tags, which fetch them too, are removed.
- The intro links the PDF only when there is one beside the pages (print_book.link_pdf).
"""
from __future__ import annotations

import base64
import pathlib
import re
import shutil

import mathjax  # the django-static-mathjax distribution installs this package
from print_book import link_pdf  # the book's printer, beside this file in _ext

SOURCE = pathlib.Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def copy_mathjax(app, exception) -> None:
    if exception is None and app.builder.format == "html":
        shutil.copytree(SOURCE, pathlib.Path(app.outdir) / "_static" / "mathjax", dirs_exist_ok=True)


FONT_FACE = re.compile(r"@font-face\{[^}]*\}")
FONT_PRELOAD = re.compile(r'<link rel="preload" as="font"[^>]*>\s*')
WOFF2_SOURCE = re.compile(r"src:url\(\.\./webfonts/([\w.-]+\.woff2)\)[^;}]*")


def inline_icon_fonts(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = pathlib.Path(app.outdir)
    for css in outdir.glob("_static/vendor/fontawesome/*/css/all.min.css"):
        fonts = css.parent.parent / "webfonts"

        def embedded(face: re.Match) -> str:
            rule = face.group(0)
            if "Font Awesome\\ 6" not in rule:
                return ""
            return WOFF2_SOURCE.sub(lambda source: 'src:url(data:font/woff2;base64,' + base64.b64encode(
                (fonts / source.group(1)).read_bytes()).decode() + ') format("woff2")', rule)  # noqa: B023 - run at once, in this iteration
        css.write_text(FONT_FACE.sub(embedded, css.read_text()))
    for page in outdir.rglob("*.html"):
        text = page.read_text()
        if FONT_PRELOAD.search(text):
            page.write_text(FONT_PRELOAD.sub("", text))


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
    app.connect("build-finished", inline_icon_fonts)
    app.connect("build-finished", lambda app, exception: link_pdf(pathlib.Path(app.outdir))
                if exception is None and app.builder.name == "html" else None)
    app.connect("html-page-context", clean_page_context, priority=1000)   # after the theme
    return {"parallel_read_safe": True, "parallel_write_safe": True}
