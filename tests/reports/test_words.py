"""A count in a sentence agrees with its noun."""
from posenc_autograder import words


def test_one_is_singular_and_every_other_count_plural():
    assert words.count(1, "notebook") == "1 notebook"
    assert [words.count(n, "point") for n in (0, 0.5, 2, 4.5)] == ["0 points", "0.5 points", "2 points", "4.5 points"]
    assert words.count(3, "child", "children") == "3 children"
