"""Print the whole book to one PDF: Chromium prints Sphinx's single-page build (`make pdf`).

    python _ext/print_book.py <singlehtml folder> <output folder>

writes <output folder>/posenc-course.pdf; `make pdf` puts it beside the HTML pages, where the intro links it.

The page printed is the book's root document (`root` in _toc.yml: Sphinx writes the single page under
its name, and an index.html that only redirects to it). It is served over a loopback HTTP server
(Chromium refuses web fonts, MathJax's among them, from file://), and printed once it has loaded (not
at Playwright's "network idle", which can come before a long page is parsed), MathJax has typeset
every formula, every image has loaded and every explorable figure has drawn itself. The PDF is
tagged, so images keep their alt text and headings their structure, and its outline (bookmarks)
follows the headings. Debian's Chromium does the printing, the same one the browser tests use.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import pathlib
import sys
import threading

import yaml

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
BOOK = pathlib.Path(__file__).resolve().parents[1]
PDF_NAME = "posenc-course.pdf"      # intro.md links it under this name
# The intro's link to the PDF, as intro.md writes it, and what stands in its place while there is no PDF.
PDF_LINK = f'<a class="reader-pdf" href="{PDF_NAME}">PDF</a>'
NO_PDF_YET = '<span class="reader-pdf">PDF</span>'


def link_pdf(html_dir: pathlib.Path) -> None:
    """The intro links the PDF only while the PDF is there: `make book` alone makes none (Sphinx calls this when
    it has written the pages), `make pdf` does (print_book calls it when the PDF is written)."""
    intro = html_dir / "intro.html"
    if not intro.exists():
        return
    text = intro.read_text()
    if (html_dir / PDF_NAME).exists():
        linked = text.replace(NO_PDF_YET, PDF_LINK)
    else:
        linked = text.replace(PDF_LINK, NO_PDF_YET)
    if linked != text:               # replaced whole: a browser test reading the page meanwhile sees old or new
        written = intro.with_name(intro.name + ".new")
        written.write_text(linked)
        written.replace(intro)
PAPER = {"format": "A4", "margin": {"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"}}
FOOTER = ('<div style="font-size: 8px; width: 100%; text-align: center; color: #555;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')
# Evaluated on the loaded page (the explorables script has drawn its figures by then, or failed to): waits for
# MathJax's typesetting, the fonts and the images, then names the explorable figures that did not draw themselves.
NOT_DRAWN = """async () => {
    await Promise.all([
        window.MathJax && MathJax.startup ? MathJax.startup.promise : null,
        document.fonts.ready,
        ...[...document.images].map(i => i.complete ? null : new Promise(done => { i.onload = i.onerror = done; })),
    ]);
    return [...document.querySelectorAll('.explorable')].filter(f => !f.classList.contains('explorable--live'))
        .map(f => f.id || '(a figure without an id)');
}"""
# Print-only layout: the theme's print styles keep its header buttons; each chapter (a section the
# single page inlines where the table of contents was) starts a new sheet; code wraps, formulas show whole.
PRINT_CSS = """
@media print {
  .bd-header-article, .header-article-items, .bd-sidebar-secondary, .prev-next-area, .bd-footer,
  .bd-footer-content, .bd-footer-article, .headerlink, .copybtn, button.toggle-button { display: none !important; }
  .bd-main .bd-content .bd-article-container { max-width: 100%; }
  div.math { overflow: visible !important; flex-wrap: wrap-reverse; }
  div.math mjx-container { overflow: visible !important; min-width: max-content; }
  .reader-more-left, .reader-more-right { box-shadow: none !important; }
  div.highlight pre { overflow: visible !important; white-space: pre-wrap; overflow-wrap: anywhere;
                      break-inside: auto !important; }
  div.toctree-wrapper > section { break-before: page; }
  h1, h2, h3, h4 { break-after: avoid-page; }
  figure, .explorable, div.math, tr, img, div.cell_input, div.cell_output { break-inside: avoid; }
  img { max-width: 100% !important; }
}
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(folder: pathlib.Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=folder))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def root_page(singlehtml: pathlib.Path) -> pathlib.Path:
    """The single page itself, named after the book's root document."""
    root = yaml.safe_load((BOOK / "_toc.yml").read_text())["root"]
    return singlehtml / f"{root}.html"


# The single page is the whole book (every formula typeset before "load"): Playwright's 30 s ran out at load 25 on
# 2 cores (23 s measured at load 16).
LOAD_SECONDS = 180


def print_page(browser, url: str, target: pathlib.Path) -> None:
    """Print one page (already served at url) to target with Playwright's Chromium `browser`."""
    page = browser.new_page(viewport={"width": 1100, "height": 1400})
    page.set_default_timeout(LOAD_SECONDS * 1000)
    try:
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(url, wait_until="load")
        page.add_style_tag(content=PRINT_CSS)
        not_drawn = page.evaluate(NOT_DRAWN)
        if not_drawn:
            raise RuntimeError(f"{url}: explorable figures {', '.join(not_drawn)} did not draw themselves; not "
                               f"printing a page without them. The page's script errors: {errors or 'none'}")
        page.emulate_media(media="print")
        target.parent.mkdir(parents=True, exist_ok=True)
        page.pdf(path=str(target), print_background=True, tagged=True, outline=True,
                 display_header_footer=True, header_template="<span></span>", footer_template=FOOTER, **PAPER)
    finally:
        page.close()


def print_book(singlehtml: pathlib.Path, folder: pathlib.Path, browser=None) -> pathlib.Path:
    """Print the single page in singlehtml to folder/PDF_NAME; launch Chromium unless a Playwright browser is given."""
    single_page = root_page(singlehtml)
    if not single_page.exists():
        raise FileNotFoundError(f"{single_page} is missing: build it with jupyter-book --builder singlehtml")
    target = folder / PDF_NAME
    with serve(singlehtml) as base:
        if browser is not None:
            print_page(browser, f"{base}/{single_page.name}", target)
        else:
            from playwright.sync_api import sync_playwright
            with sync_playwright() as playwright:
                chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    print_page(chromium, f"{base}/{single_page.name}", target)
                finally:
                    chromium.close()
    link_pdf(folder)
    return target


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n\n")[1])
    written = print_book(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
    print(f"PDF written: {written} ({written.stat().st_size // 1024} KiB)")
