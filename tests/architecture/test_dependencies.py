"""The grader package declares what it imports: every third-party module a module of posenc_autograder imports
(at its top or inside a function) belongs to a distribution named in autograder/pyproject.toml, so an installed
wheel can run every command, the portal included."""
import ast
import importlib.metadata
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "autograder" / "posenc_autograder"
PROBE_TEMPLATE = re.compile(r"^\{.*\}$")       # f-string module names in code the probes write, not imports
# devtools' benchmarks borrow the test suite's builders from a checkout (tests/support), never from an install
CHECKOUT_ONLY = {path.stem for path in (ROOT / "tests" / "support").glob("*.py")}


def imported_top_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def third_party_imports() -> dict[str, list[str]]:
    """Top-level module name -> the package modules importing it, for modules outside the standard library."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in imported_top_names(path.read_text()):
            if name in sys.stdlib_module_names or name in ("posenc_autograder", "__future__") \
                    or name in CHECKOUT_ONLY or PROBE_TEMPLATE.match(name):
                continue
            found.setdefault(name, []).append(str(path.relative_to(PACKAGE)))
    return found


def declared_distributions() -> set[str]:
    project = tomllib.loads((ROOT / "autograder" / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        requirements.extend(extra)
    return {canonical(re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0]) for r in requirements}


def canonical(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_every_third_party_import_is_a_declared_dependency():
    providers = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    undeclared = {}
    for module, importers in third_party_imports().items():
        distributions = {canonical(d) for d in providers.get(module, [])}
        assert distributions, f"{module!r} (imported by {importers}) is installed by no distribution"
        if not distributions & declared:
            undeclared[module] = (sorted(distributions), importers[:3])
    assert not undeclared, f"imported but not in autograder/pyproject.toml's dependencies: {undeclared}"


def test_the_check_sees_an_undeclared_import():
    assert "uvicorn" in imported_top_names("def serve():\n    import uvicorn.config\n")
    assert canonical("python_multipart") == "python-multipart"
    assert "definitely-not-a-dependency" not in declared_distributions()
