"""The dashboard's charts, drawn as small SVG by hand and set inline in the page (a plotting library cost some
0.4 CPU-seconds a run to import and draw three charts).

A chart is drawn in its own units, WIDTH wide, and the page scales it to its column: about 340 px on a 375 px
phone, so FONT-unit text stays about 13 px there. The whole chart is one image for screen readers (role="img"),
named by its alt text; each bar has a tooltip (<title>) saying what it counts. Every text goes through escape():
test ids and assignment names are written into the page as they are.
"""
from __future__ import annotations

import dataclasses
import math
from html import escape

WIDTH = 360              # the chart's own units; the page scales it to its column
FONT = 14                # text height in those units
CHAR = 0.58 * FONT       # a generous width of one character, to keep labels apart and inside the chart
TEXT = "#222"
AXIS = "#555"
TRACK = "#e8e8e8"        # the empty part of a pass-rate bar: 100 %


@dataclasses.dataclass(frozen=True)
class Chart:
    svg: str             # markup, escaped here: the page inserts it as it is
    alt: str             # what the chart shows, in words (also its accessible name)
    caption: str


def chart(height: float, alt: str, body: list[str]) -> str:
    """The <svg> element around a chart's parts."""
    return (f'<svg class="chart" viewBox="0 0 {WIDTH} {height:g}" role="img" aria-label="{escape(alt)}" '
            f'font-family="system-ui, sans-serif" font-size="{FONT}" fill="{TEXT}" '
            f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def text(x: float, y: float, words: str, anchor: str = "start", **attributes) -> str:
    extra = "".join(f' {name.replace("_", "-")}="{escape(str(value))}"' for name, value in attributes.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{escape(words)}</text>'


def bar(x: float, y: float, width: float, height: float, color: str, tooltip: str) -> str:
    return (f'<rect class="bar" x="{x:.2f}" y="{y:.2f}" width="{width:.2f}" height="{height:.2f}" fill="{color}">'
            f"<title>{escape(tooltip)}</title></rect>")


def line(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{AXIS}"/>'


def shortened(label: str, room: float) -> str:
    """The label cut to fit `room` units (the whole of it is in the tooltip and the alt text)."""
    fits = max(4, int(room // CHAR))
    return label if len(label) <= fits else label[:fits - 1] + "…"


def count_ticks(largest: int) -> list[int]:
    """Whole-number ticks from 0 to at least `largest`, five or fewer steps (a count has no half notebooks)."""
    step = 1
    while math.ceil(largest / step) > 5:
        step = next(s * 10 ** k for k in range(10) for s in (1, 2, 5) if s * 10 ** k > step)
    return list(range(0, step * max(1, math.ceil(largest / step)) + 1, step))


def histogram(counts: list[int], edges: list[str], tooltips: list[str], x_label: str, color: str, alt: str) -> str:
    """Vertical bars, one per bin (edges: the bins' bounds as labels, one more than the bins), each with its count
    above it, over a whole-number axis of notebooks."""
    widest = (max(len(edge) for edge in edges) + 2) * CHAR       # a label and two characters of space
    # room for the tallest bar's count above it, and for half the last bound's label on the right
    height, left, right, top, bottom = 240.0, 40.0, max(8.0, widest / 2), FONT + 10.0, 52.0
    plot_width, plot_height = WIDTH - left - right, height - top - bottom
    ticks = count_ticks(max(counts, default=0))
    scale = plot_height / ticks[-1]
    base = top + plot_height
    body = [text(16, top + plot_height / 2, "notebooks", "middle", transform=f"rotate(-90 16 {top + plot_height / 2})")]
    for tick in ticks:
        y = base - tick * scale
        body += [line(left - 4, y, left, y), text(left - 7, y + FONT * 0.35, str(tick), "end")]
    slot = plot_width / len(counts)
    for i, (count, tooltip) in enumerate(zip(counts, tooltips, strict=True)):
        x = left + i * slot
        body.append(bar(x + 1, base - count * scale, slot - 2, count * scale, color, tooltip))
        if count:
            body.append(text(x + slot / 2, base - count * scale - 4, str(count), "middle"))
    every = math.ceil(widest / slot)                     # label every n-th bound so that labels never touch
    for i, edge in enumerate(edges):
        if i % every == 0:
            x = left + i * slot
            body += [line(x, base, x, base + 4), text(x, base + FONT + 8, edge, "middle")]   # clear of the 0
    body += [line(left, base, WIDTH - right, base), line(left, top, left, base),
             text(left + plot_width / 2, height - 8, x_label, "middle")]
    return chart(height, alt, body)


def pass_rate_bars(rows: list[tuple[str | None, str, int, int]], alt: str, color: str) -> str:
    """One row per test: its name, a bar as long as the share of students who passed it (the grey track is 100 %),
    and the share with its count. rows: (heading or None, test, passed, graded); a heading (the assignment, when
    there are several) is written once above its tests."""
    margin, row_height, bar_height = 4.0, 2.6 * FONT, 0.9 * FONT
    body, y, heading = [], 0.0, None
    for group, test, passed, graded in rows:
        if group is not None and group != heading:
            heading = group
            y += 1.6 * FONT
            body.append(text(margin, y - 0.3 * FONT, shortened(group, WIDTH - 2 * margin), font_weight="600"))
        share = 100 * passed / graded
        value = f"{share:.0f} % ({passed} of {graded})"
        room = WIDTH - 2 * margin - len(value) * CHAR - FONT
        body += [text(margin, y + FONT, shortened(test, room)), text(WIDTH - margin, y + FONT, value, "end"),
                 f'<rect x="{margin}" y="{y + 1.3 * FONT:.2f}" width="{WIDTH - 2 * margin}" '
                 f'height="{bar_height:.2f}" fill="{TRACK}"/>',
                 bar(margin, y + 1.3 * FONT, (WIDTH - 2 * margin) * share / 100, bar_height, color,
                     f"{test}: {passed} of {graded} students passed")]
        y += row_height
    return chart(y + margin, alt, body)


def empty(alt: str, words: str) -> str:
    """A chart with nothing to show says so."""
    return chart(80, alt, [text(WIDTH / 2, 44, words, "middle", fill=AXIS)])
