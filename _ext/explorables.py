"""The `explorable` directive: an interactive figure computed in the reader's browser, offline.

    :::{explorable} pe-heatmap
    :alt: What the static image shows, for readers without JavaScript.
    Caption, parsed as MyST (math allowed).
    :::

The directive writes the figure's controls (native range inputs with labels, generated from
_static/explorables/constants.json), an empty plot area that _static/explorables/explorables.js
fills, the figure's settings and seeded inputs as JSON for that script, and a <noscript> static
image. The static images are drawn with matplotlib at the default settings, from
explorable_figures (the reference implementation), when the build finishes. Jupyter Book links
every .js and .css file under _static/ into every page, so the script and its stylesheet need no
registration here; on a page without figures the script finds nothing to do.
"""
from __future__ import annotations

import html
import json
import pathlib

import explorable_figures as figures
import matplotlib
import numpy as np
from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective
from sphinx.util.osutil import relative_uri

matplotlib.use("Agg")          # drawn headless, at build time
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

STATIC = "explorables"          # folder under _static
FALLBACK = f"{STATIC}/fallback"
CLASS = "explorable"
# What the static images are drawn from: a newer one redraws them.
SOURCES = (figures.CONSTANTS, pathlib.Path(__file__),
           *(pathlib.Path(m.__file__) for m in (figures, figures.pe_ref, figures.rope_ref, figures.stretch_ref)))


class ExplorableDirective(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec = {"alt": directives.unchanged_required}

    def run(self):
        name = self.arguments[0]
        try:
            spec = figures.spec(name)
        except ValueError as error:
            raise self.error(str(error)) from None
        if not self.options.get("alt", "").strip():
            raise self.error(f"explorable {name}: the :alt: text of its static image is required")
        # A page with a figure is rebuilt when its settings, script or style change: an incremental build that finds
        # no page out of date copies no static files, and would serve the old script.
        for asset in sorted(figures.CONSTANTS.parent.glob("*.*")):
            self.env.note_dependency(str(asset))
        image = relative_uri(self.env.app.builder.get_target_uri(self.env.docname), f"_static/{FALLBACK}/{name}.png")
        figure = nodes.container(classes=[CLASS], ids=[f"explorable-{name}"])
        figure += nodes.raw("", figure_html(name, spec, image, self.options["alt"]), format="html")
        if self.content:
            caption = nodes.container(classes=[f"{CLASS}__caption"])
            self.state.nested_parse(self.content, self.content_offset, caption)
            figure += caption
        return [figure]


def figure_html(name: str, spec: dict, image: str, alt: str) -> str:
    """Controls, plot area, settings for the script, and the no-JavaScript image."""
    controls = "".join(control_html(name, key, control) for key, control in spec["controls"].items())
    inputs = {key: value.tolist() for key, value in figures.inputs(name).items()}
    payload = {"name": name, "default_base": figures.constants()["default_base"], **spec, "inputs": inputs}
    # "</" would end the script element early; JSON allows the escaped form.
    settings = json.dumps(payload, separators=(",", ":")).replace("</", "<\\/")
    return (f'<div class="{CLASS}__controls">{controls}</div>'
            f'<div class="{CLASS}__plot" role="img" aria-label="{html.escape(spec["title"])}"></div>'
            f'<p class="{CLASS}__readout" aria-live="polite"></p>'
            f'<noscript><img class="{CLASS}__fallback" src="{html.escape(image)}" alt="{html.escape(alt)}"></noscript>'
            f'<script type="application/json" class="{CLASS}__settings">{settings}</script>')


def control_html(name: str, key: str, control: dict) -> str:
    """A labelled native range input (keyboard-operable); a list of choices is a range over their index."""
    element_id = f"explorable-{name}-{key}"
    if "choices" in control:
        choices = control["choices"]
        if control["value"] not in choices:
            raise ValueError(f"explorable {name}: default {key} {control['value']} is not one of {choices}")
        bounds = f'min="0" max="{len(choices) - 1}" step="1" value="{choices.index(control["value"])}"'
        shown = control["value"]
        extra = f' aria-valuetext="{shown}"'
    else:
        bounds = f'min="{control["min"]}" max="{control["max"]}" step="{control["step"]}" value="{control["value"]}"'
        shown, extra = control["value"], ""
    return (f'<div class="{CLASS}__control"><label for="{element_id}">{html.escape(control["label"])}</label>'
            f'<input type="range" id="{element_id}" name="{key}" {bounds}{extra}>'
            f'<output for="{element_id}">{shown}</output></div>')


# ---- static fallback images, one drawing function per figure, at the default settings ----

def _draw_pe_heatmap(fig, data, settings):
    ax = fig.subplots()
    image = ax.imshow(data["table"], aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
    ax.set(xlabel="dimension", ylabel="position", title=f"d_model = {settings['d_model']}, base = {settings['base']}")
    fig.colorbar(image, ax=ax, label="value")


def _draw_wavelengths(fig, data, settings):
    top, bottom = fig.subplots(2, 1, height_ratios=(3, 2))
    pair = int(data["pair"])
    top.semilogy(range(len(data["wavelengths"])), data["wavelengths"], ".", markersize=3)
    top.semilogy([pair], [data["wavelengths"][pair]], "o", color="C3")
    top.set(xlabel="pair i", ylabel="wavelength", title=f"d_model = {settings['d_model']}, base = {settings['base']}")
    bottom.plot(data["column"], color="C3")
    bottom.set(xlabel="position", ylabel=f"column {2 * pair}")


def _draw_pair_rotation(fig, data, settings):
    ax = fig.subplots()
    circle = plt.Circle((0, 0), 1, fill=False, color="0.75")
    ax.add_patch(circle)
    (s0, c0), (s1, c1) = data["start"], data["target"]
    sweep = np.arctan2(s0, c0) + np.linspace(0, float(data["angle"]), 100)   # the arc M_k's block turns through
    ax.plot(np.cos(sweep), np.sin(sweep), "--", color="C0", lw=1.2)
    ax.plot([0, c0], [0, s0], "o-", color="C0", label=f"pos {settings['position']}")
    ax.plot([0, c1], [0, s1], "o-", color="C1", label=f"pos {settings['position'] + settings['offset']}")
    ax.set(aspect="equal", xlim=(-1.2, 1.2), ylim=(-1.2, 1.2), xlabel="cos", ylabel="sin",
           title=f"pair {settings['pair']}, offset k = {settings['offset']}")
    ax.legend(loc="lower right")


def _draw_dot_distance(fig, data, settings):
    ax = fig.subplots()
    dot = data["dot"]
    ax.plot(dot / dot[0])
    ax.axhline(0, color="0.7", lw=0.8)
    ax.set(xlabel="distance k", ylabel="PE_0 · PE_k / (d/2)", title=f"d_model = {settings['d_model']}")


def _draw_rope_shift(fig, data, settings):
    ax = fig.subplots()
    image = ax.imshow(data["scores"], cmap="RdBu_r")
    ax.set(xlabel="key position n - shift", ylabel="query position m - shift", title=f"shift = {settings['shift']}")
    fig.colorbar(image, ax=ax)


def _draw_alibi_heads(fig, data, settings):
    ax = fig.subplots()
    for head, row in enumerate(data["row"], start=1):
        ax.plot(row, label=f"head {head}")
    ax.set(xlabel="key position j", ylabel="bias", title=f"H = {settings['heads']}, query i = {settings['query']}")
    ax.legend(fontsize=7, ncol=2)


def _draw_order_sensitivity(fig, data, settings):
    ax = fig.subplots()
    tokens = range(len(data["with_pe"]))
    ax.bar([t - 0.2 for t in tokens], data["with_pe"], width=0.4, label=f"with PE (α = {settings['scale']})")
    ax.bar([t + 0.2 for t in tokens], data["without_pe"], width=0.4, label="without PE")
    ax.set(xlabel="token t", ylabel="‖out(permuted)[t] − permuted out[t]‖",
           title=f"rotation r = {settings['rotation']}")
    ax.legend()


def _draw_stretched_angles(fig, data, settings):
    ax = fig.subplots()
    figure, target = figures.spec("stretched-angles"), settings["scale"] * figures.spec("stretched-angles")["train_len"]
    pairs = np.arange(len(data["trained"]))
    ax.axvspan(np.argmax(data["trained"] < 2 * np.pi) - 0.5, len(pairs) - 0.5, color="0.92", zorder=0)
    ax.axhline(2 * np.pi, color="0.6", ls="--", lw=1)
    ax.semilogy(pairs, data["trained"], color="0.5", lw=5, alpha=0.45, label=f"in training, at {figure['train_len']}")
    ax.semilogy(pairs, data["before"], "k--", lw=1, label=f"no change, at {target}")
    ax.semilogy(pairs, data["after"], color="C0", lw=2, label=f"{settings['method']}, at {target}")
    unseen = data["unseen"].astype(bool)
    ax.semilogy(pairs[unseen], data["after"][unseen], "o", color="C3", markersize=4, label="beyond its trained angle")
    ax.set(xlabel="pair i (fast to slow)", ylabel="largest angle (radians)",
           title=f"{settings['method']}, s = {settings['scale']}")
    ax.legend(fontsize=8, loc="upper right")


DRAW = {"pe-heatmap": _draw_pe_heatmap, "wavelengths": _draw_wavelengths, "pair-rotation": _draw_pair_rotation,
        "dot-distance": _draw_dot_distance, "rope-shift": _draw_rope_shift, "alibi-heads": _draw_alibi_heads,
        "order-sensitivity": _draw_order_sensitivity, "stretched-angles": _draw_stretched_angles}


def draw_fallback(name: str, target: pathlib.Path) -> None:
    settings = figures.default_settings(name)
    fig = plt.figure(figsize=(7, 4.5), layout="constrained")
    DRAW[name](fig, figures.expected(name, settings), settings)
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target, dpi=80, metadata={"Software": None})   # no version stamp: the same bytes every build
    plt.close(fig)


def write_fallbacks(app, exception) -> None:
    """Draw the static images that are missing or older than what they are drawn from."""
    if exception is not None or app.builder.format != "html":
        return
    newest_source = max(path.stat().st_mtime for path in SOURCES)
    for name in figures.figure_names():
        target = pathlib.Path(app.outdir) / "_static" / FALLBACK / f"{name}.png"
        if not target.exists() or target.stat().st_mtime < newest_source:
            draw_fallback(name, target)


def setup(app):
    app.add_directive("explorable", ExplorableDirective)
    app.connect("build-finished", write_fallbacks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
