"""The test plan: one row per spec bullet, naming the hidden test cells that grade it.

`make release` writes it as autograder/test_plan.csv (committed).
"""
from __future__ import annotations

import csv
import io

from posenc_autograder.authoring.spec_bullets import all_spec_bullets
from posenc_autograder.checks import REGISTRY

COLUMNS = ("bullet_id", "section", "spec_bullet", "assignment", "grade_cell_id", "points")


def plan_rows() -> list[dict]:
    rows = []
    for bullet_id, (section, text) in all_spec_bullets().items():
        for check in sorted(REGISTRY.values(), key=lambda t: (t.assignment, t.id)):
            if bullet_id in check.bullets:
                rows.append(dict(zip(COLUMNS, (bullet_id, section, text, check.assignment, check.cell_id,
                                               f"{check.points:g}"), strict=True)))
    return rows


def render_plan_csv() -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(plan_rows())
    return out.getvalue()

