"""Shared fixtures: the repository root and a built book (built once per test session)."""
import os
import pathlib
import subprocess
import sys

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = pathlib.Path(sys.executable).parent


@pytest.fixture(scope="session")
def repo_root() -> pathlib.Path:
    return ROOT


@pytest.fixture(scope="session")
def book_build(repo_root):
    """Build the book exactly as `make book` does; return (completed process, html dir).

    POSENC_BOOK_OUTPUT=<dir> builds into <dir>/_build instead (jupyter-book's --path-output), so
    that people testing in one work tree do not overwrite each other's _build.
    """
    output = pathlib.Path(os.environ.get("POSENC_BOOK_OUTPUT", repo_root))
    proc = subprocess.run(
        [str(VENV_BIN / "jupyter-book"), "build", ".", "--path-output", str(output), "-W", "-n", "--keep-going"],
        cwd=repo_root, capture_output=True, text=True, timeout=1200,
    )
    return proc, output / "_build" / "html"


def toc_files(repo_root: pathlib.Path) -> list[str]:
    """Every page of the book, in reading order, as paths without suffix."""
    toc = yaml.safe_load((repo_root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files
