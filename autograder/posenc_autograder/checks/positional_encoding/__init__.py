"""Hidden tests of the core assignment, a module per part of the notebook."""
