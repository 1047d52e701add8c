"""A hidden test's points weigh its outcome but do not make it: the judge digest a regrade keeps outcomes by
(grading.regrade.judge_digest) stays when only points change, and moves with any change of what judges."""
import shutil

from posenc_autograder.grading import regrade

CHECK = "checks/positional_encoding/sinusoidal.py"


def test_points_leave_the_judge_digest_and_a_tolerance_moves_it(tmp_path):
    package = tmp_path / "posenc_autograder"
    shutil.copytree(regrade.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "portal", "devtools"))
    before = regrade.judge_digest(package)
    source = (package / CHECK).read_text()
    assert 'points=4' in source
    (package / CHECK).write_text(source.replace("points=4", "points=5", 1) + "\n# a comment\n")
    assert regrade.judge_digest(package) == before
    assert "NORM_TOLERANCE = 1e-6" in source
    (package / CHECK).write_text(source.replace("NORM_TOLERANCE = 1e-6", "NORM_TOLERANCE = 1e-5"))
    assert regrade.judge_digest(package) != before
