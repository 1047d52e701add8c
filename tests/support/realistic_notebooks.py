"""Notebooks as students really hand them in: magics, plots, helper cells, check lines of their own that raise,
next to correct twins without those habits and realistic mistakes. Built from the released notebook and the
solution at test time. `measure` counts, on this set, what a student should never read (withheld messages,
number dumps, false notes, failures with no named cause): tests/grading/test_kernel_semantics.py checks it and
prints the figures.
"""
from __future__ import annotations

import copy
import dataclasses
import pathlib
import re

import nbformat
from notebook_tools import ROOT

from posenc_autograder.checks import REGISTRY, total_points
from posenc_autograder.course import Course, grade_id
from posenc_autograder.devtools import bench
from posenc_autograder.grading import pipeline
from posenc_autograder.grading.execute import execute_task
from posenc_autograder.intake.submissions import Submission
from posenc_autograder.results import NUMBER, NotebookResult, NoteKind  # NUMBER: a number in prose
from posenc_autograder.settings import Limits

# The grader's own limits: none of these notebooks loops or sleeps, and tighter ones made a cell slowed by a loaded
# machine (8 s of wall time, shared with every other test's processes) a different score.
LIMITS = Limits()


@dataclasses.dataclass(frozen=True)
class Realistic:
    name: str
    assignment: str
    notebook: nbformat.NotebookNode
    score: float | None                  # the fair score (None: whatever its twin without the habit scores)
    twin: str | None = None              # the same notebook without the habit: it must score the same
    note_phrases: tuple[str, ...] = ()   # phrases its notes must contain
    undiagnosable: bool = False          # its bug is no known mistake and has no useful pattern: said plainly


def solved(assignment: str) -> nbformat.NotebookNode:
    return bench.solved(ROOT, assignment)


def edited(nb, cell_id: str, transform) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        if grade_id(cell) == cell_id:
            cell.source = transform(cell.source)
    return nb


def added_after(nb, cell_id: str, *sources: str) -> nbformat.NotebookNode:
    nb = copy.deepcopy(nb)
    index = next(i for i, c in enumerate(nb.cells) if grade_id(c) == cell_id)
    nb.cells[index + 1:index + 1] = [nbformat.v4.new_code_cell(s) for s in sources]
    return nb


def scratch(nb, source: str) -> nbformat.NotebookNode:
    """The template's own scratch cell (no nbgrader metadata), filled in by the student."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Scratch space"))
    cell.source += "\n" + source
    return nb


PLOT = ("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\n"
        "ax.imshow(sinusoidal_positional_encoding(50, 16), aspect='auto')\nplt.show()\n")


def realistic_set() -> list[Realistic]:
    pe, rope, ctx = solved("positional_encoding"), solved("rope_alibi"), solved("context_extension")
    full_pe, full_rope, full_ctx = (total_points(a) for a in ("positional_encoding", "rope_alibi",
                                                              "context_extension"))
    magic_table = edited(pe, "sinusoidal_positional_encoding", lambda s: "%matplotlib inline\n" + s)
    return [
        Realistic("pe_plain", "positional_encoding", pe, full_pe),
        Realistic("pe_matplotlib_inline", "positional_encoding", magic_table, full_pe, "pe_plain"),
        Realistic("pe_plots_and_shell", "positional_encoding",
                  scratch(added_after(magic_table, "sinusoidal_positional_encoding",
                                      "!pip install numpy matplotlib\n%time table = sinusoidal_positional_encoding("
                                      "100, 32)\ndisplay(table.shape)",
                                      "%%capture captured\nprint('quiet')\n" + PLOT),
                          "%matplotlib notebook\n" + PLOT
                          + "files = !ls\n%timeit sinusoidal_positional_encoding(8, 4)"),
                  full_pe, "pe_plain", ("`!pip install numpy matplotlib`", "shell commands do not run")),
        Realistic("pe_bash_cell", "positional_encoding",
                  added_after(pe, "sinusoidal_positional_encoding", "%%bash\nls -la\n"), full_pe, "pe_plain",
                  ("`%%bash`",)),
        Realistic("pe_check_line_raises", "positional_encoding",
                  edited(edited(pe, "SinusoidalPositionalEncoding",
                                lambda s: s + "\n\nprint(encoder.get_encoding(3))   # my own check\n"),
                         "relative_position_matrix", lambda s: s + "\n\nassert relative_position_matrix(None, 1)\n"),
                  full_pe, "pe_plain", ("defined its functions, then line",)),
        Realistic("pe_own_cell_raises", "positional_encoding",
                  added_after(pe, "sinusoidal_positional_encoding",
                              "assert sinusoidal_positional_encoding(3, 4)[1, 0] == 1.0   # my guess at sin(1)"),
                  full_pe, "pe_plain", ("a cell of your own, raised AssertionError", "Run All stops there")),
        Realistic("pe_helper_cells", "positional_encoding",
                  added_after(edited(pe, "sinusoidal_positional_encoding",
                                     lambda s: s.replace("omega = np.exp(-2.0 * i / d_model * np.log(10000.0))",
                                                         "omega = my_frequencies(d_model)")),
                              "self_check_helpers",
                              "def my_frequencies(d_model):\n    i = np.arange(d_model // 2, dtype=np.float64)\n"
                              "    return 10000.0 ** (-2 * i / d_model)\n"),
                  full_pe),
        Realistic("pe_sin_cos_swapped", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         lambda s: s.replace("pe[:, 0::2] = np.sin", "pe[:, 0::2] = np.cos")
                                    .replace("pe[:, 1::2] = np.cos", "pe[:, 1::2] = np.sin")), None),
        Realistic("pe_positions_from_one", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         lambda s: s.replace("np.arange(seq_len, dtype=np.float64)",
                                             "np.arange(1, seq_len + 1, dtype=np.float64)")), None),
        Realistic("pe_float32_module", "positional_encoding",
                  edited(pe, "SinusoidalPositionalEncoding",
                         lambda s: s.replace("self.pe = sinusoidal_positional_encoding(max_seq_len, d_model)",
                                             "self.pe = sinusoidal_positional_encoding(max_seq_len, d_model)"
                                             ".astype(np.float32)")), None),
        Realistic("pe_extra_argument", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         lambda s: s.replace("def sinusoidal_positional_encoding(seq_len, d_model):",
                                             "def sinusoidal_positional_encoding(seq_len, d_model, base):")
                                    .replace("np.log(10000.0)", "np.log(base)")), None),
        Realistic("pe_learned_no_grad_attribute", "positional_encoding",
                  edited(pe, "LearnedPositionalEncoding",
                         lambda s: s.replace("self.grad_embedding", "self.grad_table")), None),
        Realistic("rope_plain", "rope_alibi", rope, full_rope),
        Realistic("rope_matplotlib_inline", "rope_alibi",
                  edited(rope, "rope", lambda s: "%matplotlib inline\nimport matplotlib.pyplot as plt\n" + s),
                  full_rope, "rope_plain"),
        Realistic("ctx_plain", "context_extension", ctx, full_ctx),
        Realistic("ctx_pip_install", "context_extension",
                  edited(ctx, "interpolation", lambda s: "%pip install numpy\n" + s), full_ctx, "ctx_plain",
                  ("`%pip install numpy`",)),
        *new_students(pe, rope, ctx),
        *namespace_habits(pe, rope, ctx),
    ]


def solution_replaced(old: str, new: str):
    """An answer cell's transform: one piece of the solution written another way (it must be there)."""
    def transform(source: str) -> str:
        assert old in source, old
        return source.replace(old, new)
    return transform


def answer_replaced(function: str, body: str):
    """An answer cell's transform: the solution between the BEGIN and END markers of `function` replaced."""
    def transform(source: str) -> str:
        start = source.index(f"def {function}(")
        begin = source.index("### BEGIN SOLUTION", start)
        end = source.index("### END SOLUTION", begin)
        return source[:begin] + "### BEGIN SOLUTION\n" + body.rstrip() + "\n    " + source[end:]
    return transform


LOOP_TABLE = """    import math
    if d_model % 2 != 0:
        raise ValueError("d_model has to be even")
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(0, d_model, 2):
            angle = pos / (10000 ** (i / d_model))
            pe[pos, i] = math.sin(angle)
            pe[pos, i + 1] = math.cos(angle)
    return pe
"""

TORCH_LIKE = '''class SinusoidalPositionalEncoding:
    """Written like a torch.nn.Module: a buffer, __call__ runs forward."""

    def __init__(self, max_seq_len, d_model):
        self.max_seq_len, self.d_model = max_seq_len, d_model
        self.register_buffer("pe", sinusoidal_positional_encoding(max_seq_len, d_model))

    def register_buffer(self, name, value):
        setattr(self, name, value)

    def __call__(self, X):
        return self.forward(X)

    def get_encoding(self, seq_len):
        if seq_len > self.max_seq_len:
            raise ValueError(f"{seq_len} > {self.max_seq_len}")
        return self.pe[:seq_len, :]

    def forward(self, X):
        B, L, D = X.shape
        return X + self.get_encoding(L)[np.newaxis, :, :]
'''

TORCH_LIKE_LEARNED = '''class LearnedPositionalEncoding:
    """nn.Embedding-like: parameters(), zero_grad(), __call__."""

    def __init__(self, max_seq_len, d_model, rng=None):
        if rng is None:
            rng = np.random.default_rng()
        self.max_seq_len = max_seq_len
        self.embedding = 0.02 * rng.standard_normal((max_seq_len, d_model))
        self.zero_grad()
        self._seen = 0

    def parameters(self):
        return [self.embedding]

    def zero_grad(self):
        self.grad_embedding = np.zeros_like(self.embedding)

    def __call__(self, X):
        return self.forward(X)

    def forward(self, X):
        L = X.shape[1]
        if L > self.max_seq_len:
            raise ValueError("sequence too long")
        self._seen = L
        return X + self.embedding[:L]

    def backward(self, grad_output):
        self.zero_grad()
        for b in range(grad_output.shape[0]):
            self.grad_embedding[:self._seen] += grad_output[b]
        return grad_output
'''

LOOP_ROPE = """    x = np.asarray(x, dtype=np.float64)
    theta = rope_frequencies(x.shape[-1], base)
    out = x.copy()
    for m, p in enumerate(positions):
        for i, t in enumerate(theta):
            c, s = np.cos(p * t), np.sin(p * t)
            a, b = x[..., m, 2 * i], x[..., m, 2 * i + 1]
            out[..., m, 2 * i] = a * c - b * s
            out[..., m, 2 * i + 1] = a * s + b * c
    return out
"""

HALVES_ROPE = """    theta = rope_frequencies(x.shape[-1], base)
    angles = np.outer(positions, theta)
    cos, sin = np.cos(angles), np.sin(angles)
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)
"""

HUGE_PRINT = ("np.set_printoptions(threshold=1_000_000)\nbig = sinusoidal_positional_encoding(400, 64)\n"
              "print(big)\nbig")


def new_students(pe, rope, ctx) -> list[Realistic]:
    """Notebooks written the way new students write them: correct ones in their own styles (loops, torch-like
    classes, helper cells, %time, %%capture, plots, display, !ls), and flawed ones with one realistic bug each."""
    full_pe, full_rope, full_ctx = (total_points(a) for a in ("positional_encoding", "rope_alibi",
                                                              "context_extension"))
    return [
        Realistic("pe_loops", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding", answer_replaced("sinusoidal_positional_encoding",
                                                                               LOOP_TABLE)), full_pe),
        Realistic("pe_torch_like_classes", "positional_encoding",
                  added_after(edited(edited(pe, "SinusoidalPositionalEncoding", lambda s: TORCH_LIKE),
                                     "LearnedPositionalEncoding", lambda s: TORCH_LIKE_LEARNED),
                              "LearnedPositionalEncoding",
                              "%time layer = LearnedPositionalEncoding(16, 4, rng=np.random.default_rng(0))\n"
                              "display(layer(np.zeros((2, 3, 4))).shape)\n!ls -la"),
                  full_pe, None, ("`!ls -la`",)),
        Realistic("pe_prints_huge_arrays", "positional_encoding",
                  added_after(pe, "sinusoidal_positional_encoding", HUGE_PRINT), full_pe),
        Realistic("pe_assert_dumps_array", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         lambda s: s + "\n\nmine = sinusoidal_positional_encoding(40, 16)\n"
                                       "assert np.all(mine[:, 1::2] == 0), mine   # I expected zeros here?\n"),
                  full_pe, None, ("defined its functions, then line",)),
        Realistic("pe_learned_batch_mean", "positional_encoding",
                  edited(pe, "LearnedPositionalEncoding",
                         solution_replaced("grad_output.sum(axis=0)", "grad_output.mean(axis=0)")),
                  full_pe - 4 - 2 - 0.5),       # backward, accumulation, 2 of the 12 contracts (2 points, in halves)
        Realistic("pe_base_1000", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         solution_replaced("np.log(10000.0)", "np.log(1000.0)")),
                  full_pe - 4 - 2 - 2 - 0.5),   # values, stability, frequency, the table's contract
        Realistic("pe_float32_table", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         solution_replaced("pe = np.empty((seq_len, d_model), dtype=np.float64)",
                                           "pe = np.empty((seq_len, d_model), dtype=np.float32)")),
                  full_pe - 0.5),               # its contract (float64) alone: values are judged to float32's digits
        Realistic("rope_loops_display", "rope_alibi",
                  added_after(edited(rope, "rope", answer_replaced("apply_rope", LOOP_ROPE)), "rope",
                              "%time rotated = apply_rope(np.eye(4), [0, 1, 2, 3])\ndisplay(rotated)\n!ls\n"
                              "import matplotlib.pyplot as plt\nplt.imshow(rotated)\nplt.show()"),
                  full_rope, None, ("`!ls`",)),
        Realistic("rope_check_line_raises", "rope_alibi",
                  edited(rope, "rope", lambda s: s + "\n\nprint(apply_rope(np.ones((4, 8))))   # quick look\n"),
                  full_rope, None, ("defined its functions, then line",)),
        Realistic("rope_halves_pairing", "rope_alibi",
                  edited(rope, "rope", answer_replaced("apply_rope", HALVES_ROPE)),
                  full_rope - 4 - 0.5),         # apply_rope, its contract (rope_scores is judged on a stand-in)
        Realistic("rope_slopes_power_of_two_only", "rope_alibi",
                  edited(rope, "alibi", answer_replaced("alibi_slopes",
                                                        "    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) "
                                                        "/ n_heads)\n")),
                  full_rope - 1 - 0.5),         # the 2 of 7 head counts that are not powers of two, its contract
        Realistic("ctx_capture_plot_helper", "context_extension",
                  added_after(edited(ctx, "yarn", solution_replaced(
                      "np.clip((turns - alpha) / (beta - alpha), 0.0, 1.0)", "ramp(turns, alpha, beta)")),
                              "interpolation",
                              "%%capture\nimport matplotlib.pyplot as plt\n"
                              "plt.plot(interpolated_positions(np.arange(16), 8, 32))\nplt.show()",
                              "%timeit ntk_scaled_base(10000.0, 4.0, 64)",
                              "def ramp(turns, alpha, beta):\n    return np.clip((turns - alpha) / (beta - alpha), "
                              "0.0, 1.0)\n\nprint(ramp(np.array([0.5, 10.0, 40.0]), 1.0, 32.0))"),
                  full_ctx),
        Realistic("ctx_ntk_exponent_d_over_d_minus_1", "context_extension",
                  edited(ctx, "interpolation", solution_replaced("head_dim / (head_dim - 2)",
                                                                 "head_dim / (head_dim - 1)")),
                  full_ctx - 1.5 - 0.5),        # the 5 of 9 cases with a scale above 1, its contract
        Realistic("ctx_interpolation_off_by_one", "context_extension",
                  edited(ctx, "interpolation", solution_replaced("(train_len / target_len)",
                                                                 "((train_len - 1) / (target_len - 1))")),
                  full_ctx - 2 - 0.5),          # every case but train_len == target_len, its contract
    ]


NAN_FIRST_ROW = """    if d_model % 2 != 0:
        raise ValueError("d_model has to be even")
    pe = np.full((seq_len, d_model), np.nan)      # NaN marks what I have not filled in yet
    for pos in range(1, seq_len):
        for i in range(0, d_model, 2):
            angle = pos / 10000 ** (i / d_model)
            pe[pos, i], pe[pos, i + 1] = np.sin(angle), np.cos(angle)
    return pe
"""

FIRST_TRY_BASE_1000 = ("def sinusoidal_positional_encoding(seq_len, d_model):\n"
                       "    # my first try, kept below the answer cell\n"
                       "    if d_model % 2:\n        raise ValueError('d_model must be even')\n"
                       "    i = np.arange(d_model // 2)\n"
                       "    angles = np.arange(seq_len)[:, None] / 1000.0 ** (2 * i / d_model)[None, :]\n"
                       "    pe = np.empty((seq_len, d_model))\n"
                       "    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)\n"
                       "    return pe\n")


def star_safe(source: str) -> str:
    """An answer cell that runs after `from numpy import *`: the solution's min(a, b) written with numpy."""
    return source.replace("(min(window, length) - 1)", "(np.minimum(window, length) - 1)")


def namespace_habits(pe, rope, ctx) -> list[Realistic]:
    """The classes of what students read: star imports and shadowed builtins (correct work: full marks, no
    self-check failure), a NaN left in an answer, a function redefined in a later cell, and mistakes whose hints must
    describe what the student wrote: an exponent doubled without np.arange(0, d, 2), rope_scores' positions, a
    gradient summed over the positions (a ValueError), a pattern that is not a cause, and a mistake no diagnosis
    knows."""
    full_pe, full_rope, full_ctx = (total_points(a) for a in ("positional_encoding", "rope_alibi",
                                                              "context_extension"))
    return [
        Realistic("pe_star_import_shadowed", "positional_encoding",
                  added_after(pe, "imports", "from numpy import *\nsum, max, min = 0.0, None, None   # my own totals"),
                  full_pe),
        Realistic("rope_star_import", "rope_alibi", edited(rope, "rope", lambda s: "from numpy import *\n" + s),
                  full_rope),
        Realistic("ctx_star_import", "context_extension",
                  added_after(edited(ctx, "layers", star_safe), "imports", "from numpy import *"), full_ctx),
        Realistic("pe_nan_first_row", "positional_encoding",
                  edited(pe, "sinusoidal_positional_encoding",
                         answer_replaced("sinusoidal_positional_encoding", NAN_FIRST_ROW)), None),
        Realistic("pe_redefined_later", "positional_encoding",
                  added_after(pe, "sinusoidal_positional_encoding", FIRST_TRY_BASE_1000), None, None,
                  ("sinusoidal_positional_encoding: the version graded is the one cell",)),
        Realistic("rope_exponent_doubled", "rope_alibi",
                  edited(rope, "rope", solution_replaced("np.exp(-2.0 * i / head_dim * np.log(base))",
                                                         "np.exp(-2.0 * (2 * i) / head_dim * np.log(base))")), None),
        Realistic("rope_scores_scaled", "rope_alibi",
                  edited(rope, "rope", solution_replaced(
                      "return apply_rope(q, q_positions) @ apply_rope(k, k_positions).T",
                      "return apply_rope(q, q_positions) @ apply_rope(k, k_positions).T / np.sqrt(q.shape[-1])")),
                  None),
        Realistic("pe_learned_sum_over_positions", "positional_encoding",
                  edited(pe, "LearnedPositionalEncoding",
                         solution_replaced("grad_output.sum(axis=0)", "grad_output.sum(axis=1)")), None),
        Realistic("ctx_global_layers_local_base", "context_extension",
                  edited(ctx, "layers", solution_replaced("given_frequencies(head_dim, global_base)",
                                                          "given_frequencies(head_dim, local_base)")), None),
        Realistic("ctx_attention_divided_by_d", "context_extension",
                  edited(ctx, "attention", solution_replaced("/ np.sqrt(q.shape[-1])", "/ q.shape[-1]")), None,
                  undiagnosable=True),
    ]


def course(tmp: pathlib.Path) -> Course:
    """A throwaway course: the released and solution notebooks (grading one notebook needs no gradebook)."""
    from fixture_submissions import make_course
    return Course(make_course(tmp, registered=False))


def grade(course: Course, case: Realistic) -> NotebookResult:
    """One notebook through prepare, the sandbox and judge, as `make grade` grades it."""
    folder = course.root / "realistic" / case.name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{case.assignment}.ipynb"
    nbformat.write(case.notebook, path)
    submission = Submission(case.name, case.assignment, case.assignment, path)
    task = pipeline.prepare(course, submission, LIMITS, isolate=True)
    if isinstance(task, NotebookResult):
        return task
    return pipeline.judge(course, submission, execute_task(task), LIMITS)


INTERNAL_NAMES = ("integrity_shared_probes", "too_many_replays", "runner_error", "the cell you added at position")


def texts(result: NotebookResult) -> list[str]:
    return [str(p) for t in result.tests for p in t.problems] + [str(n) for n in result.notes]


def false_notes(result: NotebookResult) -> list[str]:
    """Notes that are not true: a cell said not to have run whose tests all passed, or grader-internal names."""
    passing = {t.cell_id for t in result.tests if t.passed}
    wrong = []
    for note in result.notes:
        text = str(note)
        if any(name in text for name in INTERNAL_NAMES):
            wrong.append(text)
        elif getattr(note, "kind", None) == NoteKind.BROKEN_CELL:
            cell = re.search(r"answer cell '([^']+)'", text).group(1)
            tests = {t.id for t in REGISTRY.values() if t.answer_cell == cell and t.assignment == result.assignment}
            if tests and tests <= passing:
                wrong.append(text)
    return wrong


def unexplained_tests(result: NotebookResult) -> list:
    """Failed hidden tests whose problems name neither a cause nor a pattern."""
    return [t for t in result.tests if t.hidden and not t.passed and not any(getattr(p, "cause", None)
                                                                               for p in t.problems)]


def said_plainly(test) -> bool:
    return any("No known mistake matches" in str(p) for p in test.problems)


LIKELY_CAUSE = "Likely cause: "
UNINFORMATIVE = re.compile(r"\b(row|column) 0 is right\b")


def causes_that_are_not(result: NotebookResult) -> list[str]:
    """"Likely cause" lines that give a described pattern as the cause, or a pattern that tells the student nothing
    (the one row or column a causal mask or base**0 makes right for almost any answer)."""
    return [str(p) for t in result.tests for p in t.problems
            if (LIKELY_CAUSE in str(p) and getattr(p, "pattern", None) and not is_ambiguous(p))
            or UNINFORMATIVE.search(str(p))]


def is_ambiguous(problem) -> bool:
    """A diagnosis naming several known mistakes that fit alike ('...; or ...'): causes, though not one."""
    return "; or " in (getattr(problem, "cause", None) or "")


# Hints that describe what the student wrote, with what the student's answer cells must hold for them to be true.
DESCRIBED_CODE = {"np.arange(0, d, 2)": r"arange\(\s*0\s*,", "np.arange(0, d_model, 2)": r"arange\(\s*0\s*,"}
POSITIONS_LABEL = re.compile(r"positions starting at (\d+) and (\d+)")


def false_hints(result: NotebookResult, notebook: nbformat.NotebookNode) -> list[str]:
    """Hints about code the student did not write: one naming code absent from the answer cells; rope_scores' cases
    labelled by where their positions start when the key positions run down (every case is q 0..8 + s and keys
    8..0 + s, so a true label would name s and 8 + s); "Fix this first" giving an exception's message as "the
    mistake" that explains the failures."""
    answers = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    said = texts(result)
    wrong = [t for t in said for code, written in DESCRIBED_CODE.items()
             if code in t and "No known mistake" not in t and not re.search(written, answers)]
    wrong += [t for t in said for start, key in POSITIONS_LABEL.findall(t) if int(key) != int(start) + 8]
    wrong += [str(n) for n in result.notes_of(NoteKind.FIX_FIRST)
              if "This one mistake explains" in str(n) and re.match(r"Fix this first: [A-Z]\w*Error: ", str(n))]
    return wrong


def self_check_false_failures(result: NotebookResult) -> list[str]:
    """What the notebook's own visible checks reported against a notebook whose every hidden test passed."""
    if not all(t.passed for t in result.tests if t.hidden):
        return []
    return [str(p) for t in result.tests if not t.hidden for p in t.problems]


def measure(results: dict[str, NotebookResult]) -> dict[str, int]:
    """The counts: messages withheld, messages with more than 16 numbers, false notes, failed hidden tests whose
    problems name no cause nor a pattern and do not say plainly that no known mistake matches (and of them, those
    whose bug a diagnosis could know), "Likely cause" lines that are not causes, hints about code the student did
    not write, self-check failures on work the hidden tests pass, and students one bug puts in two dashboard rows."""
    from posenc_autograder.reports.dashboard import grouped_mistakes
    every = [text for r in results.values() for text in texts(r)]
    mistakes, _ = grouped_mistakes(list(results.values()))
    cases = {case.name: case for case in realistic_set()}
    return {"withheld": sum("message withheld" in t for t in every),
            "over_16_numbers": sum(len(NUMBER.findall(t)) > 16 for t in every),
            "false_notes": sum(len(false_notes(r)) for r in results.values()),
            "failed_without_cause": sum(len(unexplained_tests(r)) for r in results.values()),
            "failed_without_cause_diagnosable": sum(len(unexplained_tests(r)) for name, r in results.items()
                                                    if not cases[name].undiagnosable),
            "failed_without_cause_or_plain_word": sum(1 for r in results.values() for t in unexplained_tests(r)
                                                      if not said_plainly(t)),
            "likely_causes_that_are_not": sum(len(causes_that_are_not(r)) for r in results.values()),
            "hints_about_unwritten_code": sum(len(false_hints(r, cases[name].notebook))
                                              for name, r in results.items()),
            "self_check_false_failures": sum(len(self_check_false_failures(r)) for r in results.values()),
            "dashboard_unexplained": sum(len(row.tests) for row in mistakes
                                         if row.label.endswith("failed without a named cause")
                                         and not all(cases[r.student].undiagnosable for r in row.results)),
            "students_with_two_rows_for_one_bug": len(students_with_rows_over_one(mistakes))}


def students_with_rows_over_one(mistakes) -> dict[str, list[str]]:
    """Each notebook of the set holds at most one bug: a student in two of the dashboard's mistake rows is one
    cause counted twice."""
    rows: dict[str, list[str]] = {}
    for row in mistakes:
        for result in row.results:
            rows.setdefault(result.student, []).append(row.label)
    return {student: labels for student, labels in rows.items() if len(labels) > 1}


def main() -> None:
    """Grade the set and print each notebook's score and the four counts (run before and after a change)."""
    import json
    import os
    import sys
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        graded_course = course(pathlib.Path(tmp) / "course")
        only = set(os.environ.get("REALISTIC_ONLY", "").split(",")) - {""}     # a few by name, while fixing
        results = {case.name: grade(graded_course, case) for case in realistic_set()
                   if not only or case.name in only}
    for name, result in results.items():
        print(f"{name}: {result.score:g}/{result.max_score:g}")
        for text in texts(result):
            print("   ", text[:300])
    print(json.dumps(measure(results)))
    if len(sys.argv) > 1:
        pathlib.Path(sys.argv[1]).write_text(json.dumps({n: r.to_json() for n, r in results.items()}, default=str))


if __name__ == "__main__":
    main()
