"""Which IPython magics run in the grader, and where a cell uses one that does not.

The shell runner (sandbox side) replaces every magic outside RUNS with one that does nothing, and refuses
`!cmd` shell escapes the same way, so the rest of the cell still runs; the trusted side reads the same
rule from the cell's own source (skipped_in) to tell the student which line was skipped. Nothing crosses
from the sandbox for this: both sides apply one rule to text the trusted side already has.
"""
from __future__ import annotations

import ast
import dataclasses
import re

# Magics a notebook uses for its own computation or display, harmless in a sandbox without a network,
# a terminal, a GUI or the student's files: everything else (package installs, shell commands, other
# interpreters, files read from or written to the student's machine) is skipped.
RUNS = {
    "line": frozenset({
        "matplotlib", "pylab", "time", "timeit", "prun", "precision", "config", "who", "whos", "who_ls", "reset",
        "reset_selective", "xdel", "pprint", "xmode", "colors", "pdb", "automagic", "autocall", "doctest_mode",
        "lsmagic", "magic", "quickref", "pinfo", "pinfo2", "pdef", "pdoc", "psource", "psearch", "load_ext",
        "reload_ext", "unload_ext", "autoreload", "aimport", "env", "pwd", "history", "hist", "tb",
        "alias_magic", "page"}),
    "cell": frozenset({"time", "timeit", "capture", "prun", "writefile", "html", "HTML", "markdown", "latex",
                       "svg", "javascript", "js"}),
}
# The cell magics that run the cell's code in the notebook's namespace, keeping what it defines. Any other cell magic
# keeps nothing the cell defines, in Jupyter as in the grader: %%timeit runs it in a scope of its own, %%writefile
# writes it to a file, %%html and the like show it, a skipped one does nothing.
KEEPS_DEFINITIONS = frozenset({"time", "capture", "prun"})
KEPT_NOTHING_BECAUSE = {"timeit": "runs it in a scope of its own (to time it)",
                        "writefile": "writes it to a file instead of running it",
                        "file": "writes it to a file instead of running it"}
SHELL_ESCAPES = ("system", "getoutput")          # `!cmd` and `x = !cmd`, as IPython's transformer writes them
# Every skipped use is written out as a get_ipython() call, or with an escape IPython turns into one: `%` or `!` where a
# line starts (after indentation or a prompt it strips: `In [1]: `, `>>> `, `...: `) or after an assignment's `=`. A
# cell with neither (and only ASCII, since Python reads a fullwidth `ｇet_ipython` as get_ipython) has nothing to skip,
# so most cells (`!=`, `%` formatting) are neither tokenised nor parsed at all.
# Blanks after a line start stop at its end (a line of blanks then `%` starts a line of its own): a blank run that
# crossed lines was scanned again from every line start in it, the square of a cell of empty lines.
MAY_ESCAPE = re.compile(r"(?:^|\n)[^\S\n]*[%!]|[=>:]\s*[%!]")
# IPython rewrites one escape at a time and tokenises the whole cell again after each (giving up after 500), at a few
# microseconds a character: cells are read as IPython while their lengths times their escapes stay under this, in all
# (one notebook's; an honest cell of 10,000 characters and two magics takes 30,000 of it).
TRANSFORM_BUDGET = 200_000


def may_escape(source: str) -> bool:
    """MAY_ESCAPE found in the cell; one with neither `%` nor `!` (most cells) is not scanned: a pattern that may start
    anywhere is tried at every character (a millisecond and more a notebook, every notebook stored)."""
    return ("%" in source or "!" in source) and MAY_ESCAPE.search(source) is not None


class TransformBudget:
    """What reading cells as IPython may still cost (characters times escapes), shared by a notebook's cells."""

    def __init__(self, units: int = TRANSFORM_BUDGET):
        self.left = units

    def take(self, units: int) -> bool:
        if units > self.left:
            return False
        self.left -= units
        return True


@dataclasses.dataclass(frozen=True)
class Skipped:
    """One use of a magic the grader does not run: as written ('%pip', '%%bash', '!'), and its line in the cell."""
    magic: str
    line: int


def runs(kind: str, name: str) -> bool:
    return name in RUNS[kind]


def keeps_nothing(source: str) -> str | None:
    """Why nothing the cell defines is kept, when its first line is a cell magic that keeps nothing (`%%timeit -n1`:
    "its first line, `%%timeit -n1`, runs it in a scope of its own (to time it)"); None for any other cell."""
    first = next((line.strip() for line in source.splitlines() if line.strip()), "")[:80]
    name = first[2:].split(maxsplit=1)[0] if first.startswith("%%") and first[2:].strip() else None
    if name is None or name in KEEPS_DEFINITIONS:
        return None
    return f"its first line, `{first}`, {KEPT_NOTHING_BECAUSE.get(name, 'does not run it as Python')}"


def skipped_in(source: str, budget: TransformBudget | None = None) -> list[Skipped]:
    """Every magic or shell escape in a cell that the grader skips, in order (none for a cell that is not
    valid IPython: it fails in Jupyter too, nor past the budget)."""
    if source.isascii() and "get_ipython" not in source and not may_escape(source):
        return []
    tree: ast.Module | None
    try:
        tree = ast.parse(source)        # plain Python (`!=`, `%` formatting): IPython's transforms leave it as it is
    except (SyntaxError, ValueError):
        tree = _as_ipython_reads(source, budget)
    if tree is None:
        return []
    found = []
    for node in ast.walk(tree):
        used = _ipython_call(node)
        if used is not None and used not in found:
            found.append(used)
    return sorted(found, key=lambda s: s.line)


def _as_ipython_reads(source: str, budget: TransformBudget | None) -> ast.Module | None:
    """The cell as IPython runs it (its escapes written as get_ipython() calls), its lines numbered as in the cell;
    None for a cell that is not valid IPython either."""
    lines = source.splitlines(keepends=True)
    blank = next((i for i, line in enumerate(lines) if line.strip()), len(lines))   # IPython drops leading blank lines
    tree = ipython_tree(source, budget)
    return ast.increment_lineno(tree, blank) if blank and tree is not None else tree


def python_tree(source: str) -> ast.Module | None:
    """The cell's syntax tree when it is plain Python, which IPython's transforms leave as it is (None: it is not)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def ipython_tree(source: str, budget: TransformBudget | None = None) -> ast.Module | None:
    """The cell's syntax tree as IPython reads it (trusted side: a student's cell; IPython only when plain Python
    cannot read it, within the budget); None when it is not valid IPython, or past the budget."""
    tree = python_tree(source)
    if tree is not None:
        return tree
    from IPython.core.inputtransformer2 import TransformerManager  # trusted side only; the shell has it loaded

    escapes = sum(1 for _ in MAY_ESCAPE.finditer(source)) + source.count("get_ipython") + 1
    if not (budget or TransformBudget()).take(len(source) * escapes):
        return None
    try:
        return ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError, RuntimeError, RecursionError, MemoryError):   # RuntimeError: IPython gave up
        return None


def _ipython_call(node) -> Skipped | None:
    """get_ipython().run_line_magic('pip', ...) and friends, when the grader skips them."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Call) and getattr(node.func.value.func, "id", None) == "get_ipython"):
        return None
    method = node.func.attr
    if method in SHELL_ESCAPES:
        return Skipped("!", node.lineno)
    kinds = {"run_line_magic": "line", "run_cell_magic": "cell"}
    if method not in kinds or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    name = str(node.args[0].value)
    if runs(kinds[method], name):
        return None
    return Skipped(("%%" if kinds[method] == "cell" else "%") + name, node.lineno)
