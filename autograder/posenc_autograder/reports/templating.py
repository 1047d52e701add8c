"""The reports' pages through Jinja2 templates (templates/ beside this file), escaping everything by default, as
the portal's pages are: a student's id, notebook name, note or diagnosis never becomes markup."""
from __future__ import annotations

import pathlib

import jinja2
import numpy as np

PREVIEW_ENTRIES = 4       # entries of an input array shown before its block to unfold


def number(value) -> str:
    return f"{value:g}"


def arrays(inputs: list) -> list[dict]:
    """A failing case's input arrays for a page: shape, the first entries, and the whole array to copy."""
    shown = []
    for values in inputs:
        array = np.asarray(values, dtype=np.float64)
        flat = array.ravel()
        preview = ", ".join(f"{v:.4g}" for v in flat[:PREVIEW_ENTRIES]) + (", ..." if flat.size > PREVIEW_ENTRIES
                                                                            else "")
        shown.append({"shape": tuple(array.shape), "preview": f"[{preview}]", "full": repr(array.tolist())})
    return shown


ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(pathlib.Path(__file__).parent / "templates"),
                                 autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                 lstrip_blocks=True)
ENVIRONMENT.filters.update(g=number, arrays=arrays)


def render(name: str, **context) -> str:
    return ENVIRONMENT.get_template(name).render(**context)
