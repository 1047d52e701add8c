"""The printer prints the single page itself, once it has loaded and every explorable figure has drawn itself,
or refuses and names the figure that did not.

Sphinx's single-page build writes the book under its root document's name and an index.html that only redirects
there; a printer that opens index.html and trusts Playwright's "network idle" (which can come before a document
is parsed: github.com/microsoft/playwright/issues/42598) may look at the page while the redirect is still loading it.
"""
import pathlib

import pytest
from print_book import PDF_NAME, print_book, root_page

# Draws the figure when the document is parsed, as the explorables script does.
DRAW_WHEN_PARSED = """<script>
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".explorable").forEach(f => f.classList.add("explorable--live"));
});
</script>"""
# Keeps the parser busy after every byte has arrived, as a whole book on one page does on a loaded machine.
# The parser yields between pieces, so the browser answers whoever asks while the page is half parsed.
BUSY_PARSER = "".join(f"<p>section {i}</p><script>{{const t = Date.now() + 50; while (Date.now() < t) {{}}}}</script>"
                      for i in range(40))
REDIRECT = '<!doctype html><meta http-equiv="Refresh" content="0; url={page}" />'


def single_build(folder: pathlib.Path, body: str) -> pathlib.Path:
    """A single-page build as Sphinx writes one: the root document's page and an index.html redirecting to it."""
    folder.mkdir(parents=True, exist_ok=True)
    page = root_page(folder)
    page.write_text(f"<!doctype html><html><head><title>t</title></head><body>{body}</body></html>")
    (folder / "index.html").write_text(REDIRECT.format(page=page.name))
    return folder


def test_the_page_printed_is_the_book_after_it_has_drawn_its_figures(tmp_path, browser):
    single = single_build(tmp_path / "single", '<figure class="explorable" id="late">drawn late</figure>'
                          + DRAW_WHEN_PARSED + BUSY_PARSER)
    written = print_book(single, tmp_path / "out", browser=browser)
    assert written == tmp_path / "out" / PDF_NAME and written.read_bytes().startswith(b"%PDF")


def test_a_figure_that_never_draws_is_named_and_nothing_is_printed(tmp_path, browser):
    single = single_build(tmp_path / "single", '<figure class="explorable" id="broken">never drawn</figure>'
                          '<figure class="explorable" id="fine">drawn</figure>'
                          '<script>document.getElementById("fine").classList.add("explorable--live");'
                          'throw new Error("the broken figure\'s settings are not JSON")</script>')
    with pytest.raises(RuntimeError) as refused:
        print_book(single, tmp_path / "out", browser=browser)
    named = str(refused.value).split("did not draw")[0]
    assert "broken" in named and "fine" not in named
    assert "settings are not JSON" in str(refused.value)
    assert not (tmp_path / "out" / PDF_NAME).exists()
