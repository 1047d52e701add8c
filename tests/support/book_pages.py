"""The book's pages in reading order, read from _toc.yml (shared by the book, browser and PDF tests)."""
import html.parser
import pathlib
import re
import urllib.parse

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
RAW_TEX = ("$$", "\\frac", "\\begin{")          # TeX a reader should never see unrendered
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
SMALL_COUNT = 12


def toc_files(repo_root: pathlib.Path = ROOT) -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    toc = yaml.safe_load((repo_root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


def numbers(text: str) -> set[float]:
    """The absolute values of the numbers written in text (thousands separators allowed)."""
    return {abs(float(n.replace(",", ""))) for n in NUMBER.findall(text)}


DESKTOP = {"width": 1280, "height": 900}        # a reader's window on a desktop
# The screenshots the book's tests leave in _build/screenshots are for a person to look at (nothing reads them back):
# JPEG at this quality (an explorable figure's PNG cost 0.29 CPU-s, its JPEG 0.08: 16 of each, load 18).
SHOT_QUALITY = 85


def open_page(browser, url, width=DESKTOP["width"], color_scheme="light"):
    """Load url in a window of its own; return (page, problems seen while loading: console errors, page errors,
    failed requests)."""
    return load(browser.new_page(viewport=DESKTOP | {"width": width}, color_scheme=color_scheme), url)


def reader(browser, width=DESKTOP["width"], color_scheme="light"):
    """A reader's browser window (a context; close it when done) whose pages `load` opens one after another: they
    share its cache, as a reader going from page to page does (a page opened with its own context starts Chromium's
    context again and fetches and compiles the theme's and MathJax's scripts again: ~0.6 CPU-s a page)."""
    return browser.new_context(viewport=DESKTOP | {"width": width}, color_scheme=color_scheme)


def load(page, url):
    """Load url in page (new, nothing loaded yet); return (page, problems seen while loading: console errors, page
    errors, failed requests)."""
    problems: list[str] = []
    watch(page, lambda: problems)
    go_to(page, url)
    return page, problems


def watch(page, problems) -> None:
    """What goes wrong on the page, appended to the list `problems()` returns when it happens: console errors, page
    errors, failed requests."""
    page.on("console", lambda m: problems().append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems().append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problems().append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: problems().append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)


def go_to(page, url) -> None:
    page.goto(url, wait_until="networkidle")
    page.wait_for_load_state("load")      # network idle can come before the document is parsed (see print_book)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    # reader.js marks scrolling boxes once the fonts are in; a frame after that, its marks are on the page
    page.evaluate("() => document.fonts.ready.then(() => new Promise(done => requestAnimationFrame(() => done())))")


class Tab:
    """One tab of a reader's window (`reader`) that goes from page to page as a reader following links does: each
    page is loaded in the same tab, where a page opened anew starts a renderer process and compiles the theme's and
    MathJax's scripts again (19 pages: 17.2 against 8.4 CPU-s, load 22-26). `load(url)` returns (page, the problems
    seen while that page loaded and was read, as `load` above); the tab closes with its window."""

    def __init__(self, window):
        self.page, self.problems = window.new_page(), []
        watch(self.page, lambda: self.problems)

    def load(self, url, width=None):
        """width: the window made a desktop's window that wide first (an earlier reader of the tab may have resized
        it); None: left as it is."""
        self.problems = []
        if width is not None:
            self.page.set_viewport_size(DESKTOP | {"width": width})
        go_to(self.page, url)
        return self.page, self.problems


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class PageLinks(html.parser.HTMLParser):
    """What a reader clicks on a built page and what it shows, read from the HTML the server sends (the theme's
    scripts add no link and no output): the sidebar's links (`nav.bd-docs-nav a.reference.internal`), the first
    "next" link (`a.right-next`), the download menu's links (`.dropdown-download-buttons a[href]`), the number of
    cell outputs in the article (`main .cell_output`). Hrefs as written; `resolve` makes them addresses."""

    def __init__(self, text: str):
        super().__init__()
        self.open: list[tuple[str, set[str]]] = []
        self.sidebar: list[str] = []
        self.next: str | None = None
        self.downloads: list[str] = []
        self.outputs = 0
        self.feed(text)
        self.close()

    def _inside(self, tag: str = "", css_class: str = "") -> bool:
        return any((not tag or name == tag) and (not css_class or css_class in classes)
                   for name, classes in self.open)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = set((attrs.get("class") or "").split())
        href = attrs.get("href")
        if tag == "a" and href is not None:
            if {"reference", "internal"} <= classes and self._inside("nav", "bd-docs-nav"):
                self.sidebar.append(href)
            if "right-next" in classes and self.next is None:
                self.next = href
            if self._inside(css_class="dropdown-download-buttons"):
                self.downloads.append(href)
        if "cell_output" in classes and self._inside("main"):
            self.outputs += 1
        if tag not in VOID:
            self.open.append((tag, classes))

    def handle_endtag(self, tag):
        for depth in range(len(self.open) - 1, -1, -1):       # the innermost open element of that name, and any
            if self.open[depth][0] == tag:                       # left unclosed inside it
                del self.open[depth:]
                return


def resolve(page_url: str, href: str) -> str:
    """The address a link on the page at page_url leads to, as the browser's `a.href` gives it."""
    return urllib.parse.urljoin(page_url, href)
