"""One submission through the grader: prepare (trusted) → execute (sandboxed, anywhere) → judge (trusted).

The execute step lives in execute.py: it needs nothing but its GradingTask, so it can run in a
local thread or on a remote Dask worker; only plain data crosses in either direction.
"""
from __future__ import annotations

import ast
import collections
import dataclasses
import functools
import io
import json
import pathlib
import re
import threading
import tokenize
import unicodedata
from typing import Any

import nbformat

from posenc_autograder import probes as probes_package
from posenc_autograder import settings, words
from posenc_autograder.authoring import release_history
from posenc_autograder.checks import REGISTRY, manifest, stand_in_files, stand_in_sources, variants
from posenc_autograder.checks.hidden import HiddenTest, judge_all
from posenc_autograder.course import RELEASE_DIRECTORY, SUMMARY_CELL, Course, grade_id, nbgrader_meta
from posenc_autograder.grading import shared_probes
from posenc_autograder.grading.assemble import assemble, code_cell, untouched
from posenc_autograder.grading.execute import Execution, GradingTask, cell_label
from posenc_autograder.grading.fix_first import fix_this_first
from posenc_autograder.intake.submissions import Submission, UnreadableNotebook, read_notebook
from posenc_autograder.probes import codec, magics
from posenc_autograder.probes import helpers as probe_helpers
from posenc_autograder.results import (
    FIX_THIS_FIRST,
    SEE_FIX_FIRST,
    GradedTest,
    Note,
    NotebookResult,
    NoteKind,
    Problem,
    ProblemKind,
    Step,
    missing_module_hint,
    quote,
)
from posenc_autograder.sandbox.layout import PROBE_PACKAGE
from posenc_autograder.settings import Caps, Limits

# --- prepare -----------------------------------------------------------------------------------

def test_cells(release_nb) -> list[tuple[int, str, str, float]]:
    """(index, cell id, title, points) of every graded cell of a released notebook."""
    found = []
    for index, cell in enumerate(release_nb.cells):
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            found.append((index, meta["grade_id"], cell_title(cell.source) or meta["grade_id"],
                          float(meta.get("points", 0))))
    return found


def cell_title(source: str) -> str:
    """What a test cell says it checks: its whole leading comment (wrapped lines are one sentence), up to
    nbgrader's markers."""
    lines = []
    for line in source.splitlines():
        if not line.startswith("#") or line.startswith("###"):
            break
        lines.append(line.lstrip("# ").strip())
    return " ".join(lines)


def probe_cell_source(cell_id: str, title: str) -> str:
    return (f"# {title}\nfrom {PROBE_PACKAGE}.runner import run as _posenc_probe\n"
            f"_posenc_probe({cell_id!r}, globals())")


def released(course: Course, assignment: str, notebook: str):
    """The released notebook as parsed once while the file is unchanged, shared: for callers that only read it
    (prepare's assembly copies the cells it keeps)."""
    path = course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb"
    state = path.stat()
    return _parsed_file(str(path), state.st_mtime_ns, state.st_size)


@functools.lru_cache(maxsize=16)
def _parsed_file(path: str, mtime_ns: int, size: int):
    return nbformat.read(path, as_version=4)


def released_tests(course: Course, assignment: str, notebook: str) -> tuple[tuple[int, str, str, float], ...]:
    """test_cells of the released notebook, worked out once while the file is unchanged: prepare, the judge and the
    graded checks each read them for every notebook (a regrade from kept records read them four times a notebook)."""
    path = course.path(RELEASE_DIRECTORY) / assignment / f"{notebook}.ipynb"
    state = path.stat()
    return _released_tests(str(path), state.st_mtime_ns, state.st_size)


@functools.lru_cache(maxsize=16)
def _released_tests(path: str, mtime_ns: int, size: int) -> tuple[tuple[int, str, str, float], ...]:
    return tuple(test_cells(_parsed_file(path, mtime_ns, size)))


def submitted_notebook(path: pathlib.Path, caps: Caps = Caps()):
    """read_notebook for a submission within the course's caps, parsed once while the file is unchanged (prepare
    and the evidence both read it; the few in flight are kept). Callers must not change it."""
    state = path.lstat()
    return _parsed_submission(str(path), state.st_mtime_ns, state.st_size, state.st_ino, caps)


@functools.lru_cache(maxsize=8)
def _parsed_submission(path: str, mtime_ns: int, size: int, inode: int, caps: Caps):
    return read_notebook(pathlib.Path(path), caps.notebook_bytes, caps.cells)


class _Executed:
    """The executed notebook the sandbox side sent back, parsed once for the judge's readers and the autograded
    notebook (keyed by the text itself; the last few kept). Callers must not change it. Not validated again: the
    supervisor wrote this text with nbformat.writes, which validated it (and, as reading does, only logs what is
    invalid). A notebook the trusted side built itself (a re-judge's skeleton of the kept run) is handed in as it is
    (known): its text is never parsed."""

    KEPT = 8

    def __init__(self):
        self._lock = threading.Lock()
        self._parsed: collections.OrderedDict[str, nbformat.NotebookNode] = collections.OrderedDict()

    def __call__(self, executed_notebook: str) -> nbformat.NotebookNode:
        with self._lock:
            found = self._parsed.get(executed_notebook)
        if found is None:
            found = self._keep(executed_notebook, nbformat.v4.reads(executed_notebook))
        return found

    def known(self, nb: nbformat.NotebookNode) -> str:
        """The text of a notebook built on the trusted side, kept with the notebook itself for its readers."""
        text = json.dumps(nb, ensure_ascii=False)
        self._keep(text, nb)
        return text

    def _keep(self, text: str, nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        with self._lock:
            self._parsed[text] = nb
            self._parsed.move_to_end(text)
            while len(self._parsed) > self.KEPT:
                self._parsed.popitem(last=False)
        return nb

    def cache_clear(self) -> None:
        with self._lock:
            self._parsed.clear()


executed = _Executed()


def probe_files() -> dict[str, str]:
    """What is shipped into the sandbox: the probes package, and every assignment's stand-in module beside it (read
    again only when one of those files changes: every notebook of a run ships them). Each caller gets its own dict."""
    files = [*sorted(pathlib.Path(probes_package.__file__).parent.glob("*.py")), *stand_in_files()]
    return dict(_shipped(tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files)))


@functools.lru_cache(maxsize=2)
def _shipped(states: tuple) -> tuple[tuple[str, str], ...]:
    folder = pathlib.Path(probes_package.__file__).parent
    return (*((p.name, p.read_text()) for p in sorted(folder.glob("*.py"))), *stand_in_sources().items())


_EARLIER: dict[tuple, dict[str, list[dict]]] = {}


def earlier_cells(course: Course, assignment: str, notebook: str) -> dict[str, list[dict]]:
    """release_history.earlier_cells, read again only when its files change (every notebook of a run reads it; callers
    only read it)."""
    files = sorted(release_history.folder(course, assignment).glob("*.json"))
    key = (str(release_history.folder(course, assignment)), notebook,
           tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in files))
    if key not in _EARLIER:
        if len(_EARLIER) > 16:
            _EARLIER.clear()
        _EARLIER[key] = release_history.earlier_cells(course, assignment, notebook)
    return _EARLIER[key]


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A notebook assembled for its run, its task not framed yet: what a re-judge reads of it (the run's digests, the
    cells the judge's readers see), and task(), what a sandbox job needs (framing it is a re-judge's largest saving)."""
    key: tuple[str, str, str]
    notebook: nbformat.NotebookNode   # the assembled notebook, probe cells in place; read only (a re-judge reads its
                                      # cells as they are: never written as text and parsed again)
    probes: tuple[str, ...]           # the probe cells' ids, in the notebook's order (the shared set's last)
    variant: int | None               # the student's inputs (checks/variants.py)
    probe_files: dict[str, str]
    limits: dict
    isolate: bool
    release_cells: tuple[int, ...] = ()    # code cells that are the release's own, byte for byte (GradingTask's)

    @property
    def task_ids(self) -> list[str]:
        return sorted(self.probes)

    @functools.cached_property
    def entries(self) -> dict[str, dict]:
        """Per probe cell: probe module, name and inputs (each kept frame as it is). Made only for a notebook that
        runs: a student's own inputs are built and framed for them alone, the largest part of preparing a notebook
        that a re-judge does not need."""
        entries = {cell_id: REGISTRY[cell_id].task_entry(self.variant, framed=True)
                   for cell_id in self.probes if cell_id != shared_probes.SHARED_CELL}
        if shared_probes.SHARED_CELL in self.probes:
            entries[shared_probes.SHARED_CELL] = shared_probes.shared_probe_entry(entries, framed=True)
        return entries

    @functools.cached_property
    def notebook_json(self) -> str:
        """The assembled notebook as the task carries it: compact JSON (nbformat's indented form goes through Python's
        slow encoder); only execute_task reads this text back. Written only for a notebook that runs."""
        return json.dumps(self.notebook, ensure_ascii=False)

    def task(self) -> GradingTask:
        return GradingTask(self.key, self.notebook_json, codec.frame(self.entries), self.task_ids, self.probe_files,
                           self.limits, self.isolate, release_cells=list(self.release_cells))


def prepare(course: Course, submission: Submission, limits: Limits, isolate: bool) -> GradingTask | NotebookResult:
    """The submission's sandbox job, or its result when it cannot run (missing, unreadable)."""
    prepared = prepare_run(course, submission, limits, isolate)
    return prepared if isinstance(prepared, NotebookResult) else prepared.task()


def prepare_run(course: Course, submission: Submission, limits: Limits, isolate: bool) -> Prepared | NotebookResult:
    release = released(course, submission.assignment, submission.notebook)
    cells = released_tests(course, submission.assignment, submission.notebook)
    if submission.path is None:
        return not_graded(submission, cells, submission.notes)
    try:
        caps = settings.load(course).caps
        student_nb = submitted_notebook(submission.path, caps)      # read only: assemble() copies what it keeps
    except UnreadableNotebook as exc:
        return not_graded(submission, cells,
                          submission.notes + [Note(NoteKind.UNREADABLE, f"the notebook could not be read: {exc}")])
    assembled = assemble(release, student_nb,
                         earlier_cells(course, submission.assignment, submission.notebook))
    submission.notes.extend(assembled.notes)
    nb = assembled.notebook
    variant = variants.student_variant(course, submission.student)
    probes = []
    first_by_id: dict[str | None, Any] = {}         # each grade id's first cell, as a scan from the top finds it
    for cell in nb.cells:
        first_by_id.setdefault(grade_id(cell), cell)
    for _, cell_id, title, _ in test_cells(nb):    # positions in the assembled notebook, added cells included
        if cell_id not in REGISTRY:
            continue                                 # a visible self-check: it runs as released
        cell = first_by_id[cell_id]
        cell.source = probe_cell_source(cell_id, title)
        probes.append(cell_id)
    if variant is not None and any(map(shared_probes.varies, probes)):
        # the shared probe set, never graded: evidence for the integrity report
        nb.cells.append(code_cell(probe_cell_source(shared_probes.SHARED_CELL, "shared probes"),
                                  metadata={"nbgrader": {"grade_id": shared_probes.SHARED_CELL}}))
        probes.append(shared_probes.SHARED_CELL)
    # Valid as built: assemble checked the release, and every cell added here is a code cell of the grader's.
    return Prepared(submission.key, nb, tuple(probes), variant, probe_files(), dataclasses.asdict(limits), isolate,
                    release_cells(release, nb))


def release_cells(release, nb) -> tuple[int, ...]:
    """The code cells of an assembled notebook whose text is one of the release's code cells, byte for byte: only
    those may be sent to the warm sandbox's zygote, which every job shares (a student's text never is)."""
    released = {cell.source for cell in release.cells if cell.cell_type == "code"}
    return tuple(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and cell.source in released)


def grader_error(course: Course, submission: Submission, exc: Exception) -> NotebookResult:
    """A result for a submission the grader itself stumbled on: 0 for now, flagged for the instructor."""
    note = Note(NoteKind.GRADER_ERROR, f"the grader hit an unexpected error on this notebook "
                f"({type(exc).__name__}); it was not graded and the instructor has been told")
    try:
        cells = test_cells(released(course, submission.assignment, submission.notebook))
    except Exception:  # noqa: BLE001 - the release itself is unreadable: report with no tests
        cells = []
    return not_graded(submission, cells, submission.notes + [note])


def not_graded(submission: Submission, cells, notes) -> NotebookResult:
    tests = [GradedTest(cid, title, cid in REGISTRY, 0.0, points,
                        [Problem("not run: the notebook could not be graded", kind=ProblemKind.NOT_RUN)])
             for _, cid, title, points in cells]
    return NotebookResult(*submission.key, graded=False, tests=tests, notes=list(notes))


# --- judge (trusted side) ----------------------------------------------------------------------

def graded_checks(course: Course, submission: Submission) -> list[HiddenTest]:
    """The hidden tests of the submission's released notebook, in its order."""
    return [REGISTRY[cell_id] for _, cell_id, _, _ in released_tests(course, submission.assignment, submission.notebook)
            if cell_id in REGISTRY]


def judged_tests(course: Course, submission: Submission, execution: Execution, kept=None
                 ) -> dict[str, tuple[list[Problem], int, int]]:
    """Each hidden test's outcome (problems, cases passed, cases judged) on the run's records: value tests first, then
    the contracts test on their verdicts; kept(test, verdicts): an outcome kept from the same run and judge
    (judge_all)."""
    checks = graded_checks(course, submission)
    records = {check.id: execution.observations.get(check.id) or {"missing": _why_no_answer(execution.events)}
               for check in checks}
    return judge_all(checks, records, variants.student_variant(course, submission.student), kept)


def judge(course: Course, submission: Submission, execution: Execution, limits: Limits,
          judged: dict[str, tuple[list[Problem], int, int]] | None = None) -> NotebookResult:
    """The notebook's result: each hidden test's outcome (judged_tests, unless given) weighed by its released points,
    the visible checks, and the notes on the run."""
    release = released(course, submission.assignment, submission.notebook)
    notes = list(submission.notes) + _describe_events(execution.events, limits, execution.executed_notebook)
    if execution.failure:
        notes.append(Note(NoteKind.GRADER_ERROR, execution.failure))
    tests = []
    cells = released_tests(course, submission.assignment, submission.notebook)
    if judged is None:
        judged = judged_tests(course, submission, execution)
    for _, cell_id, title, points in cells:
        check = REGISTRY.get(cell_id)
        if check is None:
            error = execution.cell_errors.get(cell_id)
            tests.append(GradedTest(cell_id, title, False, 0.0, points, [visible_problem(error)] if error else []))
            continue
        problems, passed, total = judged[cell_id]
        share = check.points_for(passed, total) * points / check.points      # the released cell's points rule
        tests.append(GradedTest(cell_id, title, True, share, points, problems,
                                (passed, total) if check.partial else None))
    notes += _memory_note(tests, limits)
    errors = answer_cell_errors(execution.executed_notebook, submission.assignment)
    broken = {**{e.cell_id: e for e in errors if not e.defined}, **kept_nothing_cells(execution.executed_notebook)}
    tests = [_blame_broken_cells(test, broken, submission.assignment) for test in tests]
    tests, said = _defined_below_said(tests, broken_cell_notes(broken), execution.executed_notebook)
    tests = _summary_said(tests)
    notes[:0] = said + fix_this_first(tests)
    notes += raised_after_defining_notes([e for e in errors if e.defined])
    notes += own_cell_error_notes(execution.executed_notebook)
    notes += skipped_magic_notes(execution.executed_notebook)
    notes += redefinition_notes(execution.executed_notebook, submission.assignment)
    notes += rebound_import_notes(execution.executed_notebook)
    ran = executed(execution.executed_notebook) if execution.executed_notebook else None
    return NotebookResult(*submission.key, graded=execution.failure is None, tests=tests, notes=notes,
                          seconds=execution.seconds,
                          untouched=untouched(ran, release) if ran is not None else None)


@dataclasses.dataclass(frozen=True)
class CellError:
    """An answer cell that raised: its error with the line, and whether every function the manifest expects of it
    was already defined by then (a student's own check line at the end of the cell that raised)."""
    cell_id: str
    error: str            # 'SyntaxError: invalid syntax (line 3)', the message summarised (results.summarised)
    line: int | None
    defined: bool
    quoted: str | None = None     # the message in full, when the summary leaves some of it out
    index: int | None = None      # the cell's place in the notebook
    kept_nothing: bool = False    # it ran to its end under a cell magic that keeps nothing (`error` says which)


ERROR_LINE = re.compile(r"\(line (\d+)\)\Z")      # the suffix probes.shell_runner.error_text writes


def answer_cell_errors(executed_notebook: str | None, assignment: str | None = None) -> list[CellError]:
    """Every answer cell that did not run to its end, with its error and line."""
    if not executed_notebook:
        return []
    expected = {}
    entries = manifest.functions(assignment) if assignment is not None and assignment in REGISTRY_ASSIGNMENTS else ()
    for entry in entries:
        expected.setdefault(entry.cell, set()).add(entry.defined_name)
    found, budget = [], magics.TransformBudget()          # one for the notebook: its cells are the student's
    for index, cell in enumerate(executed(executed_notebook).cells):
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution"):
            error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
            if error is not None:
                cell_id = str(grade_id(cell))
                summary, line, quoted = error_said(error)
                defined = (error.get("ename") not in ("SyntaxError", "IndentationError", "TabError")
                           and bool(expected.get(cell_id))
                           and defined_before(cell.source, expected[cell_id], line, budget))
                found.append(CellError(cell_id, summary, line, defined, quoted, index))
    return found


def kept_nothing_cells(executed_notebook: str | None) -> dict[str, CellError]:
    """Each answer cell that ran to its end under a cell magic that keeps nothing it defines (magics.keeps_nothing):
    its functions are missing as if it had not run, and that magic is the one cause to fix."""
    if not executed_notebook:
        return {}
    found = {}
    for index, cell in enumerate(executed(executed_notebook).cells):
        if cell.cell_type == "code" and nbgrader_meta(cell).get("solution") and "%%" in cell.source \
                and not any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            why = magics.keeps_nothing(cell.source)
            if why is not None:
                found[str(grade_id(cell))] = CellError(str(grade_id(cell)), why, 1, False, index=index,
                                                       kept_nothing=True)
    return found


def error_said(error: dict) -> tuple[str, int | None, str | None]:
    """An executed cell's error output as a note quotes it: 'ename: message (line n)' summarised, the line the
    runner named, and the message in full when the summary leaves some of it out."""
    said = ERROR_LINE.search(str(error.get("evalue", "")))
    summary, quoted = quote(f"{error.get('ename')}: {error.get('evalue')}")
    return summary, int(said.group(1)) if said else None, quoted


REGISTRY_ASSIGNMENTS = {check.assignment for check in REGISTRY.values()}


def defined_before(source: str, names: set[str], line: int | None, budget: magics.TransformBudget | None = None
                   ) -> bool:
    """Whether the cell's top-level statements define every name in full before `line` (the line that raised)."""
    if line is None:
        return False
    tree = magics.ipython_tree(source, budget)          # a cell may use magics: read it as IPython
    if tree is None:
        return False
    done = set()
    for node in tree.body:
        if node.end_lineno is not None and node.end_lineno < line:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                done.add(node.name)
            elif isinstance(node, ast.Assign):
                done |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names <= done


def broken_answer_cells(executed_notebook: str | None, assignment: str | None = None) -> dict[str, CellError]:
    """Answer cell id -> its error with the line ('SyntaxError: invalid syntax (line 3)') for each answer cell that
    stopped before defining what it should: those functions are missing, and that is the one cause to fix."""
    return {**{e.cell_id: e for e in answer_cell_errors(executed_notebook, assignment) if not e.defined},
            **kept_nothing_cells(executed_notebook)}


def broken_cell_notes(broken: dict[str, CellError]) -> list[Note]:
    return [Note(NoteKind.BROKEN_CELL, f"{FIX_THIS_FIRST}{_not_run(cell_id, broken)}, so "
                 + ("every test of its functions fails until that line is removed" if e.kept_nothing else
                    "the functions it defines are missing or incomplete and every test of them fails until it runs")
                 + (f". {hint}" if (hint := missing_module_hint(e.error)) else ""),
                 e.quoted, e.index, _not_run(cell_id, broken)) for cell_id, e in broken.items()]


@functools.lru_cache(maxsize=1024)
def top_level_names(source: str) -> frozenset[str]:
    """The names a cell's top-level statements bind (def, class, assignment, import), read as IPython reads it. Kept
    by source: the released cells every notebook holds are read once a run, not once a notebook."""
    return frozenset(name for name, _ in _bound(magics.ipython_tree(source)))


def may_name(source: str, name: str) -> bool:
    """Could the cell bind `name`? Not without its text (Python reads identifiers in NFKC form: compared so); reading
    the cell as IPython does costs ~1 ms, this a microsecond."""
    return name in source or name in as_identifiers(source)


def as_identifiers(source: str) -> str:
    """The text as Python reads its identifiers (NFKC form: `ｎｐ` is `np`); an ASCII text as it is."""
    return source if source.isascii() else unicodedata.normalize("NFKC", source)


def may_bind(source: str, name: str) -> bool:
    """Could the cell bind `name` as _bindings reads a cell: an import (of it, or as it), a def or class of it, an
    assignment to it (`np = `, `(np) = `, `np: T = `)? A cell that only uses it (`np.zeros(3)`, every cell of a
    notebook, for `np`) is not read as IPython: a regular expression with no nested repetition, linear in the cell."""
    text = as_identifiers(source)
    return name in text and _binding_pattern(name).search(text) is not None


@functools.lru_cache(maxsize=64)
def _binding_pattern(name: str) -> re.Pattern:
    """may_bind's pattern for `name`: `import`, `name` then `=` or `:`, `def name`, `class name`, each a whole word
    (`.name =` is an attribute's). Each branch starts with its word and looks behind it only once that word is found:
    a pattern starting with a look-behind or a word boundary is tried at every character (~0.8 ms for the cells of
    one notebook, where this takes ~0.1 ms; every notebook judged has them)."""
    word = re.escape(name)
    return re.compile(rf"import(?<!\wimport)(?!\w)|{word}(?<![\w.]{word})[\s\\)]*(?::|=(?!=))|"
                      rf"def(?<!\wdef)\s+{word}\b|class(?<!\wclass)\s+{word}\b")


def _binding(cells: list, name: str, after: int, before: int) -> list[int]:
    """The places of the cells between `after` and `before` that bind `name` (a cell without its text binds it not)."""
    return [index for index, cell in cells if after < index < before and may_name(cell.source, name)
            and name in top_level_names(cell.source)]


def redefinition_notes(executed_notebook: str | None, assignment: str) -> list[Note]:
    """A graded function that a cell after its answer cell binds again, before the first hidden test of it runs:
    that cell's version is the one graded, and the page says which cell it was. One bound again only after its value
    tests ran (an answer written in a later answer cell, its own left as the stub): they ran the answer cell's
    version, and the page says which cell defines it again."""
    if not executed_notebook or assignment not in REGISTRY_ASSIGNMENTS:
        return []
    nb = executed(executed_notebook)
    cells = [(index, cell) for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    where = {grade_id(cell): index for index, cell in cells if grade_id(cell)}
    notes, again = [], {}
    for entry in manifest.functions(assignment):
        name, answer = entry.defined_name, where.get(entry.cell)
        tests = [t for t in REGISTRY.values() if t.assignment == assignment and t.id in where
                 and entry.name in t.subjects]
        tested = [where[t.id] for t in tests]
        if answer is None or not tested or any(n.startswith(f"{name}:") for n in map(str, notes)):
            continue
        later = _binding(cells, name, answer, min(tested))
        if later:
            notes.append(Note(NoteKind.REDEFINED, f"{name}: the version graded is the one {cell_label(nb, later[-1])} "
                                                  f"defines, after answer cell '{entry.cell}' (a later definition "
                                                  f"replaces an earlier one, as in Jupyter); keep one definition, in "
                                                  f"the answer cell", cell=later[-1]))
            continue
        own = [where[t.id] for t in tests if not t.reads_verdicts]     # its value tests, not the contracts test
        after = _binding(cells, name, max(own), len(nb.cells)) if own else []
        if after and name not in again.setdefault((after[0], entry.cell), []):
            again[after[0], entry.cell].append(name)
    for (index, cell_id), names in again.items():      # the functions one cell moved: one note
        them = words.listed(names)
        notes.append(Note(NoteKind.REDEFINED, f"{them}: {cell_label(nb, index)} defines "
                                              f"{'it' if len(names) == 1 else 'them'} again after "
                                              f"{'its' if len(names) == 1 else 'their'} tests ran, which ran the "
                                              f"version of answer cell '{cell_id}'; keep one definition, in the "
                                              f"answer cell", cell=index))
    return notes


IMPORTS_CELL = "imports"      # the template's cell of imports (`import numpy as np`), every notebook's


def rebound_import_notes(executed_notebook: str | None) -> list[Note]:
    """A cell after the template's imports that binds one of their names to something else (`np = None`, a
    function called `np`, `import pandas as np`): every cell after it, the tests among them, runs with that name, as
    Run All does; the note names the cell, where the errors after it (`'NoneType' object has no attribute 'arange'`)
    do not. A binding the grader cannot tell apart from the same module (`np = numpy`) is not named."""
    if not executed_notebook:
        return []
    nb = executed(executed_notebook)
    start = next((i for i, c in enumerate(nb.cells) if grade_id(c) == IMPORTS_CELL), None)
    if start is None:
        return []
    imported = dict(_bindings(nb.cells[start].source))
    notes, said, budget = [], set(), magics.TransformBudget()      # one for the notebook: its cells are the student's
    for index, cell in enumerate(nb.cells[start + 1:], start + 1):
        if cell.cell_type != "code" or grade_id(cell) in REGISTRY or grade_id(cell) == shared_probes.SHARED_CELL \
                or not any(may_bind(cell.source, name) for name in set(imported) - said):
            continue
        for name, bound in _bindings(cell.source, budget):
            if name in imported and name not in said and bound not in (imported[name], None):
                said.add(name)
                notes.append(Note(NoteKind.REDEFINED, f"{cell_label(nb, index)} binds `{name}` again, to something "
                                                      f"other than the template's `{imported[name]}`: every cell after "
                                                      f"it, the tests among them, ran with that `{name}`, as Run All "
                                                      f"runs them; give yours another name", cell=index))
    return notes


KEPT_BINDINGS_CHARACTERS = 64 * 2**10     # a cell's bindings kept by its text up to this length (the template's
                                          # self-check helpers: ~14 KB), so what is kept stays within ~16 MB


def _bindings(source: str, budget: magics.TransformBudget | None = None) -> list[tuple[str, str | None]]:
    """(name, what it is bound to) for each name a cell's top-level statements bind, in order: an import's module
    ('np', 'numpy'), '' for anything else, None for a plain alias of another name (`np = numpy`: not told apart)."""
    kept = _python_bindings(source) if len(source) <= KEPT_BINDINGS_CHARACTERS else None
    if kept is not None:
        return list(kept)
    return _bound(magics.ipython_tree(source, budget))       # a cell may use magics: read it as IPython


@functools.lru_cache(maxsize=256)
def _python_bindings(source: str) -> tuple[tuple[str, str | None], ...] | None:
    """_bindings of a cell that is plain Python (None: it is not), kept by its text: the template's cells that every
    notebook holds (its self-check helpers, its visible checks; they import) were parsed again for every notebook,
    ~6 ms of each job. A cell that needs IPython's reading is read within its notebook's budget, never kept."""
    tree = magics.python_tree(source)
    return None if tree is None else tuple(_bound(tree))


def _bound(tree: ast.Module | None) -> list[tuple[str, str | None]]:
    """_bindings of a cell's syntax tree (None: a cell that is not valid IPython binds nothing)."""
    found: list[tuple[str, str | None]] = []
    for node in tree.body if tree is not None else ():
        if isinstance(node, ast.Import):
            found += [((a.asname or a.name).split(".")[0], a.name if a.asname else a.name.split(".")[0])
                      for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found += [(a.asname or a.name, f"{node.module}.{a.name}") for a in node.names if a.name != "*"]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node.name, ""))
        elif isinstance(node, ast.Assign) or isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            alias = isinstance(node.value, (ast.Name, ast.Attribute))
            found += [(t.id, None if alias else "") for t in targets if isinstance(t, ast.Name)]
    return found


def raised_after_defining_notes(errors: list[CellError]) -> list[Note]:
    """A cell that defined all its functions and then raised (a check line of the student's own): the functions were
    graded as defined; the line that raised is the student's to look at."""
    return [Note(NoteKind.RAISED_AFTER_DEFINING, f"the answer cell '{e.cell_id}' defined its functions, then line "
                 f"{e.line} raised {e.error.removesuffix(f' (line {e.line})')}; the functions were graded as defined, "
                 f"so look at that line (a check of your own?)", e.quoted, e.index) for e in errors]


STOPPED_BY_THE_GRADER = ("CellTimeout", "KeyboardInterrupt")      # a cell past its limit: the timeout note says so


def own_cell_error_notes(executed_notebook: str | None) -> list[Note]:
    """A cell of the student's own (added, or the template's scratch cell: no nbgrader metadata) that raised: it
    earns and costs nothing by itself, but Jupyter's Run All stops there while the grader, as nbgrader's autograde
    does, runs the cells after it; the page says so instead of keeping the error in the autograded notebook only."""
    if not executed_notebook:
        return []
    nb = executed(executed_notebook)
    notes = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or grade_id(cell):
            continue
        error = next((o for o in cell.get("outputs", []) if o.get("output_type") == "error"), None)
        if error is None or error.get("ename") in STOPPED_BY_THE_GRADER:
            continue
        summary, line, quoted = error_said(error)
        if line is not None:          # 'AssertionError: (line 1)' for an assert without a message: said as a line
            summary = summary.removesuffix(f" (line {line})").removesuffix(":") + f" on line {line}"
        notes.append(Note(NoteKind.OWN_CELL_RAISED, f"{cell_label(nb, index)}, a cell of your own, raised {summary}"
                                                    f"{_in_the_grader(error, cell.source, line)}; the grader ran the "
                                                    f"cells after it, as nbgrader does, but Jupyter's Run All stops "
                                                    f"there: fix or remove it", quoted, index))
    return notes


CLOSED_INPUT = "I/O operation on closed file"      # what input() raises in the grader, where nothing can be typed


def _in_the_grader(error: dict, source: str, line: int | None) -> str:
    """Why a line that runs in Jupyter raised in the grader, when Python's message does not say it: input() with no
    one to type (Python speaks of a closed file the student never opened)."""
    lines = source.splitlines()
    said = lines[line - 1] if line is not None and 0 < line <= len(lines) else ""
    if error.get("ename") == "ValueError" and CLOSED_INPUT in str(error.get("evalue", "")) and _calls_input(said):
        return " (`input()` waits for typing, and no one types in the grader: write the value in the code)"
    hint = missing_module_hint(f"{error.get('ename')}: {error.get('evalue')}")
    return f" ({hint})" if hint else ""


def _calls_input(line: str) -> bool:
    """Whether the line calls input(), read by Python's tokenizer (not in a comment or a string)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(line).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    pairs = enumerate(zip(tokens, tokens[1:], strict=False))
    return any(a.type == tokenize.NAME and a.string == "input" and b.string == "(" and
               (i == 0 or tokens[i - 1].string != ".") for i, (a, b) in pairs)


SKIPPED_BECAUSE = {"!": "shell commands do not run in the grader",
                   "%pip": "the grader installs no packages (every package the course uses is already there)",
                   "%conda": "the grader installs no packages (every package the course uses is already there)"}


def skipped_magic_notes(executed_notebook: str | None) -> list[Note]:
    """One note per magic or shell command the grader skipped (probes.magics): where it is and why; the rest of its
    cell ran."""
    if not executed_notebook:
        return []
    nb = executed(executed_notebook)
    notes, budget = [], magics.TransformBudget()          # one for the notebook: its cells are the student's
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or grade_id(cell) in REGISTRY or grade_id(cell) == shared_probes.SHARED_CELL:
            continue
        for used in magics.skipped_in(cell.source, budget):
            written = cell.source.splitlines()[used.line - 1].strip()[:80]
            why = SKIPPED_BECAUSE.get(used.magic, f"the {used.magic} magic does not run in the grader")
            where = cell_label(nb, index, first_line=used.line > 1)
            rest = "the lines under it did not run either" if used.magic.startswith("%%") else \
                "the rest of the cell ran"
            notes.append(Note(NoteKind.SKIPPED_MAGIC, f"line {used.line} of {where}, `{written}`, was skipped: "
                                                      f"{why}; {rest}", cell=index))
    return notes


def _test_cells(test_id: str) -> set[str]:
    """The answer cells a hidden test's subjects are defined in (from the manifest), or its own answer cell."""
    check = REGISTRY.get(test_id)
    if check is None:
        return set()
    entries = manifest.by_name(manifest.functions(check.assignment))
    return {entries[name].cell for name in check.subjects if name in entries} or {check.answer_cell}


NAME_NOT_DEFINED = re.compile(r"\bname '(\w+)' is not defined")      # Python's NameError, as a self-check prints it


def _not_run(cell_id: str, broken: dict[str, CellError]) -> str:
    if broken[cell_id].kept_nothing:
        return f"the answer cell '{cell_id}' kept nothing it defines: {broken[cell_id].error}, as Jupyter does"
    return f"the answer cell '{cell_id}' did not run ({broken[cell_id].error})"


def _not_judged(cause: str) -> Problem:
    return Problem(f"not judged: {cause}{SEE_FIX_FIRST}", cause, ProblemKind.NOT_JUDGED)


def _blame_broken_cells(test: GradedTest, broken: dict[str, CellError], assignment: str | None = None) -> GradedTest:
    """A failed test whose functions' answer cell did not run says so, once, instead of a NameError per case; a
    visible self-check that could not call such a function (`assignment`: the notebook's) says that, not its own
    guess at whose code raised; the contracts test's case of a function its broken cell never defined is not
    judged."""
    if test.passed or not broken:
        return test
    if not test.hidden:
        return dataclasses.replace(test, problems=[_self_check_blamed(p, broken, assignment) for p in test.problems])
    cells = sorted(_test_cells(test.cell_id) & set(broken))
    if not cells:
        return test
    if REGISTRY[test.cell_id].reads_verdicts:
        return dataclasses.replace(test, problems=_said_once([_contract_blamed(p, broken, test.cell_id)
                                                              for p in test.problems]))
    return dataclasses.replace(test, problems=[_not_judged(_not_run(cells[0], broken))], cases=None)


def _said_once(problems: list[Problem]) -> list[Problem]:
    """The problems with each cause not judged said once: the contract cases of a broken cell's several functions
    are one cause, not one line each."""
    said: set[str | None] = set()
    kept = []
    for problem in problems:
        if problem.kind == ProblemKind.NOT_JUDGED and problem.cause is not None:
            if problem.cause in said:
                continue
            said.add(problem.cause)
        kept.append(problem)
    return kept


def _broken_functions(broken: dict[str, CellError], assignment: str | None) -> dict[str, str]:
    """Each name an answer cell that did not run should have defined -> that cell."""
    entries = manifest.functions(assignment) if assignment is not None and assignment in REGISTRY_ASSIGNMENTS else ()
    return {e.defined_name: e.cell for e in entries if e.cell in broken}


def _self_check_blamed(problem: Problem, broken: dict[str, CellError], assignment: str | None) -> Problem:
    """A visible self-check's failure whose NameError names a function of a cell that did not run: that cell is why
    (the notebook's helper, seeing its own line raise, says its own code failed); what it printed stays, folded."""
    named = NAME_NOT_DEFINED.search(problem.text)
    cell = _broken_functions(broken, assignment).get(named.group(1)) if named else None
    if cell is not None:
        cause = _not_run(cell, broken)
        return Problem(f"your self-check could not call `{named.group(1)}`: {cause}{SEE_FIX_FIRST}",
                       cause, ProblemKind.NOT_JUDGED, quoted=problem.quoted or problem.text)
    if problem.error == "NameError":
        return dataclasses.replace(problem, text=f"{problem.text} (the answer cell '{next(iter(broken))}' did not "
                                                 f"run: see \"Fix this first\" above)")
    return problem


def _contract_blamed(problem: Problem, broken: dict[str, CellError], test_id: str) -> Problem:
    """The contracts test's failing case of a function its broken answer cell never defined: not judged, for that
    cell's reason (not 'keep the name': the name is the template's, the cell did not run)."""
    step = problem.call.lines[0] if problem.call is not None and problem.call.lines else None
    function = step.function.split(".")[0] if isinstance(step, Step) else None
    cell = _broken_functions(broken, REGISTRY[test_id].assignment).get(function or "")
    if cell is None or not problem.text.startswith(probe_helpers.not_defined(function or "")):
        return problem
    return _not_judged(_not_run(cell, broken))


def _summary_said(tests: list[GradedTest]) -> list[GradedTest]:
    """The summary cell's failure as the checks above it that failed, each said in its own row: its AssertionError
    repeats their every failure in one line (kept whole, folded, for a failure no row above shows)."""
    failed = [f"`{t.cell_id}`" for t in tests if not t.hidden and not t.passed and t.problems
              and t.cell_id != SUMMARY_CELL]
    if not failed:
        return tests
    return [dataclasses.replace(t, problems=[dataclasses.replace(
                p, text=f"it fails while a visible check above fails: here {words.listed(failed)} (each failure is "
                        f"said in its own row)", quoted=p.quoted or p.text) for p in t.problems])
            if t.cell_id == SUMMARY_CELL and not t.passed else t for t in tests]


def _defined_below_said(tests: list[GradedTest], notes: list[Note], executed_notebook: str | None
                        ) -> tuple[list[GradedTest], list[Note]]:
    """A NameError for a name only a cell below defines (a helper or a constant written under its use): Run All
    reaches the cell that needed it first, so the page says where the name is defined and above what to move it
    (Jupyter says only that it is not defined). Said once a test, by its first problem naming it: in a visible
    check's row (move it above the check), a hidden test's (above its answer cell), and an answer cell's "Fix this
    first" (above that cell), whose not-judged problems it explains."""
    if not executed_notebook or not any("is not defined" in p.text for t in tests for p in t.problems):
        return tests, notes
    nb = executed(executed_notebook)
    cells = [(index, cell) for index, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    where = {grade_id(cell): index for index, cell in cells if grade_id(cell)}

    def hint(text: str, index: int, above: str) -> str | None:
        named = NAME_NOT_DEFINED.search(text)
        below = _binding(cells, named.group(1), index, len(nb.cells)) if named else []
        return (f"`{named.group(1)}` is defined only below, in {cell_label(nb, below[0])}, which Run All runs after "
                f"{above}: move it above {'this check' if above == 'this check' else 'that cell'}"
                ) if named and below else None

    def said(test: GradedTest) -> GradedTest:
        if test.passed or test.cell_id == SUMMARY_CELL or test.cell_id not in where:
            return test
        above = f"the answer cell '{REGISTRY[test.cell_id].answer_cell}'" if test.cell_id in REGISTRY else \
            "this check"
        problems, told = [], False
        for problem in test.problems:
            found = None if told or problem.kind in (ProblemKind.NOT_JUDGED, ProblemKind.MORE) else \
                hint(problem.text, where[test.cell_id], above)
            told = told or found is not None
            problems.append(dataclasses.replace(problem, text=f"{problem.text} ({found})") if found else problem)
        return dataclasses.replace(test, problems=problems)

    def noted(note: Note) -> Note:
        found = hint(note.quoted or note.text, note.cell, cell_label(nb, note.cell)) \
            if note.kind == NoteKind.BROKEN_CELL and note.cell is not None else None
        return dataclasses.replace(note, text=f"{note.text} ({found})") if found else note
    return [said(t) for t in tests], [noted(n) for n in notes]


def visible_problem(error: dict) -> Problem:
    """A visible self-check's failure: the exception its cell raised, or the failures it printed without raising
    (the released helpers report every failure and go on, so Run All reaches the end)."""
    if error.get("ename"):
        return Problem(f"raised {error['ename']}: {error['text']}", kind=ProblemKind.RAISED, error=error["ename"],
                       quoted=error.get("quoted"))
    return Problem(f"your self-check reported: {error['text']}", kind=ProblemKind.SELF_CHECK,
                   quoted=error.get("quoted"))


def _memory_note(tests: list[GradedTest], limits: Limits) -> list[Note]:
    """A MemoryError is the memory limit at work: say so once, naming the cells, so the report shows it."""
    cells = [t.cell_id for t in tests
             if any(p.error == "MemoryError" or "MemoryError" in p.text for p in t.problems)]
    if not cells:
        return []
    return [Note(NoteKind.MEMORY, f"your code ran out of memory in {', '.join(cells)}: the grader allows each "
                 f"notebook {settings.size(limits.memory_bytes)}; look for an array far larger than the inputs need")]


STOPPING = {"kernel_died", "flood"}          # events that end the run where they happen (with a stopped timeout)


def _why_no_answer(events) -> str:
    for event in events:
        if event.get("event") == "notebook_time_limit":
            return "not run: the notebook reached its time limit before this test"
        if event.get("event") in STOPPING or event.get("stopped"):
            return f"not run: the notebook was stopped in {event.get('where', 'a cell')} (see the notes above)"
    return ("not run: the test produced no answer (its cell was interrupted or sent nothing the grader could read; "
            "see the notes above)")


def _unreadable_data(event: dict, where: str, limits: Limits) -> str:
    """What a refused frame was, in the student's terms: it came from their notebook's code (student code can write
    to the grader's channel; the grader's own calls never send such data), so it is theirs, never the grader's."""
    if event.get("reason") == codec.TOO_LARGE:
        announced, cap = settings.size(int(event.get("bytes") or 0)), settings.size(limits.max_frame_bytes)
        what = (f"{where} sent the grader more data at once than it reads from one result or output ({announced} "
                f"announced, at most {cap} and {codec.MAX_NODES:,} values, {codec.MAX_CONTAINERS:,} of them lists or "
                f"objects, nested at most {codec.MAX_DEPTH} deep)")
    else:
        what = f"your notebook sent the grader data it could not read, in {where}"
    if event.get("stopped"):
        return (f"{what}; nothing after it could be read, so the notebook stopped there: the cells after it count for "
                f"nothing (this run is your attempt; the notebook is not run again)")
    return f"{what}; it was ignored and counts for nothing"


PRINTING = frozenset({"print", "display", "set_printoptions", "printoptions"})


def _too_long_guess(executed_notebook: str | None, cell) -> str:
    """What likely kept a cell past its time: a loop that never ends, or, in a cell that prints, a large array printed
    whole (numpy formats every entry once its print threshold is raised, millions of them in seconds each)."""
    nb = executed(executed_notebook) if executed_notebook and isinstance(cell, int) else None
    source = nb.cells[cell].source if nb is not None and 0 <= cell < len(nb.cells) else ""
    try:
        tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        tokens = []
    if any(a in PRINTING and b == "(" for a, b in zip(tokens, tokens[1:], strict=False)):
        return "an infinite loop, or a large array printed whole? print its .shape or a few rows instead"
    return "an infinite loop?"


def _describe_events(events: list[dict[str, Any]], limits: Limits, executed_notebook: str | None = None
                     ) -> list[Note]:
    notes = []
    for event in events:
        kind, where, made = event.get("event"), str(event.get("where", "a cell")), len(notes)
        guess = _too_long_guess(executed_notebook, event.get("cell")) if kind == "cell_timeout" else ""
        if kind == "kernel_died":
            notes.append(Note(NoteKind.CRASHED, f"the notebook's process died while running {where} (os._exit, "
                              f"a crash, a killed process or a resource limit); the notebook stopped there, as Run "
                              f"All stops in Jupyter: the cells after it were not run"))
        elif kind == "cell_timeout" and not event.get("stopped"):
            notes.append(Note(NoteKind.TIMEOUT, f"{where} ran longer than {event.get('seconds')} s and was "
                              f"interrupted ({guess}), as Jupyter's interrupt stops a cell; the notebook "
                              f"went on with the next cell (a function of yours that was looping raises TimeoutError "
                              f"if called again in this run)"))
        elif kind == "cell_timeout":
            notes.append(Note(NoteKind.TIMEOUT, f"{where} ran longer than {event.get('seconds')} s and was "
                              f"stopped ({guess}): it went on when interrupted, so the notebook stopped "
                              f"there and the cells after it were not run"))
        elif kind == "notebook_time_limit":
            notes.append(Note(NoteKind.TIMEOUT, "the notebook reached its total time limit; tests that had not "
                                                 "run yet score 0"))
        elif kind == "output_truncated":
            notes.append(Note(NoteKind.OUTPUT_CUT, f"{where} printed too much output; the rest was dropped"))
        elif kind == "unreadable_data":
            notes.append(Note(NoteKind.UNREADABLE_DATA, _unreadable_data(event, where, limits)))
        elif kind == "flood":
            notes.append(Note(NoteKind.OUTPUT_FLOOD, f"the notebook sent the grader more than it reads from one "
                              f"notebook ({settings.size(limits.channel_bytes)}, or {limits.channel_cpu_seconds} s "
                              f"of the grader's time to read it); it was stopped in {where}, and the tests that had "
                              f"not run score 0"))
        elif kind == "runner_error":
            notes.append(Note(NoteKind.GRADER_ERROR, "the grader could not finish running the notebook"))
        cell = event.get("cell")
        if len(notes) > made and isinstance(cell, int) and kind != "notebook_time_limit":
            notes[-1] = dataclasses.replace(notes[-1], cell=cell)          # the note just made is about that cell
    return notes
