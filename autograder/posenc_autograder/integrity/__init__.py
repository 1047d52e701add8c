"""Evidence of copying for the instructor: behaviour, text and leaked answers, ranked in one report.

Nothing here changes a grade or reaches a student: it reads what grading stored and writes
autograder/reports/integrity.html for a person to judge.
"""
