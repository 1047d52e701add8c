"""The judge's work per notebook done once: cells of plain Python are not tokenised for magics, references and inputs
are computed once and handed out read-only (a judge that writes to them raises instead of spoiling the next
notebook), observations are not copied for each judge."""
import ast
import pathlib

import nbformat

from posenc_autograder.probes import magics

ROOT = pathlib.Path(__file__).resolve().parents[2]


class NoTransformer:
    def __init__(self):
        raise AssertionError("the cell was handed to IPython's transformer")


def test_plain_python_with_a_percent_or_a_bang_is_not_tokenised(monkeypatch):
    import IPython.core.inputtransformer2 as transformer
    monkeypatch.setattr(transformer, "TransformerManager", NoTransformer)
    assert magics.skipped_in("if a != b:\n    print('%d of 3' % a)\n") == []
    assert magics.skipped_in("x = 1\nget_ipython().system('ls')  # 5 % 3\n") == [magics.Skipped("!", 2)]


def test_a_skipped_line_after_blank_lines_is_named_by_its_own_line():
    # IPython drops a cell's leading blank lines before reading it: the line named is still the cell's own
    assert magics.skipped_in("\n\n!ls\nx = 1\n") == [magics.Skipped("!", 3)]
    assert magics.skipped_in("\n  \n%pip install torch\n") == [magics.Skipped("%pip", 3)]


SPECIAL_FORMS = ["x = 1\n", "if a != b:\n    !ls\n", "x = !ls\n", "y = %time 1\n", "np.mean?\n", "/print 1\n",
                 ",f a b\n", ";f a\n", "%%capture out\nprint(1)\n", "%%bash\nls\n", "%%time\nx?\n", "foo(\n",
                 "s = '%d' % 3\n", "get_ipython().system('ls')\n", "'''\n%pip install x\n'''\n", "x = (1\n%2)\n",
                 "In [1]: get_ipython().system('ls')\n", "%sx ls\n", "%conda install x\n", "a = 1 if b != 2 else 3\n",
                 "\uff47et_ipython().system('ls')\n", "print(f'{x!r} {y % 2}')\n", "%matplotlib inline\nx = 1 % 2\n"]


def _as_ipython_alone(source: str) -> list:
    """What IPython's own reading of the cell holds (the rule before plain Python skipped the transformer)."""
    from IPython.core.inputtransformer2 import TransformerManager
    try:
        tree = ast.parse(TransformerManager().transform_cell(source))
    except (SyntaxError, ValueError):
        return []
    found = {magics._ipython_call(node) for node in ast.walk(tree)} - {None}
    return sorted((s.magic for s in found))


def test_every_course_cell_reads_as_ipython_reads_it():
    cells = [c.source for folder in ("solutions", "exercises") for path in sorted((ROOT / folder).glob("*/*.ipynb"))
             for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert len(cells) > 50
    for source in cells + SPECIAL_FORMS:
        assert sorted(s.magic for s in magics.skipped_in(source)) == _as_ipython_alone(source), source
