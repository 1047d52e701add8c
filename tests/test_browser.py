"""Every page of the built book, as a reader's browser shows it (Debian's Chromium driven by Playwright).

The `site` and `browser` fixtures live in conftest.py: one server and one Chromium for every browser test.
"""
import html.parser
import json
import urllib.parse

import nbformat
import pytest

from conftest import toc_files

RAW_TEX = ("$$", "\\frac", "\\begin{")
# What a reader must see at the top of every page, uncovered by bars or overlays.
LANDMARKS = (".logo__title", "article.bd-article h1")


@pytest.fixture(scope="session")
def pages(repo_root):
    return toc_files(repo_root)


def open_page(browser, url, width=1280):
    """Load url; return (page, problems seen while loading: console errors, page errors, failed requests)."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="networkidle")
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    return page, problems


def covering_element(page, selector):
    """The element drawn over the centre of the first `selector` element as the page opens, or None."""
    return page.evaluate("""selector => {
        const target = document.querySelector(selector);
        if (!target) return `nothing (no ${selector} on the page)`;
        const box = target.getBoundingClientRect();
        const top = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
        if (!top || target.contains(top) || top.contains(target)) return null;
        return top.tagName.toLowerCase() + (top.id ? "#" + top.id : "") + "." + [...top.classList].join(".");
    }""", selector)


def test_every_page_loads_cleanly_with_typeset_math_and_images(site, browser, pages, repo_root):
    base, _ = site
    shots = repo_root / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    faults = {}
    for name in pages:
        page, problems = open_page(browser, f"{base}/{name}.html")
        text = page.inner_text("main")
        problems += [f"raw TeX visible: {t!r}" for t in RAW_TEX if t in text]
        if page.locator("main .math").count() and not page.locator("mjx-container").count():
            problems.append("math present but not typeset")
        for image in page.evaluate("""() => [...document.querySelectorAll('main img')].map(
                i => ({src: i.src, ok: i.complete && i.naturalWidth > 0, alt: (i.alt || '').trim()}))"""):
            if not image["ok"]:
                problems.append(f"image did not load: {image['src']}")
            if not image["alt"]:
                problems.append(f"image without alt text: {image['src']}")
        problems += [f"{selector} is hidden behind {cover}" for selector in LANDMARKS
                     if (cover := covering_element(page, selector))]
        page.screenshot(path=str(shots / f"{name.replace('/', '__')}.png"), full_page=True)
        page.close()
        if problems:
            faults[name] = problems
    assert faults == {}


def test_pages_read_at_phone_width(site, browser, pages):
    base, _ = site
    too_wide = {}
    for name in pages:
        page, _ = open_page(browser, f"{base}/{name}.html", width=375)
        scroll, inner = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
        if scroll > inner:
            too_wide[name] = (scroll, inner)
        page.close()
    assert too_wide == {}


def _page_name(url, base):
    path = urllib.parse.urlparse(url).path
    return path.removeprefix(urllib.parse.urlparse(base).path + "/").removesuffix(".html")


def test_sidebar_and_next_links_reach_every_page(site, browser, pages):
    base, _ = site
    page, _ = open_page(browser, f"{base}/{pages[0]}.html")
    sidebar = {_page_name(a, base) for a in page.eval_on_selector_all(
        "nav.bd-docs-nav a.reference.internal", "links => links.map(a => a.href.split('#')[0])")}
    sidebar.add(pages[0])
    assert sidebar == set(pages)
    reached = [pages[0]]
    while (link := page.query_selector("a.right-next")) is not None:
        page.goto(link.get_attribute("href") and urllib.parse.urljoin(page.url, link.get_attribute("href")))
        reached.append(_page_name(page.url, base))
    page.close()
    assert reached == pages


def test_search_finds_rotation(site, browser):
    base, _ = site
    page, _ = open_page(browser, f"{base}/search.html?q=rotation")
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    assert page.locator("#search-results ul.search li").count() >= 1
    page.close()


def pages_under(pages, folder):
    found = [p for p in pages if p.startswith(f"{folder}/")]
    assert found, f"no {folder} page in the table of contents"
    return found


def download_links(page, suffix):
    """The page's download-menu links whose address ends in suffix."""
    links = page.eval_on_selector_all(".dropdown-download-buttons a[href]", "links => links.map(a => a.href)")
    return [url for url in links if url.endswith(suffix)]


def fetch_text(page, url):
    response = page.request.get(url)
    assert response.ok, f"HTTP {response.status}: {url}"
    return response.text()


def fetch_notebook(page, url):
    """(raw text, notebook) of a downloaded .ipynb, which must be valid nbformat."""
    text = fetch_text(page, url)
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    return text, notebook


def test_exercise_pages_offer_the_student_notebook(site, browser, pages, repo_root):
    base, _ = site
    for name in pages_under(pages, "exercises"):
        page, _ = open_page(browser, f"{base}/{name}.html")
        links = download_links(page, ".ipynb")
        assert links, f"{name}: no .ipynb download"
        text, _ = fetch_notebook(page, links[0])
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        assert json.loads(text) == json.loads((repo_root / f"{name}.ipynb").read_text())
        page.close()


def test_chapters_offer_the_executed_notebook_and_the_markdown_source(site, browser, pages, repo_root):
    base, _ = site
    for name in pages_under(pages, "chapters"):
        page, _ = open_page(browser, f"{base}/{name}.html")
        notebook_links, source_links = download_links(page, ".ipynb"), download_links(page, ".md")
        assert notebook_links and source_links, f"{name}: download menu lacks .ipynb or .md"
        assert fetch_text(page, source_links[0]) == (repo_root / f"{name}.md").read_text(), f"{name}: .md differs"
        _, notebook = fetch_notebook(page, notebook_links[0])
        with_outputs = sum(bool(c.outputs) for c in notebook.cells if c.cell_type == "code")
        shown = page.locator("main .cell_output").count()
        assert with_outputs == shown > 0, f"{name}: the .ipynb has {with_outputs} executed cells, the page {shown}"
        page.close()


class LinkCollector(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])


def test_internal_links_resolve(site):
    _, html_dir = site
    parsed = {}
    for path in html_dir.rglob("*.html"):
        collector = LinkCollector()
        collector.feed(path.read_text(errors="replace"))
        parsed[path.resolve()] = collector
    broken = []
    for path, collector in parsed.items():
        for href in collector.links:
            target = urllib.parse.urlparse(href)
            if target.scheme or href.startswith(("mailto:", "javascript:")) or "_static" in target.path:
                continue
            file = (path.parent / urllib.parse.unquote(target.path)).resolve() if target.path else path
            if not file.exists():
                broken.append(f"{path.relative_to(html_dir.resolve())}: {href}")
            elif target.fragment and file in parsed and target.fragment not in parsed[file].ids:
                broken.append(f"{path.relative_to(html_dir.resolve())}: {href} (no such anchor)")
    assert broken == []
