"""Chapter 13's numbers about released models equal what their formulas give, and the sentences found
wrong (here and in Chapters 11 and 12) are gone.

The chapter's code cells run in-process with a `glue` that records what would reach the text (well under a second);
each expected value is computed here from the formula and the released setting, independently of the chapter's code.
Sources: Hugging Face Transformers 5.24 (modeling_rope_utils.py, models/gemma4, gpt_oss, ministral3, llama4), the
models' released configurations, DeepSeek-V2's Table 1 and FIRE's reference code.
"""
import math
import re
import warnings

import numpy as np
import pytest
from book_pages import ROOT

CHAPTERS = ROOT / "chapters"
GLUE_ROLE = "{{glue:text}}`{}`"


def prose(name: str) -> str:
    """A chapter's text with every run of whitespace made one space (sentences span lines)."""
    return re.sub(r"\s+", " ", (CHAPTERS / name).read_text())


@pytest.fixture(scope="module")
def glued() -> dict:
    """Run Chapter 13's code cells; return every value the chapter glues into its text."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from myst_nb.core.read import read_myst_markdown_notebook

    notebook = read_myst_markdown_notebook((CHAPTERS / "13_current_models.md").read_text())
    values, namespace = {}, {}

    def record(name, value, display=False):
        values[name] = value

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")          # plt.show() on Agg
        for cell in notebook.cells:
            if cell.cell_type == "code":
                namespace["glue"] = record       # the first cell's stand-in is replaced before each cell
                exec(compile(cell.source, "chapter 13", "exec"), namespace)
    plt.close("all")
    return values


def quoted(name: str) -> bool:
    return GLUE_ROLE.format(name) in (CHAPTERS / "13_current_models.md").read_text()


def rope_frequencies(head_dim, base):
    return base ** (-np.arange(0, head_dim, 2) / head_dim)


def test_longrope_scales_queries_and_keys_each_so_logits_by_the_square(glued):
    """_compute_longrope_parameters' attention_factor multiplies cos and sin (Phi3RotaryEmbedding.forward)."""
    factor = math.sqrt(1 + math.log(131_072 / 4_096) / math.log(4_096))    # Phi-3-mini-128k
    assert glued["ch13_longrope_scale"] == f"{factor:.3f}" == "1.190"
    assert glued["ch13_longrope_logits"] == f"{factor ** 2:.3f}" == "1.417"
    assert quoted("ch13_longrope_logits") and quoted("ch13_longrope_scale")
    text = prose("13_current_models.md")
    assert "scales the logits by $\\sqrt{1 + \\ln s / \\ln L}$" not in text
    assert "default logit scale is" not in text


def test_fire_threshold_and_c_are_learned(glued):
    """FIRE's reference code: threshold = |L_multiplier * init_L| (init_L = 512), c a parameter (init 0.1)."""
    psi = lambda x: math.log(0.1 * x + 1)       # noqa: E731
    assert glued["ch13_fire_below"] == f"{psi(256) / psi(512):.2f}"
    text = prose("13_current_models.md")
    assert "1 for every query beyond the training length" not in text
    assert "threshold $L$ are learned" in text and quoted("ch13_fire_below")


def test_mla_names_which_comparison_it_makes(glued):
    """DeepSeek-V2's Table 1 compares with plain MHA, 2 n_h d_h; V3's own keys are 128 + 64 wide, values 128."""
    heads, latent, rope = 128, 512, 64
    assert glued["ch13_mla_cache"] == latent + rope
    assert glued["ch13_mha_cache"] == f"{2 * heads * 128:,}" == "32,768"
    assert glued["ch13_v3_full_cache"] == f"{heads * (128 + 64 + 128):,}" == "40,960"
    assert glued["ch13_v3_full_ratio"] == f"{40_960 / 576:.0f}"
    text = prose("13_current_models.md")
    assert "Table 1" in text and quoted("ch13_v3_full_cache")
    assert "For DeepSeek-V3's 128 heads of width 128, a token costs" not in text


def budget_crossings() -> dict:
    """First pair whose angle budget L * omega_i stays below 2 pi, per recipe of fig-13-budget."""
    recipes = {"Llama 2": (1e4, 4_096), "Llama 3": (5e5, 8_192), "Code Llama": (1e6, 16_384),
               "Qwen2.5": (1e6, 32_768), "SmolLM3": (5e6, 65_536)}
    return {name: next(i for i, b in enumerate(length * rope_frequencies(128, base)) if b < 2 * math.pi)
            for name, (base, length) in recipes.items()}


WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "eleven": 11, "twelve": 12}


def test_budget_figure_alt_text_counts_the_crossings(glued):
    from myst_nb.core.read import read_myst_markdown_notebook
    notebook = read_myst_markdown_notebook((CHAPTERS / "13_current_models.md").read_text())
    [alt] = [cell.metadata["mystnb"]["image"]["alt"] for cell in notebook.cells
             if cell.metadata.get("mystnb", {}).get("figure", {}).get("name") == "fig-13-budget"]
    crossings = budget_crossings()
    assert crossings["Llama 2"] == 46 and min(crossings, key=crossings.get) == "Llama 3"
    earlier = sorted(crossings["Llama 2"] - at for name, at in crossings.items() if name != "Llama 2")
    said = re.search(r"cross it ([a-z, ]+?) pairs earlier", alt).group(1)
    assert [WORDS[w] for w in re.findall(r"[a-z]+", said) if w in WORDS] == earlier == [6, 7, 9, 11]
    assert "some ten" not in alt and "Llama 3's first" in alt
    others = sorted((at for name, at in crossings.items() if name != "Llama 2"), reverse=True)
    assert glued["ch13_first_arc_llama2"] == 46
    assert glued["ch13_first_arc_others"] == ", ".join(map(str, others[:-1])) + f" and {others[-1]}"
    assert quoted("ch13_first_arc_others")


def test_alibi_heads_act_roughly_like_windows_not_fetching_nothing():
    text = prose("11_putting_together.md")
    assert "fetches nothing from the far context" not in text and "fetches nothing from far away" not in text
    table_row = next(line for line in (CHAPTERS / "11_putting_together.md").read_text().splitlines()
                     if line.startswith("| inputs beyond the training length"))
    assert "roughly like a sliding window" in table_row and "$g/s$" in table_row
    assert "roughly like sliding windows" in text


def test_llama4_scout_scaling_and_chunked_training(glued):
    """Scout's text_config: rope_scaling llama3, factor 16, low = high = 1, original 8,192; Maverick: none."""
    wavelengths = 2 * math.pi / rope_frequencies(128, 500_000.0)
    assert glued["ch13_scout_divided"] == int((wavelengths > 8_192).sum()) == 29
    text = prose("13_current_models.md")
    assert "8K-token training" not in text and "8,192-token chunks in the RoPE layers" in text
    assert "`factor` 16 and `original_max_position_embeddings` 8,192" in text
    assert "Maverick's configuration has no `rope_scaling`" in text and quoted("ch13_scout_divided")


def test_gemma4_global_layers_are_p_rope(glued):
    """_compute_proportional_rope_parameters: int(0.25 * 512 // 2) pairs at base^(-2i/512), the rest 0."""
    rotating = int(0.25 * 512 // 2)
    slowest = 1_000_000.0 ** (-2 * (rotating - 1) / 512)
    assert glued["ch13_gemma4_rotating"] == rotating == 64 and glued["ch13_gemma4_still"] == 256 - 64
    assert glued["ch13_gemma4_wavelength"] == f"{2 * math.pi / slowest:.0f}" == "188"
    assert quoted("ch13_gemma4_wavelength") and "`partial_rotary_factor` 0.25" in prose("13_current_models.md")


def hf_yarn_blend(head_dim, base, original, truncate, beta_fast=32, beta_slow=1):
    """_compute_yarn_parameters' extrapolation weight per pair, written from Transformers 5.24."""
    def correction_dim(rotations):
        return head_dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))
    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, head_dim - 1)
    return 1 - np.clip((np.arange(head_dim // 2) - low) / (high - low), 0, 1)


def test_gpt_oss_ramp_is_unrounded_and_chapter_12_says_rounding_is_a_default(glued):
    """GptOssConfig: yarn, factor 32 from 4,096, truncate False, head_dim 64, rope_theta 150,000."""
    shipped = hf_yarn_blend(64, 150_000.0, 4_096, truncate=False)
    rounded = hf_yarn_blend(64, 150_000.0, 4_096, truncate=True)
    assert glued["ch13_oss_kept"] == int((shipped == 1).sum()) == int((rounded == 1).sum()) == 9
    assert glued["ch13_oss_divided"] == int((shipped == 0).sum()) == 14
    assert glued["ch13_oss_change"] == f"{np.abs(shipped - rounded).max():.2f}" != "0.00"
    assert glued["ch13_oss_logits"] == f"{(0.1 * math.log(32) + 1) ** 2:.3f}"
    assert glued["ch13_sink_total"] == f"{128 / (128 + math.exp(5)):.2f}"
    chapter_12 = prose("12_stretching_context.md")
    sentence = next(s for s in chapter_12.split(". ") if "rounds them outwards" in s)
    assert "by default" in sentence and "`truncate`" in sentence and "gpt-oss" in sentence


def test_mistral_query_temperature_in_every_layer(glued):
    """Ministral3Config: yarn factor 16 from 16,384, llama_4_scaling_beta 0.1; get_llama_4_attn_scale."""
    tau = 1 + 0.1 * math.log(1 + (262_144 - 1) // 16_384)
    assert glued["ch13_mistral_tau"] == f"{tau:.3f}" == "1.277"
    match = lambda gap, n: math.exp(gap) / (math.exp(gap) + n - 1)     # noqa: E731
    assert glued["ch13_mistral_tuned"] == f"{match(12 * tau, 262_144):.2f}"
    assert glued["ch13_mistral_plain"] == f"{match(12, 262_144):.2f}"
    text = prose("13_current_models.md")
    assert "The RoPE layers need no such correction" not in text
    assert "In Llama 4 the RoPE layers need no such correction" in text and "`llama_4_scaling_beta`" in text
    assert quoted("ch13_mistral_tau")
