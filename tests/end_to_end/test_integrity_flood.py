"""A copy cannot hide by flooding its own evidence: a verbatim copy that resends one test's record
with 499,000 answers (its evidence once went over the cap, was not written, and the copy was named nowhere; that frame
is now past the channel's caps, refused unread and ignored, so the test's honest record is kept whole), and one that
resends 20,000 (within what grading keeps, too many to compare one by one: named in integrity.html as cut) are both
still paired with the notebook they copied."""
import re

import nbformat
import pytest
from fixture_submissions import ASSIGNMENT, NOTEBOOK, make_course, solved_notebook

from posenc_autograder import cli
from posenc_autograder.course import Course
from posenc_autograder.devtools import bench_floods
from posenc_autograder.grading.shared_probes import SHARED_CELL
from posenc_autograder.integrity.report import REPORT_NAME
from posenc_autograder.orchestration.grade import grade_all
from posenc_autograder.records import evidence as store
from posenc_autograder.settings import Limits

LIMITS = Limits(cell_seconds=30, notebook_seconds=90)
OWN_CODE = '''
def window_scores(table, width=3):
    """A helper of the original student's own: scores of sliding windows over the table's rows."""
    scores = []
    for start in range(0, max(len(table) - width + 1, 1)):
        block = table[start:start + width]
        spread = float(block.max() - block.min()) if len(block) else 0.0
        centre = float(block.mean()) if len(block) else 0.0
        scores.append(round(spread * 7 + centre * 3 - start / 11, 6))
    ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [(i, scores[i]) for i in ranked[:5]], sum(scores) / max(len(scores), 1)
'''


def _flood(answers: int) -> str:
    return bench_floods.FLOOD_CELL.format(targets=["hidden_pe_values"], answers=answers, shared=SHARED_CELL,
                                          answer=bench_floods.ANSWER)


def _notebook(*extra: str):
    nb = solved_notebook()
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "imports")
    nb.cells[at + 1:at + 1] = [nbformat.v4.new_code_cell(source) for source in extra]
    return nb


@pytest.mark.slow
def test_a_copy_that_floods_its_evidence_is_named_and_still_paired(tmp_path):
    course = Course(make_course(tmp_path))
    for student, nb in {"original": _notebook(OWN_CODE), "honest": _notebook(),
                        "big_flood": _notebook(OWN_CODE, _flood(499_000)),
                        "small_flood": _notebook(OWN_CODE, _flood(20_000))}.items():
        target = course.submitted / student / ASSIGNMENT / f"{NOTEBOOK}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(nb, target)
    grade_all(course, jobs=2, limits=LIMITS, quiet=True)
    kept = {r.student: r for r in store.load_class(course, ASSIGNMENT, NOTEBOOK)}
    assert set(kept) == {"original", "honest", "big_flood", "small_flood"}
    assert "hidden_pe_values" in kept["small_flood"].cut
    assert not kept["original"].cut and not kept["honest"].cut and not kept["big_flood"].cut
    assert {a.test for a in kept["big_flood"].answers} == {a.test for a in kept["original"].answers}
    cli.main(["integrity", "--course", str(course.root)])
    page = (course.reports / REPORT_NAME).read_text()
    named = re.search(r"Evidence cut for (\d+) student.*?<ul class=cut>(.*?)</ul>", page, re.S)
    assert named and named[1] == "1" and "small_flood" in named[2] and "big_flood" not in named[2], page[:3000]
    for copier in ("big_flood", "small_flood"):
        assert re.search(rf"href='#pair\d+'>(original · {copier}|{copier} · original)</a>", page), copier
