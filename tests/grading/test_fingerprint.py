"""The grader fingerprint covers every module that decides a score, by package."""
import shutil

import pytest

from posenc_autograder.grading import regrade
from posenc_autograder.settings import Limits


class Course:
    def __init__(self, root):
        self.root = root

    def path(self, relative):
        return self.root / relative


@pytest.mark.parametrize("module", ["grading/execute.py", "sandbox/seccomp.py", "probes/codec.py",
                                    "checks/diagnosis.py",
                                    "probes/runner.py", "checks/positional_encoding/reference.py",
                                    "records/evidence.py"])
def test_a_change_to_any_module_that_judges_changes_the_fingerprint(tmp_path, module, monkeypatch):
    package = tmp_path / "posenc_autograder"
    shutil.copytree(regrade.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(regrade.variants, "grader_setting", lambda course: "fixed")
    course = Course(tmp_path)
    before = regrade.grader_fingerprint(course, "a", Limits(), package)
    assert regrade.grader_fingerprint(course, "a", Limits(), package) == before
    with open(package / module, "a") as handle:
        handle.write("\n# a one-line change\n")
    assert regrade.grader_fingerprint(course, "a", Limits(), package) != before


def test_reports_and_devtools_are_not_the_grader(tmp_path, monkeypatch):
    package = tmp_path / "posenc_autograder"
    shutil.copytree(regrade.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(regrade.variants, "grader_setting", lambda course: "fixed")
    before = regrade.grader_fingerprint(Course(tmp_path), "a", Limits(), package)
    with open(package / "devtools" / "bench.py", "a") as handle:
        handle.write("\n# presentation only\n")
    assert regrade.grader_fingerprint(Course(tmp_path), "a", Limits(), package) == before
