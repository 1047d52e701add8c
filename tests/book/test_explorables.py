"""The explorable figures in a real browser (Debian's Chromium, driven by Playwright), offline.

Each control is moved to several settings and what the figure plots, read from
`window.posencExplorables[name].data()`, is compared with the reference implementation at the same
settings (_ext/explorable_figures.py, which calls each assignment's checks/<assignment>/reference.py).
Also: keyboard operation and an accessible name for every control, no console errors, no request outside the
book, a 375 px wide layout, the static image for readers without JavaScript, and screenshots of
every figure at two settings under _build/screenshots/explorables/.
"""
import contextlib
import json
import re
import sys

import numpy as np
import pytest
from book_pages import DESKTOP, ROOT, SHOT_QUALITY, SMALL_COUNT, Tab, numbers, reader

sys.path.insert(0, str(ROOT / "_ext"))
import explorable_figures as figures  # noqa: E402

from posenc_autograder.checks.positional_encoding import reference as pe_ref  # noqa: E402

TOLERANCE = 1e-9          # the formulas are exact; only rounding differs between JavaScript and numpy
PHONE_WIDTH = 375
SHOTS = ROOT / "_build" / "screenshots" / "explorables"
DIRECTIVE = re.compile(r"^:::\{explorable\} (\S+)$", re.MULTILINE)
BLOCK = re.compile(r"<!-- explorable: (\S+) -->\n(.*?)\n<!-- /explorable -->", re.DOTALL)
ALT = re.compile(r"^:alt: (.*)$", re.MULTILINE)
largest_difference = {}   # figure -> largest (absolute, relative) difference found, for the report


def figure_pages() -> dict[str, str]:
    """Every explorable figure placed in a chapter -> the chapter's page name."""
    placed = {}
    for chapter in sorted((ROOT / "chapters").glob("*.md")):
        for name in DIRECTIVE.findall(chapter.read_text()):
            placed.setdefault(name, []).append(f"chapters/{chapter.stem}")
    assert all(len(pages) == 1 for pages in placed.values()), f"a figure placed twice: {placed}"
    return {name: pages[0] for name, pages in placed.items()}


class BookOnly:
    """One tab of a reader's window (book_pages.Tab) in which the figures' pages are loaded in turn, as a reader
    following links does, and may load nothing from outside the book's own folder: each request elsewhere is a
    problem of the page that made it. (A page opened in a window of its own cost 2.4 CPU-s, in the tab 0.9; the
    requests routed to abort those outside, 1.3: routing turns Chromium's cache off. 8 chapters, load 16.)"""

    def __init__(self, window):
        self.tab, self.folder = Tab(window), None
        self.tab.page.on("request", self.outside)

    def outside(self, request) -> None:
        if not request.url.startswith(self.folder):
            self.tab.problems.append(f"request outside the book: {request.url}")

    def open(self, folder: str, page_name: str):
        """(page, problems seen while it loaded and is read) of the page of the book served at `folder` (an
        address), in a desktop's window."""
        self.folder = folder.rstrip("/") + "/"
        self.tab.page.set_viewport_size(DESKTOP)
        return self.tab.load(f"{self.folder}{page_name}.html")


def settings_to_try(control: dict) -> list:
    """The ends, the default and a middle value of a range; every entry of a list of choices."""
    if "choices" in control:
        return list(control["choices"])
    low, high, step = control["min"], control["max"], control["step"]
    middle = low + step * round((high - low) / 2 / step)
    return sorted({low, high, control["value"], middle})


def slider_setting(control: dict, text: str):
    """The setting a slider's value stands for: a choice by its index, or the number (an int on a whole step)."""
    if "choices" in control:
        return control["choices"][int(text)]
    return int(float(text)) if float(control["step"]).is_integer() else float(text)


def centre(figure) -> None:
    """Scroll the figure to the middle of the window, clear of the theme's sticky header, for screenshots."""
    figure.evaluate("f => f.scrollIntoView({block: 'center'})")


# Sets the controls of each settings in turn as a reader's input would (its value set, an input event fired: the figure
# redraws at once) and reads what the figure then plots, as JSON text (exact for doubles both ways, and far quicker
# than Playwright's object transfer). All the settings in one call: a call a setting cost ~46 ms CPU, most of it
# Chromium drawing a frame between the calls (the 160 settings of the stretched angles: 7.4 against 0.5 CPU-s).
SET_AND_READ = """([name, positions]) => positions.map(settings => {
    for (const [key, position] of Object.entries(settings)) {
        const input = document.getElementById(`explorable-${name}-${key}`);
        input.value = String(position);
        input.dispatchEvent(new Event('input', {bubbles: true}));
    }
    return JSON.stringify(window.posencExplorables[name].data());
})"""


def shoot(figure, name: str) -> None:
    figure.screenshot(path=str(SHOTS / f"{name}.jpg"), quality=SHOT_QUALITY)


def plotted_at(page, name, settings: list[dict]) -> list[dict]:
    """What the figure plots at each of `settings` in turn, each key set in its order (constants.json's: a range's
    limits come first); a slider of choices is set to the choice's index."""
    controls = figures.spec(name)["controls"]
    positions = [{key: controls[key]["choices"].index(value) if "choices" in controls[key] else value
                  for key, value in each.items()} for each in settings]
    return [json.loads(text) for text in page.evaluate(SET_AND_READ, [name, positions])]


def apply(page, name, settings: dict) -> None:
    plotted_at(page, name, [settings])


def plotted(page, name) -> dict:
    """What the figure plots now."""
    return plotted_at(page, name, [{}])[0]


def compare(name, data, settings) -> tuple[float, float]:
    """Assert data equals the reference at settings; return the largest absolute and relative difference."""
    expected = figures.expected(name, settings)
    assert set(data) == set(expected), f"{name}: plots {sorted(data)}, the reference computes {sorted(expected)}"
    worst_abs = worst_rel = 0.0
    for key, want in expected.items():
        got = np.asarray(data[key], dtype=np.float64)
        assert got.shape == want.shape, f"{name}.{key} at {settings}: shape {got.shape}, expected {want.shape}"
        difference = np.abs(got - want)
        relative = difference / np.maximum(1.0, np.abs(want))
        assert relative.max(initial=0) <= TOLERANCE, (
            f"{name}.{key} at {settings}: differs from the reference by up to {difference.max():.3g}")
        worst_abs, worst_rel = max(worst_abs, difference.max(initial=0)), max(worst_rel, relative.max(initial=0))
    return worst_abs, worst_rel


def record(name, difference) -> None:
    old = largest_difference.get(name, (0.0, 0.0))
    largest_difference[name] = tuple(max(a, b) for a, b in zip(old, difference, strict=True))
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / "largest-differences.json").write_text(json.dumps(
        {k: {"absolute": a, "relative": r} for k, (a, r) in sorted(largest_difference.items())}, indent=1))


@pytest.fixture(scope="module")
def book_only(site, browser):
    """The tab the figures' pages are read in, one for this module's tests (one group: conftest.py at the root)."""
    base, _ = site
    with contextlib.closing(reader(browser)) as window:
        yield base, BookOnly(window)


def test_every_figure_is_placed_once_with_matching_markers_and_alt_text():
    pages = figure_pages()
    assert sorted(pages) == sorted(figures.figure_names())
    for chapter in sorted((ROOT / "chapters").glob("*.md")):
        text = chapter.read_text()
        blocks = BLOCK.findall(text)
        assert len(blocks) == len(DIRECTIVE.findall(text)), f"{chapter.name}: a figure outside its marked block"
        for name, body in blocks:
            assert body.startswith(f":::{{explorable}} {name}\n:alt: "), f"{chapter.name}: block {name} malformed"


def parameters(value) -> set[float]:
    """Every number a figure's entry in constants.json states (sizes, defaults, ranges, choices)."""
    if isinstance(value, dict):
        return set().union(*map(parameters, value.values()))
    if isinstance(value, list):
        return set().union(*map(parameters, value)) if value else set()
    return {abs(float(value))} if isinstance(value, (int, float)) else set()


def test_alt_text_numbers_are_parameters_of_the_figure():
    """Like the chapters' figures: the static image's alt text states settings, never computed results."""
    stray = []
    for chapter in sorted((ROOT / "chapters").glob("*.md")):
        for name, body in BLOCK.findall(chapter.read_text()):
            alt, known = ALT.search(body).group(1), parameters(figures.spec(name))
            stray += [f"{name}: {n:g}" for n in sorted(numbers(alt))
                      if n not in known and not (n.is_integer() and n <= SMALL_COUNT)]
    assert stray == []


def test_shared_constants_agree_with_the_reference():
    assert figures.constants()["default_base"] == pe_ref.DEFAULT_BASE
    for name in figures.figure_names():
        for key, control in figures.spec(name)["controls"].items():
            assert control.get("label"), f"{name}.{key} has no label"
            if "choices" in control:
                assert control["value"] in control["choices"]
            else:
                assert control["min"] <= control["value"] <= control["max"], f"{name}.{key}: default out of range"


def test_the_reference_side_catches_a_wrong_plot():
    """compare() must fail on data that is off by more than rounding (a test that can fail)."""
    name = "dot-distance"
    data = {key: value.tolist() for key, value in figures.expected(name).items()}
    data["dot"][7] += 1e-6
    with pytest.raises(AssertionError, match="differs from the reference"):
        compare(name, data, figures.default_settings(name))


def every_setting(control: dict) -> list:
    """Every value of a list of choices or of a whole-number range."""
    if "choices" in control:
        return control["choices"]
    return list(range(control["min"], control["max"] + 1, control["step"]))


def test_the_dot_distance_caption_holds_at_every_setting():
    """Its caption: a larger base keeps nearby positions (k = 1..10) more similar; no setting is monotone."""
    controls = figures.spec("dot-distance")["controls"]
    for d_model in every_setting(controls["d_model"]):
        profiles = np.array([figures.expected("dot-distance", {"d_model": d_model, "base": base})["dot"]
                             for base in every_setting(controls["base"])])
        assert np.all(np.diff(profiles[:, 1:11], axis=0) > 0), f"d_model {d_model}: a larger base is not more similar"
        assert np.all(np.any(np.diff(profiles, axis=1) > 0, axis=1)), f"d_model {d_model}: a monotone curve"


@pytest.mark.parametrize("name", figures.figure_names())
def test_figure_plots_the_reference_values_and_works_by_keyboard(book_only, name):
    base, guarded = book_only
    page, problems = guarded.open(base, figure_pages()[name])
    spec, defaults = figures.spec(name), figures.default_settings(name)
    figure = page.locator(f"#explorable-{name}")
    page.wait_for_function("name => window.posencExplorables && window.posencExplorables[name]", arg=name)
    assert "explorable--live" in figure.get_attribute("class")
    centre(figure)
    SHOTS.mkdir(parents=True, exist_ok=True)
    shoot(figure, f"{name}-default")
    record(name, compare(name, plotted(page, name), defaults))

    # Every control: an accessible name, several settings (the others at their defaults), then all at their maximum.
    tried = []
    for key, control in spec["controls"].items():
        slider = figure.get_by_role("slider", name=control["label"], exact=True)
        assert slider.count() == 1, f"{name}.{key}: no slider named {control['label']!r}"
        tried += [defaults | {key: value} for value in settings_to_try(control)]
    tried.append({key: (c["choices"][-1] if "choices" in c else c["max"]) for key, c in spec["controls"].items()})
    for settings, data in zip(tried, plotted_at(page, name, tried), strict=True):
        record(name, compare(name, data, settings))
    shoot(figure, f"{name}-largest")

    # Keyboard: focus, one arrow key (left at the upper end), and the value and the plot follow.
    for key, control in spec["controls"].items():
        apply(page, name, defaults)
        slider = page.locator(f"#explorable-{name}-{key}")
        before_value, before_data = slider.input_value(), plotted(page, name)
        at_top = before_value == slider.get_attribute("max")
        slider.focus()
        page.keyboard.press("ArrowLeft" if at_top else "ArrowRight")
        assert slider.input_value() != before_value, f"{name}.{key}: the arrow key did not move the slider"
        after = plotted(page, name)
        assert after != before_data, f"{name}.{key}: the plot did not follow the keyboard"
        record(name, compare(name, after, defaults | {key: slider_setting(control, slider.input_value())}))

    label = page.locator(f"#explorable-{name} .explorable__plot").get_attribute("aria-label")
    assert label.startswith(spec["title"]) and len(label) > len(spec["title"]) + 20, f"{name}: plot not described"

    # A phone: the figure fits in 375 px with nothing overflowing it, and its chart is drawn. (The page as a
    # whole is test_browser's test_pages_read_at_phone_width.)
    apply(page, name, defaults)
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 800})
    centre(figure)
    layout = figure.evaluate("""f => ({right: f.getBoundingClientRect().right, over: f.scrollWidth - f.clientWidth,
        charts: [...f.querySelectorAll('svg')].map(s => s.getBoundingClientRect().width)})""")
    assert layout["right"] <= PHONE_WIDTH and layout["over"] <= 0, layout
    assert layout["charts"] and all(0 < width <= PHONE_WIDTH for width in layout["charts"]), layout
    shoot(figure, f"{name}-phone")
    assert problems == [], f"{name}: {problems}"


def test_readers_without_javascript_see_the_static_images_with_alt_text(site, browser):
    base, _ = site
    context = browser.new_context(java_script_enabled=False)
    page, missing = context.new_page(), {}          # one tab for every page (Tab's reason)
    for page_name in sorted(set(figure_pages().values())):
        page.goto(f"{base}/{page_name}.html", wait_until="load")
        for image in page.evaluate("""() => [...document.querySelectorAll('.explorable')].map(f => {
                const img = f.querySelector('img.explorable__fallback');
                return {figure: f.id, ok: !!img && img.complete && img.naturalWidth > 0, alt: img ? img.alt.trim() : '',
                        controls: getComputedStyle(f.querySelector('.explorable__controls')).display};
            })"""):
            if not image["ok"] or len(image["alt"]) < 40 or image["controls"] != "none":
                missing[image["figure"]] = image
    context.close()
    assert missing == {}


def test_figures_work_from_the_file_system_without_a_server(site, book_only):
    """`make book` offers a file:// address: the figures must not need a server (no fetch, no module imports)."""
    _, html_dir = site
    _, guarded = book_only
    folder = html_dir.resolve().as_uri()
    pages = figure_pages()
    busiest = max(set(pages.values()), key=list(pages.values()).count)   # one page: the script is the same on all
    for page_name in [busiest]:
        page, problems = guarded.open(folder, page_name)
        for name in (n for n, p in pages.items() if p == page_name):
            page.wait_for_function("name => window.posencExplorables && window.posencExplorables[name]", arg=name)
            record(name, compare(name, plotted(page, name), figures.default_settings(name)))
        # Chromium refuses the theme's icon fonts from file:// (CORS); nothing of the figures may fail.
        ours = [p for p in problems if "explorable" in p or p.startswith("uncaught")]
        assert ours == [], f"{page_name}: {ours}"


RING_OVER_TEXT = """figure => [...figure.querySelectorAll('input[type=range]')].flatMap(slider => {
    slider.focus();
    const style = getComputedStyle(slider), box = slider.getBoundingClientRect();
    if (!slider.matches(':focus-visible') || style.outlineStyle === 'none') return [`${slider.id}: no focus ring`];
    const reach = parseFloat(style.outlineWidth) + parseFloat(style.outlineOffset);
    const ring = {left: box.left - reach, right: box.right + reach, top: box.top - reach, bottom: box.bottom + reach};
    return [...figure.querySelectorAll('label, output')].filter(text => {
        const t = text.getBoundingClientRect();
        return t.width && t.left < ring.right && t.right > ring.left && t.top < ring.bottom && t.bottom > ring.top;
    }).map(text => `${slider.id}: its focus ring covers ${text.tagName.toLowerCase()} '${text.textContent}'`);
})"""


def test_unit_circle_is_round_and_focus_rings_leave_labels_readable(book_only):
    """The pair-rotation figure draws its unit circle with equal axes (desktop and phone), and on its page no
    slider's keyboard focus ring covers a label or a value."""
    base, guarded = book_only
    name = "pair-rotation"
    page, problems = guarded.open(base, figure_pages()[name])
    page.wait_for_function("name => window.posencExplorables && window.posencExplorables[name]", arg=name)
    for width in (1280, PHONE_WIDTH):
        page.set_viewport_size({"width": width, "height": 900})
        circle = page.locator(f"#explorable-{name} .explorable__guide").evaluate(
            "c => { const b = c.getBoundingClientRect(); return [b.width, b.height]; }")
        assert circle[0] > 100 and abs(circle[0] / circle[1] - 1) < 0.01, f"{width} px: circle drawn {circle}"
        for figure in page.locator(".explorable.explorable--live").all():
            assert figure.evaluate(RING_OVER_TEXT) == [], f"{width} px"
    assert problems == []


# ---- the stretched-angles figure of Ch 12: the same numbers as the chapter's code and the reference ----

STRETCHED = "stretched-angles"
CHAPTER_12 = ROOT / "chapters" / "12_stretching_context.md"


def stretched_settings() -> list[dict]:
    """Every method at every scale the slider offers."""
    controls = figures.spec(STRETCHED)["controls"]
    return [{"method": method, "scale": scale} for method in every_setting(controls["method"])
            for scale in every_setting(controls["scale"])]


def chapter_12_code() -> dict:
    """The names Ch 12's code defines up to its `unseen_pairs` (numpy only: its plots and the toy model are skipped)."""
    import contextlib
    import io

    from myst_nb.core.read import read_myst_markdown_notebook
    namespace = {"glue": lambda *args, **kwargs: None}
    for cell in read_myst_markdown_notebook(CHAPTER_12.read_text()).cells:
        if cell.cell_type != "code" or "mystnb" in cell.metadata or "remove-cell" in cell.metadata.get("tags", []):
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(cell.source, str(CHAPTER_12), "exec"), namespace)
        if "unseen_pairs" in namespace:
            return namespace
    raise AssertionError("Ch 12 no longer defines unseen_pairs")


def test_stretched_angles_agree_with_the_chapter_code():
    """The figure's head, methods and 'unseen' rule are Ch 12's own, at the chapter's s and at every other."""
    ch = chapter_12_code()
    figure = figures.spec(STRETCHED)
    assert (ch["d"], ch["base"], ch["L"]) == (figure["head_dim"], figure["base"], figure["train_len"])
    d, base, L = ch["d"], ch["base"], ch["L"]
    low, high = figure["llama31"]["low_freq_factor"], figure["llama31"]["high_freq_factor"]
    chapter_rules = {
        "none": lambda s: ch["omega"],
        "position interpolation": lambda s: ch["omega"] / s,
        "NTK-aware": lambda s: ch["rope_frequencies"](d, ch["ntk_scaled_base"](base, s, d)),
        "YaRN": lambda s: ch["yarn_frequencies"](d, base, s, L),
        "Llama 3.1": lambda s: ch["llama31_frequencies"](d, base, s, low, high, L),
    }
    assert sorted(chapter_rules) == sorted(figure["controls"]["method"]["choices"])
    chapter_names = {"none": "no change"}
    for method in chapter_rules:        # the chapter's own scheme table, with its own parameters, at its s
        plotted = figures.expected(STRETCHED, {"method": method, "scale": ch["s"]})
        np.testing.assert_allclose(plotted["frequencies"], ch["schemes"][chapter_names.get(method, method)], rtol=1e-12)
    for settings in stretched_settings():
        s = settings["scale"]
        plotted, frequencies = figures.expected(STRETCHED, settings), chapter_rules[settings["method"]](s)
        np.testing.assert_allclose(plotted["frequencies"], frequencies, rtol=1e-12, err_msg=str(settings))
        np.testing.assert_allclose(plotted["after"], ch["largest_angle"](frequencies, L * s), rtol=1e-12)
        np.testing.assert_allclose(plotted["trained"], ch["largest_angle"](ch["omega"], L), rtol=1e-12)
        assert np.array_equal(plotted["unseen"].astype(bool), ch["unseen_pairs"](frequencies, L, L * s)), settings


def test_the_stretched_angles_caption_holds_at_every_setting():
    """Its caption: for s > 1 no pair is red under interpolation, YaRN and Llama 3.1; NTK-aware reddens every
    shaded pair but the last, keeps pair 0, and lands the last pair on the training line."""
    for settings in stretched_settings():
        data = figures.expected(STRETCHED, settings)
        unseen, shaded = data["unseen"].astype(bool), data["trained"] < 2 * np.pi
        if settings["scale"] == 1 or settings["method"] in ("position interpolation", "YaRN", "Llama 3.1"):
            assert not unseen.any(), settings
        elif settings["method"] == "NTK-aware":
            assert np.array_equal(unseen, shaded & (np.arange(len(shaded)) < len(shaded) - 1)), settings
            assert data["frequencies"][0] == 1.0
            np.testing.assert_allclose(data["after"][-1], data["trained"][-1], rtol=1e-12)
        else:
            assert np.array_equal(unseen, shaded), settings
    assert 0 < shaded.sum() < len(shaded)


def test_the_stretched_angles_reference_catches_the_wrong_ntk_base():
    """b' = b * s (the chapter's warning) instead of b * s^(d/(d-2)) must not pass for the figure's numbers."""
    settings = {"method": "NTK-aware", "scale": 16}
    figure = figures.spec(STRETCHED)
    data = {key: value.tolist() for key, value in figures.expected(STRETCHED, settings).items()}
    wrong = pe_ref.angular_frequencies(figure["head_dim"], figure["base"] * settings["scale"])
    data["frequencies"] = wrong.tolist()
    with pytest.raises(AssertionError, match="differs from the reference"):
        compare(STRETCHED, data, settings)


def test_stretched_angles_in_the_browser_equal_the_reference_at_every_setting(book_only):
    """The page's JavaScript, moved through every method and every scale, plots the reference's numbers."""
    base, guarded = book_only
    page, problems = guarded.open(base, figure_pages()[STRETCHED])
    page.wait_for_function("name => window.posencExplorables && window.posencExplorables[name]", arg=STRETCHED)
    every = stretched_settings()
    for settings, data in zip(every, plotted_at(page, STRETCHED, every), strict=True):
        record(STRETCHED, compare(STRETCHED, data, settings))
    readout = page.locator(f"#explorable-{STRETCHED} .explorable__readout").text_content()
    assert readout.startswith("Llama 3.1 at s = 32"), readout
    assert problems == []
