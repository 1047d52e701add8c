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
    for place, values in enumerate(inputs):
        if values is None:                   # an array of the case too large to show (the snippet names it)
            continue
        array = np.asarray(values, dtype=np.float64)
        flat = array.ravel()
        preview = ", ".join(f"{v:.4g}" for v in flat[:PREVIEW_ENTRIES]) + (", ..." if flat.size > PREVIEW_ENTRIES
                                                                            else "")
        shown.append({"place": place + 1, "shape": tuple(array.shape), "preview": f"[{preview}]",
                      "full": repr(array.tolist())})
    return shown


SNIPPET_INLINE_NUMBERS = 16    # a snippet writing more numbers than this is folded, never set in the prose


def snippet(problem) -> dict | None:
    """The lines that reproduce a problem's failing case: scalars by repr, an all-zero array as np.zeros, each array
    the student may see written in full (float64 repr, so the call reproduces exactly), each other array as a name
    the lines need, with its shape and dtype (`needs`), and the student functions the grader stood in for while the
    case ran (`stand_ins`). `numbers`: how many array entries the lines write. None without a call."""
    call = getattr(problem, "call", None)
    if not call:
        return None
    shown, needs, numbers = problem.inputs or [], [], 0

    def written(value) -> str:
        nonlocal numbers
        if isinstance(value, dict) and "default_rng" in value:
            return f"np.random.default_rng({int(value['default_rng'])})"
        if isinstance(value, dict) and "zeros" in value:
            return f"np.zeros({tuple(int(n) for n in value['zeros'])})"
        if isinstance(value, dict) and "object" in value:
            if str(value["object"]) not in [need["name"] for need in needs]:
                needs.append({"name": str(value["object"]), "what": str(value["what"])})
            return str(value["object"])
        if not isinstance(value, dict):
            return repr(value)
        place, dtype = int(value["input"]), str(value["dtype"])
        if place < len(shown) and shown[place] is not None:
            numbers += int(np.size(shown[place]))
            values = repr(np.asarray(shown[place], dtype=np.float64).tolist())
            return f"np.array({values})" if dtype == "float64" else f"np.array({values}, dtype=np.{dtype})"
        name = f"input{place + 1}"
        if name not in [need["name"] for need in needs]:
            needs.append({"name": name, "shape": tuple(value["shape"]), "dtype": dtype, "what": None})
        return name

    def line_of(line: dict) -> str:
        if "set" in line:
            return f"{line['set']} = {written(line['value'])}"
        if "get" in line:
            return str(line["get"])
        arguments = [written(v) for v in line["args"]] + [f"{k}={written(v)}" for k, v in line["kwargs"].items()]
        return (f"{line['assign']} = " if line.get("assign") else "") + f"{line['call']}({', '.join(arguments)})"
    lines = call.get("lines") or [{"call": call["function"], "args": call["args"], "kwargs": call["kwargs"]}]
    text = "\n".join(line_of(line) for line in lines)
    return {"line": text, "needs": needs, "numbers": numbers, "lines": len(lines),
            "stand_ins": list(call.get("stand_ins", [])), "folded": numbers > SNIPPET_INLINE_NUMBERS}


ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(pathlib.Path(__file__).parent / "templates"),
                                 autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                 lstrip_blocks=True)
ENVIRONMENT.filters.update(g=number, arrays=arrays, snippet=snippet)


def render(name: str, **context) -> str:
    return ENVIRONMENT.get_template(name).render(**context)
