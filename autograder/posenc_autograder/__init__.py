"""posenc-course autograder: trusted reference code, hidden-test checks and the grading pipeline."""
