"""axe-core on a loaded page, its colour-contrast rule deciding the highlighted code by one sample of each look.

A page of the book holds up to ~5,000 highlighted code spans (Pygments' tokens: `<span class="k">`, a leaf element
whose only children are text, directly in `div.highlight pre`) in a few dozen looks, and axe's colour-contrast rule
evaluated each one apart: 6.3 of axe's 7.8 s on chapter 13. What that rule decides for such a span (axe 4.12,
color-contrast-matches and color-contrast-evaluate) is read from:
  - its text: no text left once emoji and punctuation are removed: not applicable; one character: a failing contrast
    is "needs review", not a violation; emoji only, or a pseudo-element large enough over it: "needs review";
  - the computed style of the span and of each of its ancestors (colour, text fill and stroke, text shadow, font
    size and weight, background colour and image, opacity and what makes a stacking context, visibility);
  - what lies under and over it: the elements whose box holds the point axe samples, by stacking order.
Two spans with the same style chain (LOOK_PROPERTIES of the span and of every ancestor) and the same kind of text
(one character or more) therefore get the same foreground, background, font size and weight, so the same contrast
ratio, provided that what lies under and over each is its ancestors alone: each lies inside the box of every
ancestor (so each ancestor is in its stack, and no overflow clips it) and no other element's box meets it, but for
what axe leaves out of its stacks (the folded content of a closed <details>) and tokens of the same block without a
background (no overlay, no copy button, no token with a background of its own meets it; a span that does, or that is
folded itself, is evaluated by axe as before). A code block that scrolls (axe.utils.getScroll) is a region of its
own in axe's grid: what lies under and over one of its spans is what of the block meets the span's centre, then what
lies at the block's centre, the same for every span of the block. So a span scrolled out of the block's view (at
phone width, most of a long line) is decided as a span of the same look in the same block that shows, when its text
is not cut by an overflow: hidden box (axe clips text by those alone) and nothing of the block with a background
meets it; else axe evaluates it. So if the sample of a look passes with a measured ratio, none of the others can be
a violation: each either measures that same passing ratio, or stops earlier with "not applicable" or "needs review",
which are not violations. A span with no text axe checks (whitespace, punctuation) is not applicable whatever its
look.

So the run below reports exactly what axe's run over every element reports:
  - one run of every rule asked for, colour-contrast leaving out the spans marked SAMPLED: all of a look's spans
    but its sample, and those with no text axe checks; its results element by element, without selectors;
  - no violation, and every sample passed with a measured ratio: no violation (what the full run finds, above);
  - else (a violation anywhere, or a sample that was not measured or did not pass): axe's own run over every
    element, whose violations, with their selectors, are returned as they are.
tests/book/test_browser.py's test_the_sampled_contrast_check_reports_what_a_full_run_reports compares the two on
pages made faulty the ways the sampling could miss: a token class made faint, one span's colour, an overlay;
the last two on a span scrolled out of view too.
"""
import pathlib

import axe_playwright_python

AXE_SCRIPT = (pathlib.Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()
SAMPLED = "data-contrast-sampled"         # on a code span decided by its look's sample (or with no text axe checks)

AXE_RUN = """async ({runOnly, sampled, sample, settledOnly, within}) => {
    const CONTRAST = "color-contrast";
    const unmark = () => document.querySelectorAll(`[${sampled}]`).forEach(span => span.removeAttribute(sampled));
    const full = () => axe.run(within ? {include: [within]} : document, {runOnly, resultTypes: ["violations"]})
        .then(result => result.violations);
    const checksContrast = runOnly.type === "tag"
        ? axe.getRules(runOnly.values).some(rule => rule.ruleId === CONTRAST) : runOnly.values.includes(CONTRAST);
    unmark();                           // a mark left by an earlier run would show in the selectors
    if (!sample || !checksContrast) return full();
    const samples = [...codeLooks(sampled).values()].map(([first, ...others]) => {
        others.forEach(span => span.setAttribute(sampled, ""));
        return first;
    });
    axe.configure({rules: [{id: CONTRAST, selector: `*:not([${sampled}])`}]});
    let result;
    try {           // every result element by element, no selectors (axe's costliest part with every pass listed)
        result = await axe.run(document, {runOnly, selectors: false, elementRef: true});
    } finally {
        axe.configure({rules: [{id: CONTRAST, selector: "*"}]});
    }
    const measured = new Set(result.passes.filter(rule => rule.id === CONTRAST).flatMap(rule => rule.nodes)
        .filter(node => node.any.some(check => check.data && check.data.contrastRatio > 0)).map(node => node.element));
    if (!result.violations.length && samples.every(span => measured.has(span))) return [];
    if (settledOnly) return null;                   // the sample settled nothing: what follows is axe's run alone
    unmark();           // a violation, or a sample that did not pass: axe over every element, what it reports exactly
    return full();

    function codeLooks(mark) {
        const PROPERTIES = %s;
        const looks = new Map();
        const chain = new Map();
        const inBlock = new Map();
        const clips = new Map();
        const styleOf = element => {
            if (!chain.has(element)) {
                const style = getComputedStyle(element);
                const own = element.tagName + PROPERTIES.map(p => style.getPropertyValue(p)).join(";");
                chain.set(element, (element.parentElement ? styleOf(element.parentElement) : "") + "|" + own);
            }
            return chain.get(element);
        };
        const inside = (a, b) => a.left >= b.left && a.right <= b.right && a.top >= b.top && a.bottom <= b.bottom;
        const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const folded = element => {                 // inside a closed <details> (but its summary): axe's hidden
            for (let a = element; a.parentElement; a = a.parentElement)
                if (a.parentElement.tagName === "DETAILS" && !a.parentElement.open
                    && a !== a.parentElement.querySelector(":scope > summary")) return true;
            return false;
        };
        const everything = [...document.querySelectorAll("*")].map(e => [e, e.getBoundingClientRect()])
            .filter(([e, box]) => box.width > 0 && box.height > 0 && !folded(e));
        const background = element => {
            const style = getComputedStyle(element);
            return style.backgroundImage !== "none" || !/^rgba\\(.*, 0\\)$|^transparent$/.test(style.backgroundColor);
        };
        for (const pre of document.querySelectorAll("div.highlight pre")) {
            if (folded(pre)) continue;
            const frame = pre.getBoundingClientRect();
            let box = {left: frame.left + pre.clientLeft, top: frame.top + pre.clientTop,
                       right: frame.left + pre.clientLeft + pre.clientWidth,
                       bottom: frame.top + pre.clientTop + pre.clientHeight};
            for (let a = pre.parentElement; a; a = a.parentElement) {
                const r = a.getBoundingClientRect();
                box = {left: Math.max(box.left, r.left), top: Math.max(box.top, r.top),
                       right: Math.min(box.right, r.right), bottom: Math.min(box.bottom, r.bottom)};
            }
            const others = everything.filter(([e, r]) => meets(r, frame) && !e.contains(pre)
                && (!pre.contains(e) || background(e))).map(([e, r]) => [e, r]);
            // A block that scrolls is a region of its own to axe: what lies under and over a span of it is what of
            // the block meets the span's centre, then what lies at the block's centre, the same for all its spans.
            const scrolls = axe.utils.getScroll(pre);
            const shown = new Set();
            const hidden = [];
            for (const span of pre.children) {
                if (span.children.length) continue;
                const text = axe.commons.text.sanitize(span.textContent);
                const real = axe.commons.text.removeUnicode(text, {emoji: true, nonBmp: false, punctuations: true});
                if (!real) { span.setAttribute(mark, ""); continue; }     // not applicable, whatever its look
                const rects = [...span.getClientRects()];
                if (!rects.length) continue;                                                 // evaluated alone
                const look = styleOf(span) + (text.length === 1 ? "|one" : "|more");
                if (rects.every(r => inside(r, box)) && !others.some(([e, r]) => rects.some(s => meets(s, r)))) {
                    if (!looks.has(look)) looks.set(look, []);
                    looks.get(look).push(span);
                    shown.add(look);
                } else if (scrolls) hidden.push([span, rects, look]);
            }
            for (const [span, rects, look] of hidden)           // scrolled out of view: decided as a shown span
                if (shown.has(look) && unclipped(span, rects) && !backgrounds(pre).some(([e, r]) => e !== span
                    && rects.some(s => meets(s, r)))) looks.get(look).push(span);
        }
        return looks;

        function unclipped(span, rects) {       // no text rect cut by an overflow: hidden box (axe clips by those)
            for (let a = span; a; a = a.parentElement) {
                const clip = clipOf(a);
                if (clip && !rects.every(r => inside(r, clip))) return false;
            }
            return true;
        }
        // Read once an element or block (nothing moves while the looks are made): a block's thousands of spans
        // scrolled out of view at phone width each read every element of the block and each of its ancestors.
        function clipOf(element) {              // the box of an overflow: hidden element, else null
            if (!clips.has(element)) clips.set(element,
                getComputedStyle(element).overflow === "hidden" ? element.getBoundingClientRect() : null);
            return clips.get(element);
        }
        function backgrounds(pre) {             // the elements of the block with a background of their own
            if (!inBlock.has(pre))
                inBlock.set(pre, everything.filter(([e]) => e !== pre && pre.contains(e) && background(e)));
            return inBlock.get(pre);
        }
    }
}"""
# What axe reads of a span and of each of its ancestors to decide its contrast (see above), as computed styles.
LOOK_PROPERTIES = ("color", "-webkit-text-fill-color", "-webkit-text-stroke-width", "-webkit-text-stroke-color",
                   "text-shadow", "font-size", "font-weight", "background-color", "background-image", "opacity",
                   "visibility", "display", "position", "z-index", "transform", "filter", "backdrop-filter",
                   "mix-blend-mode", "isolation", "will-change", "contain", "mask-image", "clip-path",
                   "content-visibility")


def with_axe(page) -> None:
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(AXE_SCRIPT)


def rules_tagged(page, tags) -> list[str]:
    """axe's rules tagged with any of `tags`, experimental ones among them, deprecated ones not (as a run by tag
    leaves them out): the rules that can report a violation of `tags`. (A run by tag with "experimental" added
    also runs the experimental rules tagged with none of them, hidden-content, one of axe's costliest, and
    focus-order-semantics, whose findings such a check leaves out.)"""
    with_axe(page)
    return page.evaluate("""tags => axe.getRules(tags).filter(rule => !rule.tags.includes("deprecated"))
        .map(rule => rule.ruleId)""", list(tags))


def axe_run(page, run_only: dict, sample_code: bool = True, within=None) -> list[dict]:
    """axe-core's violations on the page as shown now ({"type": "tag" or "rule", "values": [...]}, axe's runOnly);
    the highlighted code's contrast decided a sample of each look (sample_code=False: every span, axe alone).
    within (an element's handle, with sample_code=False): axe's run over that element and what it holds alone, what
    it finds there the run over the whole page finds (axe lays out and stacks the whole page either way)."""
    assert within is None or not sample_code, "the sampled run is a run over the whole page"
    return _run(page, run_only, sample_code, settled_only=False, within=within)


def sample_settles(page, run_only: dict) -> bool:
    """Whether axe_run's sampled pass settles the page as free of violations (axe_run returns []); when it does not,
    axe_run returns axe's own run over every element (sample_code=False's), which this leaves out."""
    return _run(page, run_only, True, settled_only=True) is not None


def _run(page, run_only: dict, sample_code: bool, settled_only: bool, within=None):
    with_axe(page)
    script = AXE_RUN % repr(list(LOOK_PROPERTIES)).replace("'", '"')
    return page.evaluate(script, {"runOnly": run_only, "sampled": SAMPLED, "sample": sample_code,
                                  "settledOnly": settled_only, "within": within})
