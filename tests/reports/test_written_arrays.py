"""The feedback pages' arrays written once for a class (reports/templating.written): what a page shows is exactly
repr of the float64 list, an equal array written again is the text kept, and what is kept stays bounded."""
import numpy as np

from posenc_autograder.reports import templating

CASES = [np.array([0.0]), np.array([-0.0]), np.array([np.nan, np.inf, -np.inf]), np.arange(6).reshape(2, 3),
         np.arange(6.0).reshape(2, 3).T, np.array(1e-300), np.array([1, 2, 3], dtype=np.int64), [[0.1, 0.2]],
         np.zeros((0, 3))]


def test_an_array_is_written_as_repr_writes_its_float64_list():
    for values in CASES + CASES:                  # the second pass reads what the first kept
        assert templating.written(values) == repr(np.asarray(values, dtype=np.float64).tolist())


def test_an_equal_array_met_again_is_the_text_kept_and_the_kept_texts_are_bounded():
    first = templating.written(np.linspace(0.0, 1.0, 7))
    assert templating.written(np.linspace(0.0, 1.0, 7)) is first         # a fresh repr would be a new string
    assert templating.written(np.linspace(0.0, 1.0, 7).reshape(7, 1)) != first     # the shape is part of the key
    for i in range(templating.REPR_CACHE + 5):
        templating.written(np.full(3, float(i)))
    assert len(templating._WRITTEN) <= templating.REPR_CACHE
    assert templating.written(np.linspace(0.0, 1.0, 7)) == first          # written again once forgotten, the same
