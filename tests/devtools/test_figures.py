"""The README's performance figures are the benchmarks' own: each `<!-- figures: name -->` block of the README is
what the benchmark wrote to autograder/figures/<name>.md, so a figure typed in by hand fails here."""
import pathlib

from posenc_autograder.devtools import figures

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / figures.README).read_text()


def test_every_figures_block_of_the_readme_is_its_benchmarks_file():
    written = figures.written_figures(ROOT)
    in_readme = figures.blocks(README)
    assert set(in_readme) == set(written), "a README block without its file, or a file the README leaves out"
    for name, body in in_readme.items():
        assert body == written[name], f"the README's {name} figures differ from {figures.FIGURES_DIRECTORY}/{name}.md"


def test_publishing_replaces_only_its_own_block(tmp_path):
    text = ("intro 1.0 s\n<!-- figures: one -->\n| old | 9 s |\n<!-- end figures -->\nmiddle\n"
            "<!-- figures: two -->\nkept\n<!-- end figures -->\n")
    (tmp_path / figures.README).write_text(text)
    figures.publish(tmp_path, "one", "| new | 2 s |\n")
    assert (tmp_path / figures.README).read_text() == text.replace("| old | 9 s |", "| new | 2 s |")
    assert figures.written_figures(tmp_path) == {"one": "| new | 2 s |\n"}
