"""Test markers, assigned by folder and by fixture: `make test-fast` runs everything that is none of them.

tests/end_to_end/ grades notebooks and runs nbgrader (slow); a test that uses the built book, Chromium or
PostgreSQL is marked by its fixture (tests/book/'s source checks stay fast). Unit tests live in tests/<stage>/,
mirroring the grader package's folders. `make test` runs them all on two workers (pytest-xdist, --dist
loadgroup): the tests that use the built book are one group, so it is built once into one _build; the ones
that use PostgreSQL another; every other file runs whole on one worker, so its module fixtures are made once.
"""
import pytest

BY_FIXTURE = {"book_build": "book", "browser": "browser", "browser_with_scrollbars": "browser",
              "postgres_url": "postgres"}
SLOW_FOLDERS = {"end_to_end"}
SHARED_BY_GROUP = {"book_build": "book", "postgres_url": "postgres"}   # session fixtures one worker must own


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, marker in BY_FIXTURE.items():
            if fixture in fixtures:
                item.add_marker(getattr(pytest.mark, marker))
        if SLOW_FOLDERS & set(item.path.parts):
            item.add_marker(pytest.mark.slow)
        shared = [group for fixture, group in SHARED_BY_GROUP.items() if fixture in fixtures]
        group = shared[0] if shared else item.nodeid.split("::", 1)[0]
        item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False):         # a pytest-xdist worker under --dist loadgroup
            _in_group(item, group)


def _in_group(item, group: str) -> None:
    """The '@<group>' suffix of the node id by which xdist's loadgroup scheduler keeps a group on one worker.
    pytest-xdist 3.8 writes it to `_nodeid`, which pytest 9.2 no longer reads (its node ids are structured), so every
    test was scheduled alone: each worker built the book and remade module fixtures (pytest-xdist#1386). Written
    here where pytest reads the id; with a pytest whose id xdist can still suffix, xdist's own hook does it."""
    try:
        from _pytest.nodes import coerce_node_id
    except ImportError:
        return
    if "@" not in item.nodeid.rpartition("]")[2]:
        item._id = coerce_node_id(f"{item.nodeid}@{group}")
