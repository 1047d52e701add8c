"""posenc-course autograder: trusted reference code, hidden-test checks and the grading pipeline."""
from posenc_autograder import lazy_imports

lazy_imports.defer_iri_grammar()
