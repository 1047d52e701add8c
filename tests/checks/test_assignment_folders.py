"""Each assignment is one folder, checks/<assignment>/; its reference.py is a leaf the book imports without the
hidden tests (imports of numpy, the standard library and earlier references only)."""
import ast
import json
import pathlib
import subprocess
import sys

import posenc_autograder.checks as checks

CHECKS = pathlib.Path(checks.__file__).parent
ASSIGNMENTS = sorted(p.name for p in CHECKS.iterdir() if (p / "manifest.py").is_file())
REFERENCES = [f"posenc_autograder.checks.{a}.reference" for a in ASSIGNMENTS]


def test_importing_every_reference_loads_no_hidden_test():
    ours = "sorted(m for m in sys.modules if m.startswith('posenc_autograder'))"
    code = (f"import json, sys, posenc_autograder\nbefore = {ours}\n" + "".join(f"import {n}\n" for n in REFERENCES)
            + f"print(json.dumps(sorted(set({ours}) - set(before))))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True).stdout)
    packages = ["posenc_autograder.checks"] + [f"posenc_autograder.checks.{a}" for a in ASSIGNMENTS]
    assert loaded == sorted(packages + REFERENCES)


def test_a_reference_imports_numpy_the_standard_library_and_references_only():
    for assignment in ASSIGNMENTS:
        tree = ast.parse((CHECKS / assignment / "reference.py").read_text())
        imported = {node.module if isinstance(node, ast.ImportFrom) else alias.name
                    for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in node.names}
        ours = {name for name in imported if name.startswith("posenc_autograder")}
        assert all(name.endswith(".reference") for name in ours), (assignment, ours)
        assert imported - ours <= {"__future__", "math", "numpy"}, (assignment, imported)


STAND_IN_FILES = sorted(CHECKS.glob("*/stand_ins.py"))


def test_an_assignment_s_stand_ins_are_its_own_and_import_numpy_only():
    """Shipped into the sandbox beside the probes: the standard library and numpy only, no reference, no judge."""
    assert STAND_IN_FILES, "no assignment ships a stand-in module"
    for path in STAND_IN_FILES:
        imported = {node.module if isinstance(node, ast.ImportFrom) else alias.name
                    for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
        assert imported <= set(sys.stdlib_module_names) | {"__future__", "numpy"}, (path, imported)


def test_every_stand_in_kind_an_input_names_is_shipped_and_loaded_before_student_code():
    from posenc_autograder.checks import REGISTRY
    from posenc_autograder.grading.pipeline import probe_files
    from posenc_autograder.probes import helpers
    from posenc_autograder.probes.shell_runner import probe_modules

    shipped = probe_files()
    task = {test_id: test.task_entry() for test_id, test in REGISTRY.items()}
    named = helpers.stand_in_assignments([entry["data"] for entry in task.values()])
    assert named == {path.parent.name for path in STAND_IN_FILES}  # every assignment's own kinds are in use
    for assignment in named:
        module = helpers.shipped_stand_ins(assignment)
        assert shipped[f"{module}.py"] == (CHECKS / assignment / "stand_ins.py").read_text()
        assert module in probe_modules(task)
    assert "table" not in helpers.STAND_INS and "shift" not in helpers.STAND_INS   # the probes keep shared kinds only
