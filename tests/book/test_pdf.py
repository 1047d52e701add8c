"""The book as one PDF (`make pdf`): it opens, holds every page of the book in reading order, with its
formulas typeset, its figures with their alt text, and an outline to jump to each chapter.

The `book_pdf` fixture (conftest.py) prints the session's book build; this module opens the result with
pypdf, as a reader's PDF viewer would, and compares it with the single-page HTML it was printed from.
"""
import html.parser
import re

import pypdf
import pytest
from book_pages import RAW_TEX, toc_files


class PageContents(html.parser.HTMLParser):
    """The single page's chapter titles (<title> aside, each page's first heading) and its images' alt text."""

    def __init__(self):
        super().__init__()
        self.alts, self.titles, self._heading, self._in_noscript = [], [], None, False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "noscript":
            self._in_noscript = True          # the explorables' no-JavaScript images: not drawn when printing
        elif tag == "img" and not self._in_noscript:
            self.alts.append(attrs.get("alt") or "")
        elif tag in ("h1", "h2") and self._heading is None:
            self._heading = [tag]

    def handle_endtag(self, tag):
        if tag == "noscript":
            self._in_noscript = False
        elif self._heading and tag == self._heading[0]:
            self.titles.append("".join(self._heading[1:]))
            self._heading = None

    def handle_data(self, data):
        if self._heading is not None:
            self._heading.append(data)


def squeezed(text: str) -> str:
    """Text without whitespace or the headings' '#' links: line breaks in a PDF fall anywhere."""
    return re.sub(r"\s+|#", "", text)


def structure_alts(node, found: list) -> list:
    """Every /Alt text in the tagged PDF's structure tree."""
    node = node.get_object()
    if isinstance(node, pypdf.generic.ArrayObject):
        for child in node:
            structure_alts(child, found)
    elif isinstance(node, pypdf.generic.DictionaryObject):
        if "/Alt" in node:
            found.append(str(node["/Alt"]))
        if "/K" in node:
            structure_alts(node["/K"], found)
    return found


def outline_titles(outline) -> list[str]:
    titles = []
    for entry in outline:
        titles += outline_titles(entry) if isinstance(entry, list) else [entry.title]
    return titles


@pytest.fixture(scope="module")
def printed(book_pdf, repo_root):
    pdf, singlehtml = book_pdf
    reader = pypdf.PdfReader(pdf)
    pages_text = [page.extract_text() for page in reader.pages]
    print(f"\n{pdf}: {len(reader.pages)} pages, {pdf.stat().st_size // 1024} KiB")
    contents = PageContents()
    contents.feed((singlehtml / f"{toc_files(repo_root)[0]}.html").read_text())
    return reader, pages_text, contents


def test_every_chapter_is_in_the_pdf_in_reading_order_on_its_own_pages(printed, repo_root):
    reader, pages_text, contents = printed
    chapters = toc_files(repo_root)
    headings = [squeezed(t) for t in contents.titles]
    assert len(headings) >= len(chapters), f"the single page shows {len(headings)} headings for {len(chapters)} pages"
    # Each page of the book starts a sheet: at least one sheet per page, and each title is found, in order.
    assert len(reader.pages) >= len(chapters)
    sheets = [squeezed(text) for text in pages_text]
    where = []
    for title in headings:
        found = [i for i, sheet in enumerate(sheets) if title in sheet and i >= (where[-1] if where else 0)]
        assert found, f"{title!r} is not in the PDF (after sheet {where[-1] if where else 0})"
        where.append(found[0])
    bookmarks = {squeezed(t) for t in outline_titles(reader.outline)}
    assert [t for t in headings if t not in bookmarks] == [], "a chapter missing from the PDF's outline"


def test_formulas_are_typeset_and_figures_keep_their_alt_text(printed):
    reader, pages_text, contents = printed
    text = "".join(pages_text)
    assert [t for t in RAW_TEX + ("\\(", "\\[") if t in text] == []
    alts = {squeezed(a) for a in structure_alts(reader.trailer["/Root"]["/StructTreeRoot"], [])}
    assert contents.alts and all(a.strip() for a in contents.alts), "an image without alt text in the book"
    assert [a for a in contents.alts if squeezed(a) not in alts] == []


def test_the_intro_links_the_pdf_once_it_is_printed(book_pdf):
    """`make pdf` writes the PDF beside the HTML pages and turns the intro's word "PDF" into a link to it."""
    pdf, _ = book_pdf
    intro = (pdf.parent / "intro.html").read_text()
    assert f'<a class="reader-pdf" href="{pdf.name}">PDF</a>' in intro and pdf.stat().st_size > 0

