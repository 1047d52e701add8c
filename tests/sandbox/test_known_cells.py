"""The release's own cells, compiled once by the warm zygote (probes/known_cells.py): a job runs them as IPython runs
them, whatever came before (a __future__ import, an AST transformer, a magic, a syntax warning), and only the release's
text is ever sent to the zygote, which every job shares."""
import nbformat

from posenc_autograder.grading.pipeline import probe_files, release_cells
from posenc_autograder.probes import codec
from posenc_autograder.sandbox import supervisor, warm
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=30, notebook_seconds=90)

CELLS = [
    "import numpy as np\nx = np.arange(3)\nx.sum()",
    "def f(a):\n    b = a + 1\n    raise ValueError(f'boom {b}')\n",
    "y = 1\nf(y)",
    "print(y is 1)\ny",
    "%%capture captured\nprint('hidden')",
    "print(repr(captured.stdout))\nz = 2\n%who_ls",
    "import ast\nclass Twice(ast.NodeTransformer):\n    def visit_Constant(self, node):\n"
    "        return ast.Constant(node.value * 2) if type(node.value) is int else node\n"
    "get_ipython().ast_transformers.append(Twice())",
    "print(20 + 1)",
    "get_ipython().ast_transformers.clear()\nprint(20 + 1)",
    "from __future__ import annotations\ndef g(a: undefined_name):\n    pass\nprint(g.__annotations__)",
    "def h(a: also_undefined):\n    pass\nprint(h.__annotations__)",
    "def broken(:\n    pass",
    "print(20 + 1)",
]
LEARNED = "c = get_ipython().compile\nprint(sorted(text for text, _ in c.trees if 'boom' in text))"


def _outputs(cells, release):
    notebook = [{"cell_type": "code", "source": source} for source in cells]
    outcome = supervisor.run_job(notebook, codec.frame({}), [], probe_files(), LIMITS, release_cells=release)
    assert outcome.finished, (outcome.events, outcome.log_tail)
    return {i: record["outputs"] for i, record in sorted(outcome.outputs.items())}


def test_a_release_cell_runs_in_a_warm_job_as_ipython_runs_it(monkeypatch):
    """Every cell sent as the release's: the outputs (tracebacks with their cells and lines, a warning, magics, what
    a __future__ import or an AST transformer changes) are those of a fresh interpreter, which learns nothing."""
    warm_outputs = _outputs(CELLS, list(range(len(CELLS))))
    assert warm.status().startswith("a warm interpreter"), warm.status()
    learned = _outputs([CELLS[1], LEARNED], [0])
    assert learned[1][0]["text"] == repr([CELLS[1]]) + "\n"          # the zygote compiled it before the job
    monkeypatch.setenv(warm.SWITCH, "0")
    assert _outputs(CELLS, list(range(len(CELLS)))) == warm_outputs
    assert "Cell In[3], line 2" in warm_outputs[2][0]["text"] and "----> 3     raise" in warm_outputs[2][0]["text"]
    assert "SyntaxWarning" in str(warm_outputs[3]) and "'hidden" in str(warm_outputs[5])
    # the transformer is in force for the cell that clears it; the same text learned runs as written once it is gone
    assert [o[0]["text"] for o in (warm_outputs[7], warm_outputs[8], warm_outputs[12])] == ["42\n", "42\n", "21\n"]
    assert "also_undefined" in str(warm_outputs[10]) and "SyntaxError" in str(warm_outputs[11])


def test_only_the_releases_own_cells_are_sent_to_the_zygote():
    """A cell is sent only when its text is one of the release's code cells, byte for byte: a student's answer, a cell
    the student added or a markdown cell never is (the zygote's memory is in every job)."""
    release = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np"),
                                              nbformat.v4.new_code_cell("def f():\n    raise NotImplementedError()"),
                                              nbformat.v4.new_markdown_cell("print('text')")])
    assembled = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import numpy as np"),
                                                nbformat.v4.new_code_cell("def f():\n    return 1"),
                                                nbformat.v4.new_code_cell("print('text')"),
                                                nbformat.v4.new_markdown_cell("import numpy as np"),
                                                nbformat.v4.new_code_cell("import numpy as np ")])
    assert release_cells(release, assembled) == (0,)


COUNT_READINGS = ("import stack_data\nread = []\nreading = stack_data.Source.__init__\n"
                  "def counted(self, filename, lines):\n    read.append(filename)\n    reading(self, filename, lines)\n"
                  "stack_data.Source.__init__ = counted")


def test_a_traceback_through_release_cells_reads_none_of_them_again_in_a_warm_job(monkeypatch):
    """A failing cell's traceback through the release's cells (a call into a learned helper) takes stack_data's reading
    of them from the zygote, named after the job's cells, instead of parsing and tokenising them again: the same text
    as a fresh interpreter's, which reads both."""
    cells = [COUNT_READINGS, CELLS[1], CELLS[2], "print(read)"]
    warm_outputs = _outputs(cells, [1, 2])
    assert warm.status().startswith("a warm interpreter"), warm.status()
    assert warm_outputs[3][0]["text"] == "[]\n"
    monkeypatch.setenv(warm.SWITCH, "0")
    fresh_outputs = _outputs(cells, [1, 2])
    assert fresh_outputs[3][0]["text"].count("<ipython-input-") == 2
    assert warm_outputs[2] == fresh_outputs[2] and "----> 3     raise" in warm_outputs[2][0]["text"]


COUNT_SCANS = ("import inspect, sys\ncalls = []\ncounting = inspect.ismodule\n"
               "inspect.ismodule = lambda value: calls.append(1) or counting(value)\n"
               "def f(a):\n    b = a + 1\n    raise ValueError(f'boom {b}')\n")
SCANS_AND_TEXT = """
inspect.ismodule = counting
tb = get_ipython().InteractiveTB


def formatted():
    tb.remembered = None
    return tb.structured_traceback(sys.last_type, sys.last_value, sys.last_traceback)


found = formatted()
for name in [name for name in inspect.modulesbyfile if '<ipython-input-' in name]:
    del inspect.modulesbyfile[name]
print(len(calls) < len(sys.modules), found == formatted(), len(found))
"""


def test_a_cells_traceback_asks_no_scan_of_every_module_for_its_frames():
    """inspect.getmodule, asked by a traceback for each frame of a cell (a file of no module), walks every loaded module
    (a copy of sys.modules, each module's __file__: ~2 ms and ~500 page faults of the zygote's pages the first time in
    a job, ~0.3 ms each time after, a few times a frame); the cell's file is known to be no module's when the cell is
    compiled, so it answers at once, None as before, and the traceback's text is the one the walk gives (on the old
    code the walk ran: ismodule asked once a module, each time). An untouched notebook's job: 0.070 -> 0.067 CPU-s."""
    outputs = _outputs([COUNT_SCANS, "f(1)", SCANS_AND_TEXT], [])
    assert "----> 7     raise ValueError" in outputs[1][0]["text"]
    scanned_not, same_text, lines = outputs[2][0]["text"].split()
    assert (scanned_not, same_text) == ("True", "True") and int(lines) > 0
