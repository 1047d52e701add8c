"""A fixture class for the integrity analysis, built in-process (no sandbox): 40 students, planted pairs.

Each student's records are what grading stores: the probes' records on their own variant and on the
shared set, made by the same task entries and probes.runner.record as `make grade`, and their code.
"""
from __future__ import annotations

import re

from notebook_tools import implementation_source, namespace_from, solution_notebook

from posenc_autograder.checks import REGISTRY, variants
from posenc_autograder.checks.positional_encoding.catalogue import (
    ALTERNATIVES,
    MISTAKES,
    attention_variant,
    learned_variant,
    pe_variant,
    rotation_variant,
)
from posenc_autograder.notebook import record_in_process
from posenc_autograder.records.evidence import StudentRecord

SOLUTION = implementation_source(solution_notebook("positional_encoding"))
SECRET = b"fixture-class-secret"
# The slowest probes (long tables, the 1500-row learned layer) add time but no new kind of evidence.
CHECKS = [cid for cid, c in REGISTRY.items() if c.assignment == "positional_encoding"
          and cid not in ("hidden_pe_stability", "hidden_pe_unique_bounded", "hidden_learned_init")]
MISTAKE = {m.name: m.code for m in MISTAKES}
# The catalogue writes every variant of a function from one template that differs in a line; no two
# independent students share twenty identical lines, so here the templates count as course-wide code.
TEMPLATES = "\n\n".join((pe_variant(), learned_variant(), rotation_variant(), attention_variant("pass")))

# A student's own way of writing three functions, distinctive enough to recognise in a copy.
OWN_WORK = '''
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2 == 1:
        raise ValueError("d_model must be even, got %d" % d_model)
    table = np.zeros((seq_len, d_model))
    for pair in range(d_model // 2):
        rate = 1.0 / np.power(10000.0, 2.0 * pair / d_model)
        column = np.arange(seq_len) * rate
        table[:, 2 * pair] = np.sin(column)
        table[:, 2 * pair + 1] = np.cos(column)
    return table


def dot_product_distance(pe):
    gram = np.zeros((pe.shape[0], pe.shape[0]))
    for row in range(pe.shape[0]):
        gram[row] = np.sum(pe[row][None, :] * pe, axis=1)
    return gram


def encoding_statistics(pe):
    centred = pe - pe.mean(axis=0, keepdims=True)
    spread = np.sqrt((centred ** 2).mean(axis=0))
    lengths = np.sqrt((pe ** 2).sum(axis=1))
    return {"mean": float(pe.mean()), "std": float(spread.mean()) if False else float(pe.std()),
            "min_norm": float(lengths.min()), "max_norm": float(lengths.max()),
            "bounded": bool(np.all(np.abs(pe) <= 1.0))}
'''


# Two more students' own ways, for two evasions: a copy run through exec("..."), and a group
# of four verbatim copies (with a rare mistake: the scores scaled by the length, not the width).
OWN_WORK_B = """
def relative_position_matrix(pe, offset):
    n_rows, width = pe.shape
    rotation = np.eye(width)
    for half in range(0, width, 2):
        first, later = pe[0, half:half + 2], pe[offset, half:half + 2]
        sine = later[0] * first[1] - later[1] * first[0]
        cosine = later[1] * first[1] + later[0] * first[0]
        rotation[half:half + 2, half:half + 2] = np.array([[cosine, sine], [-sine, cosine]])
    moved = pe[:n_rows - offset] @ rotation.T
    return rotation, float(np.max(np.abs(moved - pe[offset:])))


def dot_product_distance(pe):
    count = pe.shape[0]
    out = np.empty((count, count))
    for left in range(count):
        for right in range(left, count):
            out[left, right] = out[right, left] = float(np.dot(pe[left], pe[right]))
    return out
"""
OWN_WORK_C = """
def self_attention(X, W_q, W_k, W_v):
    asked, offered, carried = X @ W_q, X @ W_k, X @ W_v
    logits = np.matmul(asked, np.swapaxes(offered, -2, -1))
    logits = logits / np.sqrt(offered.shape[-2])
    logits -= np.max(logits, axis=-1, keepdims=True)
    shares = np.exp(logits)
    shares /= np.sum(shares, axis=-1, keepdims=True)
    return np.matmul(shares, carried)


def dot_product_distance(pe):
    return np.einsum("ik,jk->ij", pe, pe, optimize=False)
"""
# Every result nudged by at most one ulp, so that no answer is bit-identical to the copied one.
ULP_SCALED = """
def _nudged(value):
    if isinstance(value, dict):
        return {k: _nudged(v) for k, v in value.items()}
    if isinstance(value, (float, np.ndarray)) and not isinstance(value, bool):
        return value * (1 - 2 ** -53)
    return value
_unscaled = encoding_statistics
def encoding_statistics(pe):
    return _nudged(_unscaled(pe))
"""


def run_through_exec(code: str) -> str:
    return f"exec({code!r})"


def disguised(code: str, renames: dict[str, str]) -> str:
    """A copy as students disguise one: names changed, functions in another order, comments added."""
    for old, new in renames.items():
        code = re.sub(rf"\b{old}\b", new, code)
    functions = [f for f in re.split(r"\n(?=def |class )", code.strip()) if f.strip()]
    return "\n\n".join(f"# my solution, part {n}\n{f}" for n, f in enumerate(reversed(functions), 1))


def student(name: str, *overrides: str, variant_of: str | None = None) -> StudentRecord:
    """One student's stored record; variant_of: their answers were computed on that classmate's inputs."""
    ns = namespace_from(SOLUTION, *overrides)
    own_variant = variants.seed_for(SECRET, name)
    answered = variants.seed_for(SECRET, variant_of) if variant_of else own_variant
    own = {cid: record_in_process(REGISTRY[cid].task_entry(answered), ns) for cid in CHECKS}
    shared = {cid: record_in_process(REGISTRY[cid].task_entry(None), ns) for cid in CHECKS}
    return StudentRecord(name, "positional_encoding", "positional_encoding", own_variant, own, shared,
                         "\n\n".join((SOLUTION,) + overrides))


PLANTED = {  # pair -> what was planted
    ("ada", "bob"): "copy: renamed variables, reordered functions, added comments",
    ("cem", "dia"): "shared rare mistake (exponent i/d), copied with renamed variables",
    ("eli", "fay"): "shared rare mistake (error as the mean, not the max)",
    ("gus", "hal"): "answers computed on a classmate's variant",
    ("ivo", "jan"): "copy run through exec(\"<code>\") (string constants compiled as code)",
    ("kai", "lia"): "shared rare mistake, every result scaled by (1 - 2**-53): no answer bit-identical",
    **{pair: "one of four verbatim copies with a rare mistake (a group cannot make itself common)"
       for pair in (("mo", "ned"), ("mo", "oli"), ("mo", "pia"), ("ned", "oli"), ("ned", "pia"), ("oli", "pia"))},
}
COMMON_MISTAKES = {"sin and cos swapped": 6, "softmax over the queries": 4}


def fixture_class() -> tuple[list[StudentRecord], dict[str, list[str]]]:
    """40 students: the planted pairs, two common mistakes made independently, and 22 independent others."""
    names = {"ada": (OWN_WORK,),
             "bob": (disguised(OWN_WORK, {"table": "enc", "pair": "k", "rate": "freq", "column": "ang",
                                          "gram": "G", "row": "r", "centred": "dev", "lengths": "norms"}),),
             "cem": (MISTAKE["exponent i/d"],),
             "dia": (disguised(MISTAKE["exponent i/d"], {"omega": "w", "angles": "theta", "pe": "out"}),),
             "eli": (MISTAKE["error as the mean, not the max"],),
             "fay": (MISTAKE["error as the mean, not the max"],),
             "hal": (),
             "ivo": (OWN_WORK_B,),
             "jan": (run_through_exec(OWN_WORK_B),),
             "kai": (MISTAKE["position norms over the wrong axis"],),
             "lia": (MISTAKE["position norms over the wrong axis"], ULP_SCALED),
             **{n: (OWN_WORK_C,) for n in ("mo", "ned", "oli", "pia")}}
    groups: dict[str, list[str]] = {}
    for mistake, count in COMMON_MISTAKES.items():
        groups[mistake] = [f"common{len(names) + i:02d}" for i in range(count)]
        names.update({n: (MISTAKE[mistake],) for n in groups[mistake]})
    used = {"exponent i/d", "error as the mean, not the max", "position norms over the wrong axis",
            "scaled by sqrt(K.shape[0]) (the length, or the batch)", *COMMON_MISTAKES}
    singles = [m.code for m in MISTAKES if m.name not in used and m.failing_check in CHECKS]
    singles += [ALTERNATIVES[a] for a in sorted(ALTERNATIVES)]
    for i in range(40 - len(names) - 1):
        names[f"solo{i:02d}"] = (singles[i],) if i < len(singles) else ()
    records = [student(n, *code) for n, code in names.items()]
    records.append(student("gus", variant_of="hal"))
    return records, groups
