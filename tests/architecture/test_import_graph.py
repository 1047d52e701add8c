"""The package's folders are the pipeline's stages: imports point down the stages, never back up, and no
module imports itself through others (no cycle, not even through an import inside a function)."""
import ast
import functools
import pathlib

import posenc_autograder

PACKAGE = pathlib.Path(posenc_autograder.__file__).parent
# Earlier stages first; a module may import its own stage and any earlier one.
# notebook.py is the checks' in-process front (what solution notebooks' hidden cells call).
STAGES = ["course", "settings", "results", "words", "csvsafe", "progress", "probes", "checks", "notebook", "authoring",
          "intake",
          "sandbox",
          "grading", "records", "reports", "integrity", "orchestration", "portal", "devtools", "cli", "__main__"]


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: pathlib.Path) -> set[str]:
    """Every posenc_autograder module `path` imports, anywhere in the file (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("posenc_autograder")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if base.startswith("posenc_autograder"):
                found.add(base)
                found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


@functools.cache                 # both tests read the same graph: the package is parsed once a run
def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in imports_of(path) if m in modules and m != name} for name, path in modules.items()}


def stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def package_edges(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Drop edges from a package's __init__ to its own modules (importing a package runs its __init__)."""
    return {v: {w for w in ws if not w.startswith(v + ".")} for v, ws in edges.items()}


def test_no_import_cycle():
    assert cycles(package_edges(graph())) == []


def test_imports_point_down_the_stages():
    assert upward_imports(graph()) == []


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    upward = []
    for module, targets in edges.items():
        here = stage(module)
        for target in targets:
            there = stage(target)
            if "__init__" in (here, there) or STAGES.index(there) <= STAGES.index(here):
                continue
            upward.append(f"{module} -> {target}")
    return sorted(upward)


def test_the_checks_find_a_planted_cycle_and_an_upward_import():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    planted = {"posenc_autograder.checks.base": {"posenc_autograder.reports.feedback"},
               "posenc_autograder.orchestration.grade": {"posenc_autograder.reports.feedback"}}
    assert upward_imports(planted) == ["posenc_autograder.checks.base -> posenc_autograder.reports.feedback"]

