"""Tools for the course's developers: the benchmark and mutation testing of the hidden tests."""
