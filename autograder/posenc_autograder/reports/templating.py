"""The reports' pages through Jinja2 templates (templates/ beside this file), escaping everything by default, as
the portal's pages are: a student's id, notebook name, note or diagnosis never becomes markup."""
from __future__ import annotations

import collections
import hashlib
import pathlib
import re
import threading

import jinja2
import numpy as np

from posenc_autograder.results import (
    Argument,
    InputArray,
    Line,
    Problem,
    Reading,
    Seeded,
    Setting,
    Unshown,
    Zeros,
)

PREVIEW_ENTRIES = 4       # entries of an input array shown before its block to unfold


def number(value) -> str:
    """A score or a share of points as people read it: at most two decimals (a mistake's share of a contracts test
    read 0.333333)."""
    return f"{round(value, 2):g}"


REPR_CACHE = 64          # arrays written, kept by shape and sha256 (a class failing one case shows the same inputs)
_WRITTEN: collections.OrderedDict[tuple[tuple[int, ...], bytes], str] = collections.OrderedDict()
_WRITTEN_LOCK = threading.Lock()


def written(values) -> str:
    """The entries as float64, written as repr writes the list (exact: the lines reproduce the case). A class shows
    the same failing inputs on many pages (a regrade writes them all again), so each array is written once: known by
    its shape and the sha256 of its bytes, which fix what repr writes (the last REPR_CACHE kept)."""
    array = np.asarray(values, dtype=np.float64)
    key = (tuple(array.shape), hashlib.sha256(array.tobytes()).digest())
    with _WRITTEN_LOCK:
        text = _WRITTEN.get(key)
        if text is not None:
            _WRITTEN.move_to_end(key)
            return text
    text = repr(array.tolist())
    with _WRITTEN_LOCK:
        _WRITTEN[key] = text
        if len(_WRITTEN) > REPR_CACHE:
            _WRITTEN.popitem(last=False)
    return text


def arrays(problem: Problem) -> list[dict]:
    """A failing case's input arrays for a page: shape, dtype, the first entries, and the whole array to copy, with
    the dtype the lines that reproduce the case pass (an integer array written without it would be float64)."""
    dtypes = _input_dtypes(problem)
    shown = []
    for place, values in enumerate(problem.inputs or []):
        if values is None:                   # an array of the case too large to show (the snippet names it)
            continue
        array = np.asarray(values, dtype=np.float64)
        flat = array.ravel()
        preview = ", ".join(f"{v:.4g}" for v in flat[:PREVIEW_ENTRIES]) + (", ..." if flat.size > PREVIEW_ENTRIES
                                                                            else "")
        dtype = dtypes.get(place, "float64")
        shown.append({"place": place + 1, "shape": tuple(array.shape), "dtype": dtype, "preview": f"[{preview}]",
                      "full": array_text(array, dtype)})
    return shown


def _input_dtypes(problem: Problem) -> dict[int, str]:
    """Each input array's dtype by its place, as the reproduction's lines name it."""
    if problem.call is None:
        return {}
    found: dict[int, str] = {}
    for line in problem.call.lines:
        values = [line.value] if isinstance(line, Setting) else \
            [*line.args, *line.kwargs.values()] if not isinstance(line, Reading) else []
        found.update((value.place, value.dtype) for value in values if isinstance(value, InputArray))
    return found


def array_text(values, dtype: str) -> str:
    """An array as the line that builds it: its float64 entries written exactly, and its dtype when not float64."""
    return f"np.array({written(values)})" if dtype == "float64" else f"np.array({written(values)}, dtype=np.{dtype})"


SNIPPET_INLINE_NUMBERS = 16    # a snippet writing more numbers than this is folded, never set in the prose


def snippet(problem: Problem) -> dict | None:
    """The lines that reproduce a problem's failing case (its results.Reproduction): scalars by repr, an all-zero
    array as np.zeros, each array the student may see written in full (float64 repr, so the lines reproduce exactly),
    each other array as a name the lines need, with its shape and dtype (`needs`), and the student functions the
    grader stood in for while the case ran (`stand_ins`). `numbers`: how many array entries the lines write. A case
    that reached the template's stub (Problem.at_stub) fails for any values: each array is built from its shape and
    dtype (`any_values`), never written out nor named as one to find. None without a reproduction."""
    if problem.call is None:
        return None
    writer = _Writer(problem.inputs or [], any_values=problem.at_stub)
    text = "\n".join(writer.line(line) for line in problem.call.lines)
    return {"line": text, "needs": list(writer.needs.values()), "numbers": writer.numbers,
            "lines": len(problem.call.lines), "stand_ins": list(problem.call.stand_ins),
            "folded": writer.numbers > SNIPPET_INLINE_NUMBERS, "any_values": writer.built}


def any_values(shape: tuple[int, ...], dtype: str) -> str:
    """A line that builds an array of this shape and dtype (random floats; zeros of an integer or boolean dtype)."""
    shape_text = repr(tuple(shape))
    if dtype.startswith("float"):
        built = f"np.random.default_rng(0).standard_normal({shape_text})"
        return built if dtype == "float64" else f"{built}.astype(np.{dtype})"
    return f"np.zeros({shape_text}, dtype=np.{dtype})"


class _Writer:
    """Writes the lines of one reproduction, counting the numbers it writes and naming what it does not; with
    `any_values`, each array built from its shape (`built`: whether one was)."""

    def __init__(self, shown: list, any_values: bool = False):
        self.shown, self.needs, self.numbers = shown, {}, 0
        self.any_values, self.built = any_values, False

    def line(self, line: Line) -> str:
        if isinstance(line, Setting):
            return f"{line.target} = {self.argument(line.value)}"
        if isinstance(line, Reading):
            return line.target
        arguments = [self.argument(a) for a in line.args] + [f"{k}={self.argument(v)}" for k, v in line.kwargs.items()]
        return (f"{line.assign} = " if line.assign else "") + f"{line.function}({', '.join(arguments)})"

    def argument(self, value: Argument) -> str:
        if isinstance(value, Seeded):
            return f"np.random.default_rng({value.seed})"
        if isinstance(value, Zeros):
            return f"np.zeros({value.shape})" if value.dtype == "float64" else \
                f"np.zeros({value.shape}, dtype=np.{value.dtype})"
        if isinstance(value, Unshown):
            self.needs.setdefault(value.name, {"name": value.name, "what": value.what})
            return value.name
        if not isinstance(value, InputArray):
            return repr(value)
        if self.any_values:
            self.built = True
            return any_values(value.shape, value.dtype)
        if value.place < len(self.shown) and self.shown[value.place] is not None:
            self.numbers += int(np.size(self.shown[value.place]))
            return array_text(self.shown[value.place], value.dtype)
        name = f"input{value.place + 1}"
        self.needs.setdefault(name, {"name": name, "shape": value.shape, "dtype": value.dtype, "what": None})
        return name


# A span a note quotes code in: `...` on one line. Linear: no backtracking past a backtick or a line's end.
CODE_SPAN = re.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> list[tuple[bool, str]]:
    """A note's sentence as (is code, text) pieces, each backticked span a code piece without its backticks; the
    template sets a code piece in <code> and escapes every piece (it can quote the student's own text)."""
    return [(place % 2 == 1, piece) for place, piece in enumerate(CODE_SPAN.split(str(text))) if piece]


# Where an identifier may wrap, its parts staying whole: after _ - . @ /, and between a lower and an upper case letter.
NAME_BREAKS = re.compile(r"(?<=[_\-.@/])|(?<=[a-z])(?=[A-Z])")


def name_parts(text: str) -> list[str]:
    """A student's id, a name, an assignment or an answer cell as the parts a narrow column may wrap it between
    (NAME_BREAKS; the template puts a <wbr> there and escapes each part): it wraps 'student_with_a_long_id' and
    'LearnedPositionalEncoding' at their parts, never 'checkraise' inside a word (the page breaks a word only where
    it overflows on its own)."""
    return NAME_BREAKS.split(str(text))


TEMPLATES = pathlib.Path(__file__).parent / "templates"
ENVIRONMENT = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                                 autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                                 lstrip_blocks=True)
ENVIRONMENT.filters.update(g=number, arrays=arrays, snippet=snippet, code_spans=code_spans, name_parts=name_parts)


def render(name: str, **context) -> str:
    return ENVIRONMENT.get_template(name).render(**context)
