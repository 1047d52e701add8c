"""The cells the grader's release wrote, compiled once in the warm zygote instead of in every job.

Most of a notebook is the release's own text (the imports, the self-check helpers, every visible check), and IPython
transforms, parses and compiles each cell again in every job: a fifth of a solved notebook's CPU in the sandbox.
The zygote learns those texts (the grader sends them: the release's own cells, never a student's) before it forks
a job, and the job's shell gets, for a cell that is one of them byte for byte, what IPython itself would make of it:
the same transformed text, the same tree and the same code objects (compile()'s, made under the same flags and
mode, with the cell's own file name set on them, so tracebacks, line numbers and linecache read as they do in
Jupyter). A cell the zygote did not learn, a transformer or AST transformer a cell added, other compiler flags (a
__future__ import), another mode, or a text whose compiling warned (the warning must show in the job) all go
through IPython as before.

The zygote also reads each learned cell as a traceback reads it (stack_data's Source: the text parsed, its tree walked
and split into pieces, ~16 ms for the release's 14 kB helpers cell): a failing cell's traceback shows the frames of the
release's cells it passed through, and a job hands stack_data a copy named after the job's cell (what stack_data would
build from the same file name and lines) instead of reading the cell again. Its tokens are left to the job that needs
them (a traceback in colour): kept, they would be four times the memory (~10 MB for four assignments' cells).
"""
from __future__ import annotations
import __future__

import ast
import copy
import inspect
import linecache
import os
import types
import warnings
from typing import Any

from IPython.core.compilerop import CachingCompiler

# inspect.getmodule's answer for a cell's file: a name no module has, so it answers None, as its walk would
NO_MODULE = "<a notebook cell>"
LEARNED_FILE = "<learned cell>"        # the file name compiled under; each job's code gets its cell's own
MAX_LEARNED_CHARACTERS = 512 * 1024    # of source, all cells together: what the zygote holds stays bounded
FEATURES = [getattr(__future__, name) for name in __future__.all_feature_names]    # as codeop.Compile reads them


def transformers(shell) -> tuple:
    """What IPython's static transform of a cell depends on: the transformers in place (a cell may add its own)."""
    manager = shell.input_transformer_manager
    return (manager, tuple(manager.cleanup_transforms), tuple(manager.line_transforms),
            tuple(manager.token_transformers), manager.do_token_transforms, tuple(shell.input_transformers_post))


def static_transform(shell, raw: str) -> str:
    """IPython's transform_cell without its dynamic part (a one-line cell's prefilter, which reads the namespace)."""
    lines = shell.input_transformer_manager.transform_cell(raw).splitlines(keepends=True)
    for transform in shell.input_transformers_post:
        lines = transform(lines)
    return "".join(lines)


def named(code: types.CodeType, filename: str) -> types.CodeType:
    """The code, and every code object inside it, as compile() makes it under `filename`."""
    consts = tuple(named(c, filename) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


class KnownCells(CachingCompiler):
    """IPython's compiler (the shell's `compile`), holding what learn() made of the release's cells."""

    def __init__(self):
        super().__init__()
        self.shell = None                  # the shell compiling: its transformers decide whether a kept text holds
        self.transforms: tuple | None = None                      # transformers() when the cells were learned
        self.transformed: dict[str, str] = {}                     # raw cell of several lines -> its static transform
        self.trees: dict[tuple[str, int], ast.Module] = {}        # (transformed cell, flags) -> its tree
        self.codes: dict[tuple[int, str, int], types.CodeType] = {}   # (id of a kept node, mode, flags) -> code
        self.seen: set[str] = set()
        self.characters = 0
        self.read: dict[str, tuple[tuple[str, ...], Any]] = {}  # transformed cell -> (its lines, stack_data's Source)

    def learn(self, raw: str) -> None:
        """Transform, parse and compile a cell of the release as a job's shell would (flags as the shell was made, the
        last statement also in 'single' mode when it is an expression); nothing is kept if any step fails or warns."""
        if not isinstance(raw, str) or raw in self.seen or self.characters + len(raw) > MAX_LEARNED_CHARACTERS:
            return
        self.seen.add(raw)
        self.characters += len(raw)
        shell, parse_flags = self.shell, self.flags
        run_flags = parse_flags | (ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if shell.autoawait else 0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                cell = static_transform(shell, raw)
                tree = compile(cell, LEARNED_FILE, "exec", parse_flags | ast.PyCF_ONLY_AST, True)
                codes = {}
                for index, node in enumerate(tree.body):
                    codes[(id(node), "exec", run_flags)] = compile(ast.Module([node], []), LEARNED_FILE, "exec",
                                                                  run_flags, True)
                    if index == len(tree.body) - 1 and isinstance(node, ast.Expr):
                        codes[(id(node), "single", run_flags)] = compile(ast.Interactive([node]), LEARNED_FILE,
                                                                        "single", run_flags, True)
            except Exception:  # noqa: BLE001 - a cell that does not compile is compiled in the job, as IPython does
                return
        if caught:
            return
        if self.transforms is None:
            self.transforms = transformers(shell)
        if len(cell.splitlines()) != 1 and self.transforms == transformers(shell):
            self.transformed[raw] = cell
        self.trees[(cell, parse_flags)] = tree
        self.codes.update(codes)
        if cell not in self.read:
            try:
                self.read[cell] = read_as_traceback(cell)
            except Exception:  # noqa: BLE001 - stack_data reads the cell in the job instead, as it does unlearned
                pass

    def cache(self, transformed_code: str, number: int = 0, raw_code: str | None = None) -> str:
        """IPython's cell file (its name and lines in linecache), known to be no module's file, and for a learned cell
        stack_data's reading of it under that name, as stack_data would make it from those lines."""
        name = super().cache(transformed_code, number, raw_code)
        # No module's file: inspect.getmodule, asked by a traceback for each of the cell's frames, would otherwise walk
        # every loaded module each time to find none (~0.3 ms; ~500 page faults of the zygote's pages the first time)
        inspect.modulesbyfile.setdefault(os.path.normcase(os.path.abspath(name)), NO_MODULE)
        lines, source = self.read.get(transformed_code, ((), None))
        entry = linecache.cache.get(name)
        if source is not None and entry is not None and tuple(entry[2]) == lines:
            named_source = copy.copy(source)
            named_source.filename = name
            type(source)._class_local("__source_cache_with_lines", {})[(name, lines)] = named_source
        return name

    def transform(self, raw: str) -> str | None:
        """The kept static transform of a raw cell, while the shell's transformers are those it was made with."""
        cell = self.transformed.get(raw)
        return cell if cell is not None and self.shell is not None and transformers(self.shell) == self.transforms \
            else None

    def ast_parse(self, source: str, filename: str = "<unknown>", symbol: str = "exec") -> ast.AST:
        tree = self.trees.get((source, self.flags)) if self.trees and symbol == "exec" and self.shell is not None \
            and not self.shell.ast_transformers else None
        if tree is None:
            return super().ast_parse(source, filename, symbol)
        return ast.Module(list(tree.body), list(tree.type_ignores))      # a list of its own: IPython may append to it

    def __call__(self, source, filename, symbol, **kwargs):
        if not kwargs and type(source) in (ast.Module, ast.Interactive) and len(source.body) == 1:
            code = self.codes.get((id(source.body[0]), symbol, self.flags))
            if code is not None:
                for feature in FEATURES:                # what codeop.Compile remembers of the code it compiled
                    if code.co_flags & feature.compiler_flag:
                        self.flags |= feature.compiler_flag
                return named(code, filename)
        return super().__call__(source, filename, symbol, **kwargs)


def read_as_traceback(cell: str) -> tuple[tuple[str, ...], Any]:
    """The cell's lines as IPython puts them in linecache, and stack_data's Source of them with the pieces a traceback
    asks of it already made. stack_data is imported here, in the zygote: a fresh interpreter's job
    learns nothing."""
    import stack_data

    lines = tuple(line + "\n" for line in cell.splitlines())     # CachingCompiler.cache's entry
    source = stack_data.Source(LEARNED_FILE, lines)
    if source.tree is not None:
        source.pieces  # noqa: B018 - cached on the source, as a traceback makes them
    return lines, source
