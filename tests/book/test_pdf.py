"""The book as one PDF (`make pdf`): it opens, holds every page of the book in reading order, with its
formulas typeset, its figures with their alt text, and an outline to jump to each chapter.

The `book_pdf` fixture (conftest.py) prints the session's book build; this module opens the result with PDFium (the
engine of Chromium's PDF viewer), as a reader's PDF viewer would, and compares it with the single-page HTML it was
printed from.
"""
import ctypes
import html.parser
import re
import typing

import pypdfium2
import pypdfium2.raw as pdfium
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


def element_alts(element, found: list) -> list:
    """Every /Alt text of a tagged PDF's structure element and the elements under it."""
    size = pdfium.FPDF_StructElement_GetAltText(element, None, 0)          # bytes of UTF-16 with its 0 at the end
    if size > 2:
        text = ctypes.create_string_buffer(size)
        pdfium.FPDF_StructElement_GetAltText(element, text, size)
        found.append(text.raw[:size - 2].decode("utf-16-le"))
    for index in range(pdfium.FPDF_StructElement_CountChildren(element)):
        if child := pdfium.FPDF_StructElement_GetChildAtIndex(element, index):
            element_alts(child, found)
    return found


def sheet_alts(sheet) -> list[str]:
    """Every /Alt text in the structure tree of the sheet's tagged contents."""
    tree = pdfium.FPDF_StructTree_GetForPage(sheet.raw)
    try:
        return [alt for index in range(pdfium.FPDF_StructTree_CountChildren(tree))
                for alt in element_alts(pdfium.FPDF_StructTree_GetChildAtIndex(tree, index), [])]
    finally:
        pdfium.FPDF_StructTree_Close(tree)


class Printed(typing.NamedTuple):
    """The PDF as a viewer reads it. pypdf read it before: its pure-Python parse of every drawing operation took 15
    CPU-s for the text of the book's 231 sheets, PDFium 0.65, with the same characters on each sheet but for icon
    glyphs (private use) and a brace's middle piece, a few on 7 sheets in another order; the tags 5.4 -> 1.6 CPU-s."""
    sheets: list[str]           # each sheet's text, a hyphen that ends a line (which PDFium gives as U+FFFE) a hyphen
    bookmarks: list[str]        # the outline's titles, every level
    alts: list[str]             # every /Alt text of the tagged PDF's structure tree
    contents: PageContents      # the single-page HTML it was printed from


def read_pdf(pdf, contents: PageContents) -> Printed:
    with pypdfium2.PdfDocument(pdf) as document:
        sheets, alts = [], []
        for sheet in document:
            sheets.append(sheet.get_textpage().get_text_range().replace("\ufffe", "-"))
            alts += sheet_alts(sheet)
        return Printed(sheets, [bookmark.get_title() for bookmark in document.get_toc()], alts, contents)


@pytest.fixture(scope="module")
def printed(book_pdf, repo_root) -> Printed:
    pdf, singlehtml = book_pdf
    contents = PageContents()
    contents.feed((singlehtml / f"{toc_files(repo_root)[0]}.html").read_text())
    found = read_pdf(pdf, contents)
    print(f"\n{pdf}: {len(found.sheets)} pages, {pdf.stat().st_size // 1024} KiB")
    return found


def test_every_chapter_is_in_the_pdf_in_reading_order_on_its_own_pages(printed, repo_root):
    contents = printed.contents
    chapters = toc_files(repo_root)
    headings = [squeezed(t) for t in contents.titles]
    assert len(headings) >= len(chapters), f"the single page shows {len(headings)} headings for {len(chapters)} pages"
    # Each page of the book starts a sheet: at least one sheet per page, and each title is found, in order.
    assert len(printed.sheets) >= len(chapters)
    sheets = [squeezed(text) for text in printed.sheets]
    where = []
    for title in headings:
        found = [i for i, sheet in enumerate(sheets) if title in sheet and i >= (where[-1] if where else 0)]
        assert found, f"{title!r} is not in the PDF (after sheet {where[-1] if where else 0})"
        where.append(found[0])
    bookmarks = {squeezed(t) for t in printed.bookmarks}
    assert [t for t in headings if t not in bookmarks] == [], "a chapter missing from the PDF's outline"


def test_formulas_are_typeset_and_figures_keep_their_alt_text(printed):
    contents = printed.contents
    text = "".join(printed.sheets)
    assert [t for t in RAW_TEX + ("\\(", "\\[") if t in text] == []
    alts = {squeezed(a) for a in printed.alts}
    assert contents.alts and all(a.strip() for a in contents.alts), "an image without alt text in the book"
    assert [a for a in contents.alts if squeezed(a) not in alts] == []


def test_the_intro_links_the_pdf_once_it_is_printed(book_pdf):
    """`make pdf` writes the PDF beside the HTML pages and turns the intro's word "PDF" into a link to it."""
    pdf, _ = book_pdf
    intro = (pdf.parent / "intro.html").read_text()
    assert f'<a class="reader-pdf" href="{pdf.name}">PDF</a>' in intro and pdf.stat().st_size > 0

