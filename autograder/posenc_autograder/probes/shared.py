"""The shared probe set: the notebook's hidden tests again, on the course-wide inputs every student gets.

Never graded: what comes back is each student's behaviour fingerprint, compared across the class
by the integrity report (posenc_autograder.integrity), and seen by no student.
"""
from __future__ import annotations

from .runner import record


def run_shared(ns: dict, data: dict) -> dict:
    """{cell id: the record its own probe makes} for every entry of the shared set."""
    return {cell_id: record(entry, ns) for cell_id, entry in data["entries"].items()}
