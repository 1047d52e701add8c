"""Probes: the only code of the grader that runs next to student code.

Everything in this package is shipped into the grading sandbox, with every assignment's stand-in kinds
(checks/<assignment>/stand_ins.py, as stand_ins_<assignment>), so it imports nothing but numpy and its own modules
(tests enforce this): no reference solutions, no judges, no expected values.
Each probe is `probe(ns, data) -> observations`, where `ns` is the student's namespace, `data`
are inputs prepared by the trusted side, and observations are plain data.
"""
