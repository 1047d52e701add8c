"""The book builds with zero warnings and every chapter is a page with executed output."""
import re

from book_pages import SMALL_COUNT, numbers, toc_files


def test_book_builds_without_warnings(book_build):
    proc, _ = book_build
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    # Sphinx reports "path: WARNING: ..."; the kernel's own "[IPKernelApp] WARNING | ..." chatter is not a build
    # warning.
    warnings = [line for line in log.splitlines() if re.search(r"\b(WARNING|ERROR|CRITICAL):", line)
                and not KERNEL_SHUTDOWN_NOISE.fullmatch(line.strip())]
    assert warnings == [], "\n".join(warnings)


# pyzmq's stream logs this through tornado when a message reaches a kernel channel closed at shutdown (a
# race seen once in five fresh-clone builds; jupyter/notebook#6721): the notebook had already run, and an error
# in a chapter fails the -W build itself.
KERNEL_SHUTDOWN_NOISE = re.compile(r"ERROR:tornado\.general:Uncaught exception in ZMQStream callback")


def test_the_intro_links_the_pdf_only_when_it_exists(book_build):
    """After `make book` alone there is no PDF, and the intro's "PDF" is no link (a dead link before); after
    `make pdf` (which the PDF tests run, maybe before this one) it links the file."""
    _, html = book_build
    intro = (html / "intro.html").read_text()
    linked = 'class="reader-pdf" href="posenc-course.pdf"' in intro
    assert linked == (html / "posenc-course.pdf").exists()
    assert linked or '<span class="reader-pdf">PDF</span>' in intro


def test_every_toc_entry_is_a_page(book_build, repo_root):
    _, html = book_build
    missing = [f for f in toc_files(repo_root) if not (html / f"{f}.html").exists()]
    assert missing == []


def test_chapters_have_executed_output_figures_and_math(book_build, repo_root):
    _, html = book_build
    for chapter in sorted((repo_root / "chapters").glob("*.md")):
        page = (html / "chapters" / f"{chapter.stem}.html").read_text()
        assert "cell_output" in page, f"{chapter.name}: no executed output"
        assert re.search(r"<img [^>]*alt=\"[^\"]+\"", page), f"{chapter.name}: no figure with alt text"
        assert "\\(" in page or "\\[" in page or "math notranslate" in page, f"{chapter.name}: no math"


CODE_CELL = re.compile(r"```\{code-cell\}[^\n]*\n(.*?)```", re.S)
MAX_CODE_LINE = 88      # wider lines scroll sideways in the book's code boxes


def test_chapter_code_fits_the_code_box(repo_root):
    too_long = []
    for chapter in sorted((repo_root / "chapters").glob("*.md")):
        for block in CODE_CELL.findall(chapter.read_text()):
            code = block.split("---", 2)[2] if block.startswith("---") else block   # skip the cell's YAML
            too_long += [f"{chapter.name}: {line}" for line in code.splitlines() if len(line) > MAX_CODE_LINE]
    assert too_long == []


# A number in alt text must be a parameter the chapter's code sets (a width, a length, a head count),
# never a result: results change with the code and belong in captions and prose, glued from the
# executed cells. Counts up to twelve ("four heatmaps", "3-by-3") are words, not data.
def test_alt_text_numbers_are_parameters_of_the_code(repo_root):
    from myst_nb.core.read import read_myst_markdown_notebook
    stray = []
    for chapter in sorted((repo_root / "chapters").glob("*.md")):
        notebook = read_myst_markdown_notebook(chapter.read_text())
        code = " ".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
        for cell in notebook.cells:
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
            if alt is None:
                continue
            caption = cell.metadata["mystnb"].get("figure", {}).get("caption", "")
            known = numbers(code) | numbers(caption)
            stray += [f"{chapter.name}: {n:g} in {alt[:60]!r}" for n in sorted(numbers(alt))
                      if n not in known and not (n.is_integer() and n <= SMALL_COUNT)]
    assert stray == []
