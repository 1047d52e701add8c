"""The book's pages in reading order, read from _toc.yml (shared by the book, browser and PDF tests)."""
import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def toc_files(repo_root: pathlib.Path = ROOT) -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    toc = yaml.safe_load((repo_root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files
