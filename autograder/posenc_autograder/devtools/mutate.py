"""`make mutate`: how good are the hidden tests? Mutants of each assignment's reference, graded like students.

    python -m posenc_autograder mutate [--sample N] [--assignment NAME] [--course PATH]

Each mutant changes one thing in the syntax tree of one assignment's reference.py (an operator, a comparison,
a constant, a slice bound, sin for cos, max for min, a sign, a dropped statement). It stands in for a student:
the solution notebooks' functions are replaced by the mutant's, and every hidden test of the
course grades them (the judges keep the real reference). A mutant whose functions answer a broad
battery of calls on the student-facing API exactly as the original does is *equivalent* (it
changed nothing the spec can see; the battery is each assignment's mutation_battery.py) and is left out of
the score. Printed: killed / non-equivalent, in all and per assignment, and every surviving mutant.
"""
from __future__ import annotations

import ast
import copy
import dataclasses
import functools
import importlib.util
import math
import pathlib
import sys
import types
import warnings
from typing import Callable, Iterator

import nbformat
import numpy as np

from posenc_autograder.checks import ASSIGNMENT_PACKAGES, REGISTRY, manifest
from posenc_autograder.course import Course, course_for_command, nbgrader_meta
from posenc_autograder.notebook import run_check
from posenc_autograder.probes.calls import contract_target
from posenc_autograder.probes.helpers import argument, to_plain


def assignment_modules(name: str) -> list:
    """checks/<assignment>/<name>.py of every assignment that has one."""
    names = [f"{package.__name__}.{name}" for package in ASSIGNMENT_PACKAGES]
    return [importlib.import_module(n) for n in names if importlib.util.find_spec(n) is not None]


def reference_sources() -> dict[str, str]:
    """Each assignment's reference module (checks/<assignment>/reference.py): path in the package -> source."""
    modules = assignment_modules("reference")
    return {module.__name__.replace(".", "/") + ".py": pathlib.Path(module.__file__).read_text() for module in modules}


def student_api(module: dict) -> dict[str, str]:
    """Student-facing name -> its name in a reference module's namespace, from every assignment's manifest
    (functions the module does not define or import are left as the solution wrote them)."""
    api = {}
    for package in ASSIGNMENT_PACKAGES:
        for entry in manifest.functions(package.__name__.rsplit(".", 1)[-1]):
            name = entry.reference if entry.reference is not None else entry.defined_name
            if name and name in module:
                api[entry.defined_name] = name
    return api


SWAPPED_OPERATORS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.Pow: ast.Mult,
                     ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.MatMult: ast.Mult,
                     ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                     ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.And: ast.Or, ast.Or: ast.And,
                     ast.USub: ast.UAdd}
SWAPPED_NAMES = {"sin": "cos", "cos": "sin", "max": "min", "min": "max", "sum": "mean", "mean": "sum",
                 "abs": "negative", "exp": "exp2", "log": "log2", "floor": "ceil", "ceil": "floor",
                 "zeros": "ones", "zeros_like": "ones_like"}


@dataclasses.dataclass(frozen=True)
class Mutant:
    number: int
    line: int
    change: str                                  # what was changed, as code: "old -> new"
    apply: Callable[[ast.Module], None]          # edits a fresh copy of the tree in place
    file: str = ""                               # the reference module it mutates


def _node_at(tree: ast.Module, index: int) -> ast.AST:
    return list(ast.walk(tree))[index]


def _edit(index: int, edit: Callable[[ast.AST], None]) -> Callable[[ast.Module], None]:
    return lambda tree: edit(_node_at(tree, index))


def _set(field: str, value_of: Callable[[ast.AST], object]):
    return lambda node: setattr(node, field, value_of(node))


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant) and \
        isinstance(statement.value.value, str)


def _shifted(bound: ast.expr, by: int) -> ast.expr:
    return ast.BinOp(left=copy.deepcopy(bound), op=ast.Add() if by > 0 else ast.Sub(), right=ast.Constant(1))


def _candidate_edits(node: ast.AST) -> Iterator[tuple[str, Callable[[ast.AST], None]]]:
    """(what it becomes, how) for each one-step change of this node."""
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp)) and type(node.op) in SWAPPED_OPERATORS:
        new = SWAPPED_OPERATORS[type(node.op)]
        yield new.__name__, _set("op", lambda n: new())
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in SWAPPED_OPERATORS:
                new = SWAPPED_OPERATORS[type(op)]
                yield new.__name__, lambda n, i=i, new=new: n.ops.__setitem__(i, new())
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        for value in {node.value + 1, node.value - 1, node.value * 2} - {node.value}:
            yield repr(value), _set("value", lambda n, v=value: type(n.value)(v))
    elif isinstance(node, ast.Attribute) and node.attr in SWAPPED_NAMES:
        yield SWAPPED_NAMES[node.attr], _set("attr", lambda n: SWAPPED_NAMES[n.attr])
    elif isinstance(node, ast.Slice):
        for field in ("lower", "upper"):
            if getattr(node, field) is not None and not isinstance(getattr(node, field), ast.Constant):
                for by in (1, -1):
                    yield f"{field} {by:+d}", _set(field, lambda n, f=field, by=by: _shifted(getattr(n, f), by))
    for field in ("body", "orelse"):
        statements = getattr(node, field, None)
        if isinstance(statements, list) and isinstance(node, (ast.FunctionDef, ast.If, ast.For)):
            for i, statement in enumerate(statements):
                if not _is_docstring(statement):
                    yield f"drop `{ast.unparse(statement).splitlines()[0]}`", \
                        lambda n, f=field, i=i: getattr(n, f).__setitem__(i, ast.Pass())


def mutants(source: str, file: str = "") -> list[Mutant]:
    tree = ast.parse(source)
    found = []
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            continue
        for new, edit in _candidate_edits(node):
            old = ast.unparse(node).splitlines()[0] if isinstance(node, ast.expr) else ""
            change = new if new.startswith("drop") else f"`{old}`: {new}"
            found.append(Mutant(len(found), getattr(node, "lineno", 0), change, _edit(index, edit), file))
    return found


def mutant_module(source: str, mutant: Mutant | None) -> dict:
    """The reference module's namespace with the mutation applied (None: the original)."""
    tree = ast.parse(source)
    if mutant is not None:
        mutant.apply(tree)
        ast.fix_missing_locations(tree)
    module = {"__name__": "posenc_reference_mutant"}
    exec(compile(tree, "<reference mutant>", "exec"), module)  # noqa: S102 - our own reference, mutated
    return module


# --- the student stand-in -------------------------------------------------------------------------

def solution_source(course: Course) -> str:
    """The code of every solution notebook (answer and given cells, no test cells)."""
    cells = []
    for assignment in course.assignments():
        for name in course.notebooks(assignment):
            nb = nbformat.read(course.source_notebook(assignment, name), as_version=4)
            cells += [c.source for c in nb.cells if c.cell_type == "code" and not nbgrader_meta(c).get("grade")]
    return "\n\n".join(cells)


def student_namespace(solution: str, module: dict) -> dict:
    """The solutions, with the student-facing functions taken from the (mutated) reference module."""
    namespace: dict = {"__name__": "__student__"}
    exec(_compiled(solution), namespace)  # noqa: S102 - the course's own solutions
    namespace.update({student: module[ref_name] for student, ref_name in student_api(module).items()})
    return namespace


@functools.lru_cache(maxsize=4)
def _compiled(solution: str) -> types.CodeType:
    """The solutions compiled once a run: every mutant's every hidden test runs them in a fresh namespace, and
    compiling them each time was two thirds of a run."""
    return compile(solution, "<solutions>", "exec")


# --- equivalence on the spec: a battery of calls on the student-facing API -----------------------

def spec_battery() -> list[Callable[[dict], object]]:
    """Calls of the student-facing API over the spec's domain, broader than the hidden tests' inputs: each
    assignment's mutation_battery.battery(), then every manifest function on its contracts call."""
    return [call for module in assignment_modules("mutation_battery") for call in module.battery()] + manifest_battery()


def manifest_battery() -> list[Callable[[dict], object]]:
    """Every manifest function on its contracts call: a function added to a manifest is in the battery at once."""
    calls = []
    for package in ASSIGNMENT_PACKAGES:
        for entry in manifest.functions(package.__name__.rsplit(".", 1)[-1]):
            if entry.contract is not None:
                calls.append(lambda ns, name=entry.name, c=entry.contract(): _called(ns, name, c))
    return calls


def _called(ns: dict, name: str, c: dict):
    """What the function (or member) `name` returns for the call record c, built as the contracts probe builds it."""
    target = contract_target(ns, name, c)
    if c.get("attribute"):
        return target
    return target(*[argument(a) for a in c["args"]], **{k: argument(v) for k, v in c["kwargs"].items()})


def _outcome(call, namespace):
    try:
        return to_plain(call(namespace))
    except Exception as exc:  # noqa: BLE001 - an exception is part of the behaviour
        return f"raised {type(exc).__name__}"


def same(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return a.shape == b.shape and bool(np.all((a == b) | np.isclose(a, b, rtol=1e-12, atol=1e-12)
                                                  | (np.isnan(a) & np.isnan(b))))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12) or (math.isnan(a) and math.isnan(b))
    return type(a) is type(b) and a == b


# --- grading ---------------------------------------------------------------------------------------

@dataclasses.dataclass
class Verdict:
    mutant: Mutant
    status: str                  # "killed" (by the test named), "survived", "equivalent", "broken"
    detail: str = ""


def expected_outcomes(source: str, solution: str, battery) -> list:
    """What the unmutated reference gives for each call of the battery, the calls made in one namespace in turn as
    judge_mutant makes a mutant's (built again for each call, the solutions ran 700 more times a run)."""
    namespace = student_namespace(solution, mutant_module(source, None))
    return [_outcome(call, namespace) for call in battery]


def judge_mutant(mutant: Mutant, source: str, solution: str, battery, expected) -> Verdict:
    try:
        module = mutant_module(source, mutant)
    except Exception as exc:  # noqa: BLE001 - a mutant that does not even load is no test of the grader
        return Verdict(mutant, "broken", f"{type(exc).__name__}: {exc}")
    namespace = student_namespace(solution, module)
    if all(same(_outcome(call, namespace), want) for call, want in zip(battery, expected, strict=True)):
        return Verdict(mutant, "equivalent")
    for cell_id in REGISTRY:
        if run_check(cell_id, student_namespace(solution, module)):
            return Verdict(mutant, "killed", cell_id)
    return Verdict(mutant, "survived")


def assignment_of(file: str) -> str:
    """The assignment a reference file belongs to: posenc_autograder/checks/<assignment>/reference.py."""
    return pathlib.PurePosixPath(file).parent.name


def run(course: Course, sample: int | None = None, out=sys.stdout, assignment: str | None = None) -> list[Verdict]:
    """Every mutant of every assignment's reference (or of `assignment`'s only), or `sample` of them, judged."""
    sources = {file: source for file, source in reference_sources().items()
               if assignment is None or assignment_of(file) == assignment}
    if not sources:
        raise SystemExit(f"no reference.py for an assignment named {assignment!r}")
    solution = solution_source(course)
    battery = spec_battery()
    expected = {file: expected_outcomes(source, solution, battery) for file, source in sources.items()}
    chosen = [mutant for file, source in sources.items() for mutant in mutants(source, file)]
    if sample:
        chosen = chosen[:: max(1, len(chosen) // sample)][:sample]
    verdicts = []
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for mutant in chosen:
            verdicts.append(judge_mutant(mutant, sources[mutant.file], solution, battery, expected[mutant.file]))
    if out is not None:
        print(summary(verdicts), file=out)
    return verdicts


def _score(verdicts: list[Verdict]) -> str:
    killed, survived = (sum(v.status == s for v in verdicts) for s in ("killed", "survived"))
    return f"{killed} / {killed + survived} non-equivalent mutants killed" + \
        (f" ({100 * killed / (killed + survived):.1f} %)" if killed + survived else "")


def summary(verdicts: list[Verdict]) -> str:
    counts = {s: sum(v.status == s for v in verdicts) for s in ("killed", "survived", "equivalent", "broken")}
    lines = [f"mutants of the references: {len(verdicts)} ({counts['equivalent']} equivalent on the spec, "
             f"{counts['broken']} do not load)",
             f"mutation score: {_score(verdicts)}"]
    assignments = sorted({assignment_of(v.mutant.file) for v in verdicts})
    lines += [f"  {name}: {len(mine)} mutants, {_score(mine)}" for name in assignments
              if (mine := [v for v in verdicts if assignment_of(v.mutant.file) == name])]
    lines += [f"  survived: {v.mutant.file} #{v.mutant.number} line {v.mutant.line}: {v.mutant.change}"
              for v in verdicts if v.status == "survived"]
    return "\n".join(lines)


def arguments(parser) -> None:
    parser.add_argument("--sample", type=int, help="grade only N mutants spread evenly over the list")
    parser.add_argument("--assignment", help="mutate only this assignment's reference.py")


def run_command(args) -> int:
    verdicts = run(course_for_command(args.course), args.sample, assignment=args.assignment)
    return 1 if any(v.status == "survived" for v in verdicts) else 0

