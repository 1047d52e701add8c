"""The feedback pages' arrays written once for a class (reports/templating.written): what a page shows is exactly
repr of the float64 list, an equal array written again is the text kept, and what is kept stays bounded."""
import numpy as np

from posenc_autograder.reports import feedback, templating
from posenc_autograder.results import (
    GradedTest,
    InputArray,
    NotebookResult,
    Problem,
    Reading,
    Reproduction,
    Seeded,
    Step,
)

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


def test_a_case_that_reached_the_template_stub_is_a_call_to_run_not_its_inputs_written_out():
    """The student left the stub: the page showed both inputs (126 numbers each) folded in full "to reproduce" a
    NotImplementedError any values raise. Now the lines build each array from its shape and dtype, run as written,
    and no input is written out; a wrong value still gets its exact inputs."""
    drawn = np.random.default_rng(5).normal(size=(3, 7, 6))
    lines = (Step("Layer", (8, 6), {"rng": Seeded(3)}, "layer"), Step("layer.forward", (InputArray(0, (3, 7, 6),
                                                                                              "float64"),)),
             Step("layer.backward", (InputArray(1, (3, 7, 6), "float64"), InputArray(2, (7,), "int64"))),
             Reading("layer.grad_embedding"))
    stub = Problem("forward/backward failed: NotImplementedError: the function is still the template stub",
                   error="NotImplementedError", call=Reproduction(lines), inputs=[drawn.tolist()] * 2 + [None],
                   drawn=True)
    made = templating.snippet(stub)
    assert made["numbers"] == 0 and not made["folded"] and made["needs"] == []
    assert "np.random.default_rng(0).standard_normal((3, 7, 6))" in made["line"]
    assert "np.zeros((7,), dtype=np.int64)" in made["line"]

    class Layer:                                         # the template's stub
        def __init__(self, *args, **kwargs):
            pass

        def forward(self, X):
            raise NotImplementedError

    namespace = {"np": np, "Layer": Layer}
    try:
        exec(made["line"], namespace)                    # noqa: S102 - the lines the page gives, as written
    except NotImplementedError:
        pass
    else:
        raise AssertionError("the lines did not reach the stub")
    result = NotebookResult("ann", "a", "nb", True, [GradedTest("hidden_b", "b", True, 0.0, 4.0, [stub])], [])
    page = feedback.render(result)
    assert "np.array(" not in page and "Your inputs for this case" not in page and f"{drawn[0, 0, 0]!r}" not in page
    wrong = Problem("grad_embedding is wrong", call=Reproduction(lines), inputs=[drawn.tolist()] * 2 + [None])
    assert templating.snippet(wrong)["numbers"] == 252 and "np.array(" in templating.snippet(wrong)["line"]
