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


SNIPPET_INLINE_NUMBERS = 16    # a snippet writing more numbers than this is folded, never set in the prose


def snippet(problem) -> dict | None:
    """The line that reproduces a problem's failing call: scalars by repr, each array the student may see written in
    full (float64 repr, so the call reproduces exactly), each other array as a name the line needs, with its shape
    and dtype (`needs`). `numbers`: how many array entries the line writes. None without a call."""
    call = getattr(problem, "call", None)
    if not call:
        return None
    shown, needs, numbers = problem.inputs or [], [], 0

    def written(value) -> str:
        nonlocal numbers
        if isinstance(value, dict) and "default_rng" in value:
            return f"np.random.default_rng({int(value['default_rng'])})"
        if not isinstance(value, dict):
            return repr(value)
        place, dtype = int(value["input"]), str(value["dtype"])
        if place < len(shown):
            numbers += int(np.size(shown[place]))
            values = repr(np.asarray(shown[place], dtype=np.float64).tolist())
            return f"np.array({values})" if dtype == "float64" else f"np.array({values}, dtype=np.{dtype})"
        name = f"input{place + 1}"
        needs.append({"name": name, "shape": tuple(value["shape"]), "dtype": dtype})
        return name
    arguments = [written(v) for v in call["args"]] + [f"{k}={written(v)}" for k, v in call["kwargs"].items()]
    return {"line": f"{call['function']}({', '.join(arguments)})", "needs": needs, "numbers": numbers,
            "folded": numbers > SNIPPET_INLINE_NUMBERS}


ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(pathlib.Path(__file__).parent / "templates"),
                                 autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                 lstrip_blocks=True)
ENVIRONMENT.filters.update(g=number, arrays=arrays, snippet=snippet)


def render(name: str, **context) -> str:
    return ENVIRONMENT.get_template(name).render(**context)
