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
