"""Markup fixes for readers of assistive technology (axe-core's WCAG 2.1 AA rules; tests/book/test_browser.py).

- The theme's search button is named "Search" while it shows "Search Ctrl+K" (WCAG 2.5.3, label in
  name): templates/search-button-field.html overrides the theme's component, so templates/ goes first.
- docutils marks each bibliography entry role="doc-biblioentry" inside role="list": DPUB-ARIA 1.1
  deprecates that role, and a list must own listitems (axe: aria-required-children, critical). The
  entries become listitems.
- myst-nb names the toggle of a collapsed code cell "Toggle hidden content" while it shows "Show code
  cell source" (label in name again): the toggle is named by what it shows.
"""
from __future__ import annotations

import pathlib

TEMPLATES = pathlib.Path(__file__).parent / "templates"
DEPRECATED_ENTRY_ROLE = 'role="doc-biblioentry"'
LIST_ENTRY_ROLE = 'role="listitem"'
HIDDEN_CELL_TOGGLE = '<summary aria-label="Toggle hidden content">'


def templates_first(app, config) -> None:
    config.templates_path.insert(0, str(TEMPLATES))


def bibliography_entries_as_listitems(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body and DEPRECATED_ENTRY_ROLE in body:
        context["body"] = body.replace(DEPRECATED_ENTRY_ROLE, LIST_ENTRY_ROLE)


def toggles_named_by_what_they_show(app, pagename, templatename, context, doctree) -> None:
    body = context.get("body")
    if body and HIDDEN_CELL_TOGGLE in body:
        context["body"] = body.replace(HIDDEN_CELL_TOGGLE, "<summary>")


def setup(app):
    app.connect("config-inited", templates_first)
    app.connect("html-page-context", bibliography_entries_as_listitems)
    app.connect("html-page-context", toggles_named_by_what_they_show)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
