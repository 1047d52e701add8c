"""Test markers, assigned in one place: `make test-fast` runs everything that is none of them.

book: builds the Jupyter Book; browser: drives Chromium; postgres: starts a PostgreSQL server;
slow: grades notebooks or runs nbgrader end to end (seconds to minutes each). `make test` runs them all.
"""
import pytest

BY_FIXTURE = {"book_build": "book", "browser": "browser", "postgres_url": "postgres"}
SLOW_FILES = {"test_grading.py", "test_attacks.py", "test_scale.py", "test_wheel.py", "test_mutation.py",
              "test_nbgrader_tools.py", "test_chapters_standalone.py", "test_collect.py", "test_regrade.py",
              "test_run_isolation.py", "test_validate_catalogue.py", "test_integrity.py"}
SLOW_TESTS = {"test_committed_exercises_equal_a_fresh_generation",
              "test_nbgrader_validate_passes_a_solved_notebook_and_flags_an_untouched_one"}


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, marker in BY_FIXTURE.items():
            if fixture in fixtures:
                item.add_marker(getattr(pytest.mark, marker))
        name = getattr(item, "originalname", None) or item.name
        if item.path.name in SLOW_FILES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
