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


def test_each_files_part_is_recalled_by_its_content_and_a_kept_part_not_its_own_is_not_trusted(tmp_path, monkeypatch):
    """The normalised digest of each grading file is kept by the file's content (the package's __pycache__): a points
    change parses that file alone and gives the digest a fresh parse gives; an edited kept entry is parsed again."""
    package = tmp_path / "posenc_autograder"
    shutil.copytree(regrade.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "portal", "devtools"))
    before = regrade.judge_digest(package)
    parsed = []
    real_parse = regrade.ast.parse
    monkeypatch.setattr(regrade.ast, "parse", lambda data, *a, **k: parsed.append(data) or real_parse(data, *a, **k))
    source = (package / CHECK).read_text()
    (package / CHECK).write_text(source.replace("NORM_TOLERANCE = 1e-6", "NORM_TOLERANCE = 1e-5"))
    moved = regrade.judge_digest(package)
    assert moved != before and len(parsed) == 1                 # the changed file alone
    kept = package / regrade.PARTS_FILE
    kept.unlink()
    regrade._normalised_digest.cache_clear()
    assert regrade.judge_digest(package) == moved               # what a fresh parse of every file gives
    (package / CHECK).write_text(source)
    regrade._normalised_digest.cache_clear()
    parts = regrade.json.loads(kept.read_bytes())
    forged = dict.fromkeys(parts["parts"], "0" * 64)             # every file said to be something else
    kept.write_text(regrade.json.dumps({"parts": forged, "sha256": "edited"}))
    assert regrade.judge_digest(package) == before
    kept.write_text(regrade.json.dumps({"parts": forged, "sha256": regrade._checksum(forged)}))
    regrade._normalised_digest.cache_clear()
    assert regrade.judge_digest(package) != before              # (forged with its checksum right, it would be used)


def test_the_judge_and_inputs_digests_of_a_run_parse_each_grading_file_once_between_them(tmp_path, monkeypatch):
    """A fresh copy of the course keeps no parts: a run's two digests share one parse of each grading file (the old
    code parsed every file once for each), and each is what it is when worked out alone."""
    package = tmp_path / "posenc_autograder"
    shutil.copytree(regrade.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__", "portal", "devtools"))
    monkeypatch.setattr(regrade, "_OTHER_HALF", {})          # nothing another test of this process parsed
    parsed = []
    real_parse = regrade.ast.parse
    monkeypatch.setattr(regrade.ast, "parse", lambda data, *a, **k: parsed.append(data) or real_parse(data, *a, **k))
    both = regrade.judge_digest(package), regrade.inputs_digest(package)
    assert sorted(parsed) == sorted(path.read_bytes() for path in regrade.grading_files(package))
    for kept in (regrade.PARTS_FILE, regrade.INPUTS_PARTS_FILE):
        (package / kept).unlink()
    regrade._normalised_digest.cache_clear()
    monkeypatch.setattr(regrade, "_OTHER_HALF", {})
    assert regrade.inputs_digest(package) == both[1]
    monkeypatch.setattr(regrade, "_OTHER_HALF", {})
    assert regrade.judge_digest(package) == both[0]
