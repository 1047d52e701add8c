"""Reports: per-student feedback, the run report, the class dashboard and the LMS import files."""
