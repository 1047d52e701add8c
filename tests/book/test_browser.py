"""Every page of the built book, as a reader's browser shows it (Debian's Chromium driven by Playwright).

The `site` and `browser` fixtures live in conftest.py: one server and one Chromium for every browser test.
"""
import contextlib
import html.parser
import json
import typing
import urllib.parse
import urllib.request

import nbformat
import pytest
from axe_run import SAMPLED, axe_run, rules_tagged, sample_settles
from book_pages import DESKTOP, RAW_TEX, SHOT_QUALITY, PageLinks, Tab, open_page, reader, resolve, toc_files

from posenc_autograder.authoring import book_downloads

# What a reader must see at the top of every page, uncovered by bars or overlays.
LANDMARKS = (".logo__title", "article.bd-article h1")
# axe-core (pinned in requirements.txt through the package that bundles it; tests/support/axe_run.py runs it) and
# the rules it applies: WCAG 2.0 and 2.1, levels A and AA, including the rules axe still calls experimental (label in
# name).
WCAG_AA = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa")
BLOCKING = ("serious", "critical")
# Pages Sphinx makes beyond the table of contents; the search page with results showing.
GENERATED_PAGES = ("search.html?q=rotation", "genindex.html")
PHONE_WIDTH = 375          # narrower than the 390 px phones the issue names: what fits here fits there


@pytest.fixture(scope="session")
def pages(repo_root):
    return toc_files(repo_root)


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


def axe_violations(page, rules=None, sample_code=True, within=None) -> dict:
    """axe-core's serious and critical WCAG 2.1 A/AA violations on the page as it is shown now:
    {rule: [the elements, as CSS selectors]}. `rules` runs only those rules. The highlighted code's contrast is
    decided by a sample of each look, with the same violations as axe's run over every span (axe_run.py;
    sample_code=False: every span; within: only that element's, axe_run's)."""
    run_only = {"type": "rule", "values": list(rules) if rules else rules_tagged(page, WCAG_AA)}
    return {v["id"]: [" ".join(map(str, n["target"])) for n in v["nodes"]]
            for v in axe_run(page, run_only, sample_code, within)
            if v["impact"] in BLOCKING and set(v["tags"]) & set(WCAG_AA)}


# Elements whose box may be wider than the column: each must fit, or sit in a box that scrolls and fits.
# (MathJax's inner elements are the formula's own layout, inside its container.)
CUT_OFF = """() => {
    const name = e => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + [...e.classList].map(c => "." + c).join("")
        + " '" + (e.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50) + "'";
    const cut = [];
    for (const element of document.querySelectorAll("article.bd-article *:not(mjx-container *)")) {
        let box = element.getBoundingClientRect();
        if (box.width === 0 && box.height === 0) continue;          // not displayed
        let clipped = null;
        for (let a = element.parentElement; a && !clipped; a = a.parentElement) {
            const overflow = getComputedStyle(a).overflowX;
            if (overflow === "visible") continue;
            const frame = a.getBoundingClientRect();
            if (overflow === "auto" || overflow === "scroll") { box = frame; continue; }   // scrolls: its box must fit
            if (box.left < frame.left - 1 || box.right > frame.right + 1)
                clipped = `clipped by ${name(a).slice(0, 60)}`;
        }
        if (!clipped && (box.left < -1 || box.right > innerWidth + 1)) clipped = "beyond the window";
        if (clipped) cut.push(`${name(element)}: ${clipped}`);
    }
    return cut;
}"""
# A numbered equation too wide for the column scrolls in the column's full width, not beside its number.
SQUEEZED_EQUATIONS = """() => [...document.querySelectorAll("div.math > mjx-container")]
    .filter(m => m.scrollWidth > m.clientWidth + 1 && m.getBoundingClientRect().width < m.parentElement.clientWidth - 1)
    .map(m => m.parentElement.id || m.textContent.slice(0, 40))"""
# A formula or code box that hides part of itself (scrolled to its start) shows a shadow on the right
# (more than the 8 px a subscript or an italic letter overhangs: reader.js's SLACK).
UNMARKED_SCROLLING = """() => [...document.querySelectorAll("article div.math > mjx-container, article pre")]
    .filter(box => box.scrollWidth > box.clientWidth + 8 && ["auto", "scroll"].includes(getComputedStyle(box).overflowX)
                   && !box.classList.contains("reader-more-right"))
    .map(box => box.tagName.toLowerCase() + " '" + box.textContent.trim().slice(0, 40) + "'")"""


def page_problems(page) -> list[str]:
    """What a reader would see go wrong on a loaded page: raw TeX, untypeset math, broken or unlabelled
    images, the title or navigation covered."""
    problems = []
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
    return problems


# Inline formulas whose content is wider than their box: in a browser that draws scrollbars each one shows a
# scrollbar under the formula (span.math scrolls sideways, for the long ones on a phone).
OVERFLOWING_INLINE_MATH = """() => [...document.querySelectorAll("article span.math")]
    .filter(s => s.scrollWidth > s.clientWidth)
    .map(s => `${s.textContent.trim().slice(0, 40)} (${s.scrollWidth} px in ${s.clientWidth})`)"""
# MathJax's glyphs take their final widths when its fonts have loaded (reader.js fits the formulas then).
FONTS_LOADED = "() => document.fonts.ready.then(() => new Promise(r => requestAnimationFrame(() => r(true))))"
SCROLLBAR_WIDTH = """() => { const box = document.createElement("div");
    box.style.cssText = "overflow: scroll; width: 100px; height: 100px; position: absolute";
    document.body.append(box); const width = box.offsetWidth - box.clientWidth; box.remove(); return width; }"""


# The crawl's screenshots: each page's first screen, as a reader opening it sees it (book_pages.SHOT_QUALITY). A whole
# page's (Chromium lays it out and draws it at its full height) cost 0.9 CPU-s a page against 0.13 (10 pages, load 19),
# the crawl's largest part after loading the pages and axe.
SHARES = 2                 # the crawls of every page in shares, each its own group: two workers crawl one each
SHARE_IDS = [f"share {i + 1} of {SHARES}" for i in range(SHARES)]


@pytest.fixture(scope="module", params=range(SHARES), ids=SHARE_IDS)
def desktop_pages(request, site, browser_with_scrollbars, pages, repo_root):
    """Every page opened once at desktop width (light theme) in a Chromium that draws scrollbars, as most desktops
    do, every SHARES-th from its share's first: {page: DesktopPage}; a screenshot of each one's first screen lands
    in _build/screenshots. Each check reads the page as it first shows (the screenshot and axe come last); then the
    same page is turned into a phone's (as_phone) for the phone-width checks. The pages are loaded one after another
    in one tab, its window made a desktop's again before each (as_desktop)."""
    base, _ = site
    shots = repo_root / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    found = {}
    every = [f"{p}.html" for p in pages] + list(GENERATED_PAGES)
    with contextlib.closing(reader(browser_with_scrollbars)) as window:
        tab = Tab(window)
        scrollbars = window.new_cdp_session(tab.page)        # the session whose override hides them, and shows them
        for name in every[request.param::SHARES]:
            found[name] = desktop_page(tab, scrollbars, base, name, shots)
    return found


def desktop_page(tab, scrollbars, base, name, shots) -> "DesktopPage":
    """What the desktop crawl reads of one page, loaded in the crawl's tab made a desktop's window again."""
    as_desktop(tab.page, scrollbars)
    page, problems = tab.load(f"{base}/{name}")
    shown, overflowing = page.evaluate(WINDOW), []
    window = [] if (shown["theme"], shown["width"]) == ("light", DESKTOP["width"]) else \
        [f"not a desktop's window in the light theme: {shown}"]
    if name in GENERATED_PAGES:                  # the search and index pages: axe only
        if "search" in name:
            page.wait_for_selector("#search-results ul.search li p.context", timeout=15000)
        problems = window
    else:
        overflowing = page.evaluate(OVERFLOWING_INLINE_MATH)
        problems = problems + window + page_problems(page)    # a copy: axe's own stylesheet reads are not the page's
        page.screenshot(path=str(shots / f"{name[:-len('.html')].replace('/', '__')}.jpg"), quality=SHOT_QUALITY)
    violations = axe_violations(page)
    at_phone_width = None
    if name not in GENERATED_PAGES:      # reader.js's marks as the page loaded, then as a phone shows it
        at_phone_width = [f"hides more without showing it, as loaded: {box}"
                          for box in page.evaluate(UNMARKED_SCROLLING)] + phone_problems(as_phone(page, scrollbars))
    return DesktopPage(problems, violations, shown["scrollbar"], overflowing, at_phone_width)


class DesktopPage(typing.NamedTuple):
    problems: list[str]              # page_problems and what went wrong while it loaded
    violations: dict                 # axe-core's serious and critical WCAG 2.1 A/AA violations
    scrollbar: int                   # px: the width of a scrollbar in this browser (0: it draws none)
    overflowing_formulas: list[str]  # inline formulas wider than their box (each would show a scrollbar)
    at_phone_width: list[str] | None  # phone_problems of the page turned into a phone's (None: not a page of the toc)


def test_every_page_loads_cleanly_with_typeset_math_and_images(desktop_pages):
    assert {name: seen.problems for name, seen in desktop_pages.items() if seen.problems} == {}


def test_every_page_passes_axe_wcag_2_1_aa(desktop_pages):
    """No serious or critical violation of axe-core's WCAG 2.1 A/AA rules on any page (light theme; the
    phone-width test checks the dark theme's contrast)."""
    assert {name: seen.violations for name, seen in desktop_pages.items() if seen.violations} == {}


@pytest.fixture(scope="module")
def tab(browser):
    """The tab in which the tests that read a page or three of the book (and make it worse, for the checks that can
    fail) load each, as the crawls do theirs (book_pages.Tab): one for the module's tests, one group (conftest.py at
    the root)."""
    with contextlib.closing(reader(browser)) as window:
        yield Tab(window)


def test_the_axe_check_can_fail(site, tab, pages):
    """A page made worse (a link's contrast lowered, a list without items) is caught by the same check."""
    base, _ = site
    page, _ = tab.load(f"{base}/{pages[0]}.html", width=DESKTOP["width"])
    page.evaluate("""() => document.querySelector('article').insertAdjacentHTML('beforeend',
        '<p style="color: #bbb">faint</p><div role="list"><div>x</div></div>')""")
    assert {"color-contrast", "aria-required-children"} <= set(axe_violations(page))


def test_the_axe_check_runs_the_rules_a_run_by_tag_runs_that_can_report_wcag_2_1_aa(browser):
    """rules_tagged names what axe runs by tag (WCAG 2.1 A/AA and experimental) less the experimental rules whose
    findings carry no WCAG A/AA tag (the check leaves them out): the same violations, for less."""
    page = browser.new_page()
    page.set_content("<main><h1>A page</h1><p>text</p></main>")           # no title, no language: two violations
    by_tag = {"type": "tag", "values": [*WCAG_AA, "experimental"]}
    chosen = rules_tagged(page, WCAG_AA)
    ran = page.evaluate("""runOnly => axe.run(document, {runOnly}).then(result => ["passes", "incomplete",
        "inapplicable", "violations"].flatMap(kind => result[kind].map(rule => [rule.id, rule.tags])))""", by_tag)
    assert sorted(chosen) == sorted(rule for rule, tags in ran if set(tags) & set(WCAG_AA))
    assert {"label-content-name-mismatch"} <= set(chosen) < {rule for rule, _ in ran}
    assert axe_violations(page) == {v["id"]: [" ".join(n["target"]) for n in v["nodes"]]
                                    for v in axe_run(page, by_tag, sample_code=False)} != {}
    page.close()


# Faults the sampling of highlighted code (axe_run.py) could miss, each put on the page and taken off again (#fault):
# a token class made faint; one name made faint (`target`: a name the sampling left to its look's sample); a dark box
# drawn under that name, in the code block (an element over a span is "needs review" for axe, not a violation).
CODE_FAULTS = {
    "a token class": """() => document.head.insertAdjacentHTML('beforeend',
        '<style id="fault">div.highlight pre .n { color: #aaa !important }</style>')""",
    "one span": """() => { window.target.style.color = '#aaa'; window.target.id = 'fault'; }""",
    "a box under one name": """() => { const span = window.target;
        const box = span.getBoundingClientRect();
        span.insertAdjacentHTML('beforebegin', `<span id="fault" style="display: inline-block; background: #333;
            vertical-align: top; width: ${box.width}px; height: ${box.height}px; margin-right: -${box.width}px">
            </span>`); }""",
}
PICK_TARGET = f"""scrolledOut => {{
    window.target = [...document.querySelectorAll('div.highlight pre > span.n[{SAMPLED}]')].find(span => {{
        const pre = span.parentElement.getBoundingClientRect();
        return span.textContent.trim().length > 1
            && (span.getBoundingClientRect().left >= pre.right) === scrolledOut; }});
    return window.target ? document.querySelectorAll('[{SAMPLED}]').length : 0; }}"""
# The faults put on one span, again on a span scrolled out of its code box at phone width (a block that scrolls is a
# region of its own to axe, and the sampling decides such a span as a span of the same block that shows).
ONE_SPAN_FAULTS = ("one span", "a box under one name")
UNDO_FAULT = """() => { const fault = document.getElementById('fault');
    if (fault === window.target) { fault.style.color = ''; fault.removeAttribute('id'); } else fault.remove(); }"""


def test_the_sampled_contrast_check_reports_what_a_full_run_reports(site, tab):
    """The highlighted code's contrast decided by a sample of each look reports what axe's run over every span
    reports: nothing on the page as built (where it did sample), and the same violations for each fault; at phone
    width too, each fault on one span put on a span scrolled out of view. The sampled check returns axe's run over
    every span whenever its sample does not settle the page (compared whole on the first fault), so for each other
    fault it is enough that the sample does not settle it: the same violations, without that run made twice. Each
    other fault lies in its target's code block: axe's run over every span of that block shows that a run over every
    span finds it, at a sixth of the cost of a run over the page's every span."""
    base, _ = site
    page, _ = tab.load(f"{base}/chapters/01_why_position.html", width=DESKTOP["width"])
    compared_whole = False
    for scrolled_out, faults in ((False, CODE_FAULTS), (True, ONE_SPAN_FAULTS)):
        if scrolled_out:
            page.set_viewport_size({"width": PHONE_WIDTH, "height": 900})
        assert axe_violations(page, ["color-contrast"]) == {}
        assert page.evaluate(PICK_TARGET, scrolled_out) > 300, \
            "the page's code was not sampled (or no sampled span scrolled out): the test would compare two full runs"
        for fault in faults:
            page.evaluate(CODE_FAULTS[fault])
            block = None if not compared_whole else page.evaluate_handle("() => window.target.closest('pre')")
            full = axe_violations(page, ["color-contrast"], sample_code=False, within=block)
            assert full.get("color-contrast"), f"{fault}: the full run finds nothing, the test would see nothing"
            assert not sample_settles(page, {"type": "rule", "values": ["color-contrast"]}), fault
            if not compared_whole:
                assert axe_violations(page, ["color-contrast"]) == full, fault
                compared_whole = True
            page.evaluate(UNDO_FAULT)


def test_pages_read_at_phone_width(desktop_pages):
    """On a phone the page does not scroll sideways; no formula, code cell, output, table or figure is cut off:
    each fits the column or scrolls inside its own box, which fits, which the keyboard can reach and which
    shows that it hides more; a long numbered equation is given the full width (its number goes below it).
    In the dark theme, which the axe test (light) does not see: the text contrast. (The desktop crawl's share of
    the pages, each turned into a phone's.)"""
    assert {name: seen.at_phone_width for name, seen in desktop_pages.items() if seen.at_phone_width} == {}


# A phone's window, made of a page loaded at desktop width: 375 px wide, no scrollbars, the reader's system in dark
# mode. Loading each page a second time at that width cost more than the phone's checks themselves (55 against 10
# CPU-s for the 19 pages, load 13): the page's every element in the article lays out the same either way (its box,
# colours and scroll widths compared element by element on every page, load against resize: equal but MathJax's hidden
# copy for screen readers, by a pixel), as a phone turned on its side or a narrowed window does. What only a load sets
# is off-screen at this width (the closed sidebar's scroll position) or hidden (the theme's dark class on its closed
# menus). reader.js marks the scrolling boxes again on the resize; its marks made as the page loaded are checked
# before the resize (a page loaded without them showed 6 boxes hiding more unmarked at desktop width).
PHONE = {"width": PHONE_WIDTH, "height": 900}
WINDOW = """() => ({theme: document.documentElement.dataset.theme, width: innerWidth,
                     scrollbar: (""" + SCROLLBAR_WIDTH + """)()})"""
# The theme marks the code cells that scroll as keyboard stops (tabindex 0) 300 ms after the last resize (a debounced
# timer set by the resize event): a timer of that length set after the resize fires after it. Without it, axe read a
# phone-width code cell before it was marked, when animations ended sooner (scrollable-region-focusable, a flake).
THEME_RESIZE_DEBOUNCE_MS = 300
SETTLED = """() => Promise.race([new Promise(late => setTimeout(late, 3000)),
    new Promise(frame => requestAnimationFrame(() => requestAnimationFrame(frame)))
        .then(() => Promise.all([...document.getAnimations().map(animation => animation.finished),
            new Promise(marked => setTimeout(marked, """ + str(THEME_RESIZE_DEBOUNCE_MS) + """))]))])"""


def as_phone(page, scrollbars):
    """The loaded page in a phone's window (PHONE, dark, no scrollbars: hidden through the page's CDP session
    `scrollbars`) once its layout has settled (the sidebar's slide off-screen ended, the theme's keyboard stops set
    again; at most 3 s, so that an animation that never ends cannot stop the crawl)."""
    scrollbars.send("Emulation.setScrollbarsHidden", {"hidden": True})
    page.emulate_media(color_scheme="dark")
    page.set_viewport_size(PHONE)
    page.evaluate(SETTLED)
    return page


def as_desktop(page, scrollbars) -> None:
    """The tab's window a desktop's again (DESKTOP, light, scrollbars drawn), for the next page it loads."""
    scrollbars.send("Emulation.setScrollbarsHidden", {"hidden": False})
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(DESKTOP)


def phone_problems(page) -> list[str]:
    """What is wrong with a page shown in a phone's window (as_phone), in the dark theme."""
    shown = page.evaluate(WINDOW)
    if shown != {"theme": "dark", "width": PHONE_WIDTH, "scrollbar": 0}:
        return [f"not a phone's window in the dark theme: {shown}"]
    problems = []
    scroll, inner = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
    if scroll > inner:
        problems.append(f"the page scrolls sideways: {scroll} px wide in a {inner} px window")
    problems += page.evaluate(CUT_OFF)
    problems += [f"equation squeezed beside its number: {e}" for e in page.evaluate(SQUEEZED_EQUATIONS)]
    problems += [f"hides more without showing it: {box}" for box in page.evaluate(UNMARKED_SCROLLING)]
    problems += [f"{rule}: {nodes}" for rule, nodes in
                 axe_violations(page, ["scrollable-region-focusable", "color-contrast"]).items()]
    return problems


def test_the_cut_off_check_can_fail(site, tab, pages):
    base, _ = site
    page, _ = tab.load(f"{base}/{pages[0]}.html", width=PHONE_WIDTH)
    page.evaluate("""() => document.querySelector('article p').insertAdjacentHTML('beforeend',
        '<span style="display: block; overflow: hidden">'
        + '<span style="display: inline-block; width: 900px">wide</span></span>')""")
    assert any("clipped" in problem for problem in page.evaluate(CUT_OFF))


def _page_name(url, base):
    path = urllib.parse.urlparse(url).path
    return path.removeprefix(urllib.parse.urlparse(base).path + "/").removesuffix(".html")


def built_page(base: str, name: str) -> tuple[str, PageLinks]:
    """(the page's address, its links and outputs) as the book's server sends it (tests of what a reader clicks or
    downloads, not of how it is drawn: read from the HTML, no browser)."""
    url = f"{base}/{name}.html"
    return url, PageLinks(fetch_text(url))


def test_sidebar_and_next_links_reach_every_page(site, pages):
    """The first page's sidebar links every page; its "next" links, followed from the first, go through every page in
    reading order (each page is the next link's target on the one before)."""
    base, _ = site
    url, links = built_page(base, pages[0])
    sidebar = {_page_name(resolve(url, href).split("#")[0], base) for href in links.sidebar}
    sidebar.add(pages[0])
    assert sidebar == set(pages)
    reached = [pages[0]]
    while links.next is not None and len(reached) <= len(pages):       # a loop of next links stops here too
        url = resolve(url, links.next)
        reached.append(_page_name(url, base))
        links = PageLinks(fetch_text(url))
    assert reached == pages


def test_search_finds_rotation_with_excerpts_from_the_text(site, tab):
    """Each hit shows an excerpt of the page's text around the word (not the page's menus: "....ipynb .md")."""
    base, _ = site
    page, _ = tab.load(f"{base}/search.html?q=rotation", width=DESKTOP["width"])
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    page.wait_for_function("""() => { const hits = document.querySelectorAll('#search-results ul.search li');
        return Search.status.innerText.includes('found') &&
               [...hits].every(li => li.querySelector('p.context')); }""", timeout=15000)
    excerpts = page.eval_on_selector_all("#search-results ul.search li p.context", "ps => ps.map(p => p.innerText)")
    assert len(excerpts) >= 3
    menus = (".ipynb", ".md .pdf", "document.write")
    assert [e for e in excerpts if "rotat" not in e.lower() or any(m in e for m in menus)] == []


def pages_under(pages, folder):
    found = [p for p in pages if p.startswith(f"{folder}/")]
    assert found, f"no {folder} page in the table of contents"
    return found


def download_links(url, links: PageLinks, suffix):
    """The page's download-menu links whose address ends in suffix."""
    return [address for href in links.downloads if (address := resolve(url, href)).endswith(suffix)]


def fetch_text(url):
    with urllib.request.urlopen(url, timeout=60) as response:      # an HTTP error raises, naming the address
        return response.read().decode()


def fetch_notebook(url):
    """(raw text, notebook) of a downloaded .ipynb, which must be valid nbformat."""
    text = fetch_text(url)
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    return text, notebook


def test_exercise_pages_offer_the_student_notebook(site, pages, repo_root):
    base, _ = site
    for name in pages_under(pages, "exercises"):
        url, links = built_page(base, name)
        notebooks = download_links(url, links, ".ipynb")
        assert notebooks, f"{name}: no .ipynb download"
        text, _ = fetch_notebook(notebooks[0])
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
        assert json.loads(text) == json.loads((repo_root / f"{name}.ipynb").read_text())
        assert notebooks[0].endswith(f"/{book_downloads.SOURCES}/{name}.ipynb")      # what make release refreshes


def test_chapters_offer_the_executed_notebook_and_the_markdown_source(site, pages, repo_root):
    base, _ = site
    for name in pages_under(pages, "chapters"):
        url, links = built_page(base, name)
        notebook_links, source_links = download_links(url, links, ".ipynb"), download_links(url, links, ".md")
        assert notebook_links and source_links, f"{name}: download menu lacks .ipynb or .md"
        assert fetch_text(source_links[0]) == (repo_root / f"{name}.md").read_text(), f"{name}: .md differs"
        _, notebook = fetch_notebook(notebook_links[0])
        with_outputs = sum(bool(c.outputs) for c in notebook.cells if c.cell_type == "code")
        shown = links.outputs
        assert with_outputs == shown > 0, f"{name}: the .ipynb has {with_outputs} executed cells, the page {shown}"


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


def test_internal_links_resolve(site, book_pdf):
    """Every link between pages and to an anchor resolves; book_pdf puts the PDF the intro links beside them."""
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


def test_inline_formulas_fit_their_box_with_scrollbars_shown(desktop_pages):
    """At desktop width, in a browser that draws scrollbars (checked first), no inline formula is wider than its
    box: none shows a scrollbar under itself."""
    assert [name for name, seen in desktop_pages.items() if seen.scrollbar <= 0] == [], \
        "this browser hides scrollbars: the test would see nothing"
    assert {name: seen.overflowing_formulas for name, seen in desktop_pages.items() if seen.overflowing_formulas} == {}


def test_the_inline_formula_check_can_fail(site, browser_with_scrollbars, pages):
    """Without the fix in reader.css (MathJax's hidden copy for screen readers at its full width), most inline
    formulas of the sinusoidal chapter overflow their box, and the same check finds them."""
    base, _ = site
    page, _ = open_page(browser_with_scrollbars, f"{base}/chapters/02_sinusoidal.html")
    page.evaluate(FONTS_LOADED)
    page.add_style_tag(content="mjx-assistive-mml { max-width: none !important; }")
    assert len(page.evaluate(OVERFLOWING_INLINE_MATH)) > 10
    page.close()


def test_pages_opened_as_files_log_no_errors(site, tab, pages):
    """`make book` prints a file:// address to open: there, too, no page logs an error (the theme's icon fonts,
    fetched in CORS mode, used to fail on every page) and the icons are drawn."""
    _, html_dir = site
    found = {}
    for name in (pages[0], "chapters/02_sinusoidal", pages[-1]):
        page, problems = tab.load((html_dir / f"{name}.html").as_uri(), width=DESKTOP["width"])
        icon_font = page.evaluate("""() => document.fonts.check('900 16px "Font Awesome 6 Free"')""")
        if problems or not icon_font:
            found[name] = problems + ([] if icon_font else ["the icon font did not load"])
    assert found == {}

