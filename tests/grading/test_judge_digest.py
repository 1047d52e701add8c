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


def test_a_tests_inline_inputs_leave_the_judge_digest_and_what_they_call_moves_it(tmp_path):
    """Each test's inputs are digested on their own (JobDigests.tests): a changed inputs= re-probes that test alone,
    not every test whose judge the package digest stands for; the code an inputs function calls still counts."""
    package = tmp_path / "posenc_autograder"
    shutil.copytree(regrade.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "portal", "devtools"))
    before = regrade.judge_digest(package)
    source = (package / CHECK).read_text()
    inline = "inputs=lambda: _table_calls((3, 4), (7, 10), (60, 34))"
    assert inline in source
    (package / CHECK).write_text(source.replace(inline, "inputs=lambda: _table_calls((3, 4), (7, 10), (5, 6))"))
    assert regrade.judge_digest(package) == before
    called = "tables=[call(seq_len, d_model) for seq_len, d_model in cases]"
    assert called in source
    (package / CHECK).write_text(source.replace(called, called.replace("in cases]", "in cases[:1]]")))
    assert regrade.judge_digest(package) != before
