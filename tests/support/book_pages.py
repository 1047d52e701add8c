"""The book's pages in reading order, read from _toc.yml (shared by the book, browser and PDF tests)."""
import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
RAW_TEX = ("$$", "\\frac", "\\begin{")          # TeX a reader should never see unrendered
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
SMALL_COUNT = 12


def toc_files(repo_root: pathlib.Path = ROOT) -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    toc = yaml.safe_load((repo_root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


def numbers(text: str) -> set[float]:
    """The absolute values of the numbers written in text (thousands separators allowed)."""
    return {abs(float(n.replace(",", ""))) for n in NUMBER.findall(text)}


def open_page(browser, url, width=1280, color_scheme="light"):
    """Load url; return (page, problems seen while loading: console errors, page errors, failed requests)."""
    page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=color_scheme)
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} {r.failure}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    page.goto(url, wait_until="networkidle")
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    # reader.js marks scrolling boxes once the fonts are in; a frame after that, its marks are on the page
    page.evaluate("() => document.fonts.ready.then(() => new Promise(done => requestAnimationFrame(() => done())))")
    return page, problems
