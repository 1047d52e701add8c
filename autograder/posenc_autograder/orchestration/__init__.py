"""Orchestration, the top stage of a run: grade a class, undo a collect, rebuild feedback after manual grading.
Each calls the stages below it (intake, grading, records, reports) in order; no stage below calls back up."""
