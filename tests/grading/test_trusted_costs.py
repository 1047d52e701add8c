"""The trusted side's work per notebook, each piece done once and only where it can matter: cells with no magic are
not parsed for magics, both rounding grids of an answer come from its floats' bits, the evidence file is
encoded without copying the records it keeps, and the grader's own numpy runs single-threaded."""
import copy
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from posenc_autograder.probes import magics
from posenc_autograder.records import evidence


class NoTransformer:
    def __init__(self):
        raise AssertionError("the cell was handed to IPython's transformer")


def test_a_cell_without_escapes_is_not_tokenised(monkeypatch):
    import IPython.core.inputtransformer2 as transformer
    monkeypatch.setattr(transformer, "TransformerManager", NoTransformer)
    assert magics.skipped_in("import numpy as np\ndef f(x):\n    return x * 2  # no magic here\n") == []


class CountedPattern:
    def __init__(self, pattern):
        self.pattern, self.scanned = pattern, []

    def search(self, source):
        self.scanned.append(source)
        return self.pattern.search(source)

    def finditer(self, source):
        return self.pattern.finditer(source)


def test_a_cell_with_neither_escape_character_is_not_scanned_for_escapes(monkeypatch):
    """The escape pattern is tried at every character of a cell it scans: a cell with no `%` and no `!` cannot match
    it (the old code scanned every cell of every notebook stored)."""
    counted = CountedPattern(magics.MAY_ESCAPE)
    monkeypatch.setattr(magics, "MAY_ESCAPE", counted)
    assert magics.skipped_in("import numpy as np\ndef f(x):\n    return x * 2  # no magic here\n") == []
    assert counted.scanned == []
    assert magics.skipped_in("print('%d' % 3)\n") == [] and counted.scanned == ["print('%d' % 3)\n"]
    assert magics.skipped_in("if 1 != 2:\n    !ls\n") == [magics.Skipped("!", 2)]


def test_cells_that_may_hold_a_skipped_call_are_still_read():
    assert magics.skipped_in("if 1 != 2:\n    !ls\n") == [magics.Skipped("!", 2)]
    assert magics.skipped_in("x = 1\nget_ipython().system('ls')\n") == [magics.Skipped("!", 2)]
    # Python reads a fullwidth letter as its plain one: this is get_ipython().system, and it is skipped too
    assert magics.skipped_in("\uff47et_ipython().system('ls')\n") == [magics.Skipped("!", 1)]
    assert magics.skipped_in("%pip install torch\n") == [magics.Skipped("%pip", 1)]


def _grid(array, middle):
    """One grid's rounding as the evidence defines it, in arithmetic: KEPT_BITS significant bits, to the nearest (ties
    away from zero) or to the middle of the step the value lies in; tiny values as zero, NaN and infinities as they
    are."""
    array = np.where(np.abs(array) < 1e-300, 0.0, array)
    mantissa, exponent = np.frexp(array)
    steps = np.abs(mantissa) * 2.0 ** evidence.KEPT_BITS
    steps = np.floor(steps) + 0.5 if middle else np.floor(steps + 0.5)
    kept = np.ldexp(np.sign(mantissa) * steps, exponent - evidence.KEPT_BITS)
    return np.where(np.isnan(array), np.nan, np.where(np.isfinite(array), kept, array))


EDGES = np.array([np.nan, np.inf, -np.inf, 2.2250738585072014e-300, 1.7976931348623157e308,
                  -1.7976931348623157e308, 1.0, 0.5, 1 - 2 ** -53, 1 - 2 ** -25, 1 + 2 ** -24, 3.0, -7.5e200,
                  -(1 + 3 * 2 ** -24), float.fromhex("0x1.fffffe8p+0"), float.fromhex("0x1.fffffffp-3")])


@pytest.mark.parametrize("values", [EDGES, np.random.default_rng(0).normal(size=(40, 7)) * 1e5,
                                    np.float64(-2.5), np.array(4.0), np.zeros((0, 3))],
                         ids=["edges", "table", "number", "0-d", "empty"])
def test_both_grids_round_as_their_arithmetic_says(values):
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):
        for middle, rounded in zip((False, True), evidence._rounded(values), strict=True):
            alone = np.ravel(_grid(values, middle))
            assert rounded.view(np.float64).tobytes() == alone.tobytes(), middle


def test_zero_and_nan_have_one_rounding_each():
    zeros = evidence._rounded(np.array([0.0, -0.0, 1e-301, -5e-324]))
    nans = evidence._rounded(np.array([np.nan, -np.nan, np.frombuffer(np.uint64(0x7FF0000000000001).tobytes())[0]]))
    assert all(len(set(grid.tolist())) == 1 for grid in zeros + nans)


def test_an_answers_floats_are_rounded_on_their_bits_and_hashed_with_sha256(monkeypatch):
    digested = []
    real = evidence.hashlib.sha256
    monkeypatch.setattr(evidence.np, "frexp", lambda array: pytest.fail("the floats were split"))
    monkeypatch.setattr(evidence.hashlib, "sha256", lambda: digested.append(1) or real())
    keys = evidence.answer_keys({"value": np.linspace(0, 1, 50), "scale": 2.0})
    assert len(keys) == 2 and len(digested) == 2 and evidence.KEY_FORMAT.startswith("sha256")


def test_the_evidence_file_is_written_without_copying_its_records(tmp_path, monkeypatch):
    table = np.arange(12.0).reshape(3, 4)
    kept = evidence.Evidence("s", "a", "n", 2 ** 60 + 1, "code", [evidence.Answer("t", "/v", ["k", "l"], True, "d")],
                             {"t": ["k"]}, {"t": {"observations": {"v": {"value": table}, "n": [1, "x", None]}}})

    def no_copy(*args, **kwargs):
        raise AssertionError("a record was copied to be written")

    monkeypatch.setattr(copy, "deepcopy", no_copy)
    evidence.write(tmp_path / "s.npz", kept)
    monkeypatch.undo()
    back = evidence.read(tmp_path / "s.npz")
    assert back.variant == kept.variant and back.answers == kept.answers and back.own_keys == kept.own_keys
    assert np.array_equal(back.own_failing["t"]["observations"]["v"]["value"], table)
    assert back.own_failing["t"]["observations"]["n"] == [1, "x", None]


def _blas_threads(**env) -> str:
    code = "import os, posenc_autograder; print(os.environ['OPENBLAS_NUM_THREADS'])"
    clean = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    return subprocess.run([sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_graders_numpy_is_single_threaded_unless_told_otherwise():
    assert _blas_threads() == "1"
    assert _blas_threads(OPENBLAS_NUM_THREADS="2") == "2"


def test_a_jobs_notebook_is_not_cut_into_pieces_for_its_secrets(monkeypatch):
    from posenc_autograder.grading import execute
    cut = []
    real = execute._pieces
    monkeypatch.setattr(execute, "_pieces", lambda text: cut.append(text) or real(text))
    grader = execute.code_only("def probe(ns, data):\n    return attempt(ns['f'], data['secret_offset_for_all'])\n")
    public = "def f(x):\n    return x\n" * 500 + "attempt(ns['f'], data['secret_offset_for_all'])"
    secrets = execute.secret_windows(grader, public)
    assert public not in cut
    rng = np.random.default_rng(3)
    text = grader + public
    for start in rng.integers(0, len(text) - execute.QUOTE_WINDOW, 300):        # the old rule: every public piece out
        piece = text[start:start + execute.QUOTE_WINDOW]
        assert (piece in secrets) == (piece in real(grader) - real(public)), piece


TRANSFORM_SCRIPT = r"""
import json, pathlib, sys
import nbformat
from IPython.core import inputtransformer2
from posenc_autograder.probes.shell_runner import kernel_shell
shell = kernel_shell()
manager = shell.input_transformer_manager
cells = [c.source for path in sorted(pathlib.Path(sys.argv[1]).glob("*/*.ipynb"))
         for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
cells += ["x = 1\n", "  x = 1\n  y = 2\n", "if a != b:\n    !ls\n", "x = !ls\n", "y = %time 1\n", "np.mean?\n",
          "/print 1\n", ",f a b\n", ";f a\n", "%%capture out\nprint(1)\n", "%%time\nx?\n", "foo(\n", "\tx=1\n y=2\n",
          "x = 1 \\\n", "x is 1\n", "async def f():\n    await g()\n", "await g()\n", "print 'hi'\n", "s = '%d' % 3\n",
          "get_ipython().system('ls')\n", "'''\n%pip install x\n'''\n", "# a comment only\n", "\n\n\nx = 1\n",
          "x = (1\n%2)\n", "f(a\n    , b)\n", "f(a\n, b\n; c)\n", "a = 1\x0c,f x\n", "a = 1\x0b/f x\n",
          "x = 1 \\\n,f a\n", "if a != b:\n    print('%d of 3' % a)\n", "print(f'{x!r} {y % 2}')\n",
          "s = 'why?'  # or not?\n", "x = 1\n  ;f a\n", "def f(:\n    return a != b\n", "x = 1\n/f x\n"]


def transformed(cell):
    try:
        return shell.transform_cell(cell)
    except Exception as exc:
        return repr(exc)


different = []
for cell in cells:
    fast = transformed(cell)
    manager.do_token_transforms = lambda lines: type(manager).do_token_transforms(manager, lines)   # IPython's own
    full = transformed(cell)
    if fast != full:
        different.append(cell)
tokenised = []
real = inputtransformer2.make_tokens_by_line
inputtransformer2.make_tokens_by_line = lambda lines: tokenised.append(1) or real(lines)
shell = kernel_shell.__globals__["KernelShell"].clear_instance() or kernel_shell()     # the runner's own again
shell.transform_cell("import numpy as np\ndef f(x):\n    return np.sin(x) * 2\n")
plain = len(tokenised)
shell.transform_cell("%time y = 1\n")
magic = len(tokenised) - plain
shell.transform_cell("if a != b:\n    print('%d of %d?' % (a, b))  # !\n")
python_with_marks = len(tokenised) - plain - magic
print(json.dumps({"different": different, "plain": plain, "magic": magic, "python_with_marks": python_with_marks,
                  "cells": len(cells)}))
"""


def shell_script_findings(script: str, home: pathlib.Path) -> dict:
    """What a script comparing our shell with IPython's prints last, run in a fresh process (the shell is a
    singleton) on every cell of the solutions."""
    root = pathlib.Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", script, str(root / "solutions")], cwd=home, capture_output=True,
                         text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_shell_tokenises_only_cells_ipython_would_change(tmp_path):
    """In a fresh process (the shell is a singleton): every code cell of the solutions and a set of IPython's special
    forms and broken cells transform exactly as IPython alone transforms them; a cell of plain Python is not
    tokenised, nor one that parses as Python with `!=`, `%` or `?` in it."""
    found = shell_script_findings(TRANSFORM_SCRIPT, tmp_path)
    assert found["cells"] > 50 and found["different"] == [], found
    assert found["plain"] == 0 and found["magic"] > 0 and found["python_with_marks"] == 0, found


ASYNC_SCRIPT = r"""
import json, pathlib, sys
import nbformat
from IPython.core import async_helpers, interactiveshell
from IPython.core.interactiveshell import InteractiveShell
from posenc_autograder.probes.shell_runner import kernel_shell
shell = kernel_shell()
cells = [c.source for path in sorted(pathlib.Path(sys.argv[1]).glob("*/*.ipynb"))
         for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
cells += ["await g()\n", "x = await g()\n", "async def f():\n    await g()\n", "async with a as b:\n    pass\n",
          "async for x in y:\n    pass\n", "[x async for x in y]\n", "(await x for x in y)\n", "await\n", "return 1\n",
          "def f(:\n", "if True:\n    await g()\n", "print('await')\n", "# async\nx = 1\n", "asyncio = 1\n"]
compiled = []
real = async_helpers._should_be_async
interactiveshell._should_be_async = lambda cell: compiled.append(cell) or real(cell)
different = []
for cell in cells:
    transformed = shell.transform_cell(cell)
    ours = shell.should_run_async(cell, transformed_cell=transformed)
    ipython = InteractiveShell.should_run_async(shell, cell, transformed_cell=transformed)
    if ours != ipython:
        different.append(cell)
compiled.clear()
shell.should_run_async("x = 1\n", transformed_cell="x = 1\n")
plain = len(compiled)
print(json.dumps({"different": different, "plain": plain, "cells": len(cells),
                  "async": sum(shell.should_run_async(c, transformed_cell=shell.transform_cell(c)) for c in cells)}))
"""


def test_a_cell_that_cannot_await_is_not_compiled_to_ask_whether_it_awaits(tmp_path):
    """IPython compiles every cell once more to ask whether it must run as a coroutine: the shell answers as IPython
    does for every solution cell and the async forms, and compiles nothing for a cell without `await` or `async`."""
    found = shell_script_findings(ASYNC_SCRIPT, tmp_path)
    assert found["cells"] > 50 and found["different"] == [] and found["async"] >= 6, found
    assert found["plain"] == 0, found
