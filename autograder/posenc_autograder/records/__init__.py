"""Records: the nbgrader gradebook, stored results, nbgrader's files and the integrity evidence."""
