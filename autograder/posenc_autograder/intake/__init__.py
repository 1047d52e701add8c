"""Intake: LMS downloads and hand-ins become submissions (collect, LMS naming, safe zips, roster)."""
