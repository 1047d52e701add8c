"""The positional_encoding assignment's catalogue: mistakes the hidden tests must catch (each names the tests it
fails and the points it loses) and correct alternatives that must keep full marks (see checks/catalogue.py)."""
from __future__ import annotations

from posenc_autograder.checks.catalogue import Mistake, contract_rule, missing, stubs

PE_TEMPLATE = '''
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("odd")
    i = np.arange(d_model // 2, dtype=np.float64)
    omega = {omega}
    angles = np.arange({first}, {first} + seq_len, dtype=np.float64)[:, None] * omega[None, :]
    {assemble}
'''
INTERLEAVE = """pe = np.empty((seq_len, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe"""
LOG_OMEGA = "np.exp(-2.0 * i / d_model * np.log(10000.0))"


def pe_variant(omega=LOG_OMEGA, first=0, assemble=INTERLEAVE):
    return PE_TEMPLATE.format(omega=omega, first=first, assemble=assemble)


def learned_variant(init="rng.normal(0.0, 0.02, size=(max_seq_len, d_model))",
                    backward="self.grad_embedding = np.zeros_like(self.embedding)\n"
                             "        self.grad_embedding[:self.seq_len] = grad_output.sum(axis=0)\n"
                             "        return grad_output",
                    forward_table="self.embedding", rows=":X.shape[1]"):
    return f'''
class LearnedPositionalEncoding:
    def __init__(self, max_seq_len, d_model, rng=None):
        rng = np.random.default_rng() if rng is None else rng
        self.max_seq_len = max_seq_len
        self.embedding = {init}
        self.frozen = self.embedding.copy()
        self.grad_embedding = np.zeros_like(self.embedding)

    def forward(self, X):
        if X.shape[1] > self.max_seq_len:
            raise ValueError("too long")
        self.seq_len = X.shape[1]
        return X + {forward_table}[None, {rows}]

    def backward(self, grad_output):
        {backward}
'''


def attention_variant(body):
    return f'''
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    {body}
'''


ROTATION_TEMPLATE = '''
def relative_position_matrix(pe, offset):
    L, d = pe.shape
    M = np.zeros((d, d))
    for i in range(d // 2):
        {angle}
        c, s = np.cos(phi), np.sin(phi)
        {place}
    residual = pe[:L - offset] @ M.T - pe[offset:]
    return M, {error}
'''
ANGLE_FROM_DATA = ("phi = np.arctan2(pe[offset, 2*i], pe[offset, 2*i+1]) - "
                   "np.arctan2(pe[0, 2*i], pe[0, 2*i+1])")
PLACE = "M[2*i:2*i+2, 2*i:2*i+2] = [[c, s], [-s, c]]"
MAX_ERROR = "float(np.max(np.linalg.norm(residual, axis=1)))"


def rotation_variant(angle=ANGLE_FROM_DATA, place=PLACE, error=MAX_ERROR):
    return ROTATION_TEMPLATE.format(angle=angle, place=place, error=error)


# The usual port of a PyTorch recipe: every step in float32 (torch's default dtype), cast at the end.
FLOAT32_TABLE = '''
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("odd")
    position = np.arange(seq_len, dtype=np.float32)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float32) * np.float32(-np.log(10000.0) / d_model))
    pe = np.zeros((seq_len, d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe.astype(np.float64)
'''


MISTAKES = [
    # --- the sinusoidal table
    Mistake("concatenated sin | cos",
            pe_variant(assemble="return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)"),
            "hidden_pe_values", "concatenated",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability')),
    Mistake("sin and cos swapped", pe_variant(assemble=INTERLEAVE.replace("np.sin(angles)", "TMP").replace(
        "np.cos(angles)", "np.sin(angles)").replace("TMP", "np.cos(angles)")), "hidden_pe_values", "swapped",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability')),
    Mistake("positions start at 1", pe_variant(first=1), "hidden_pe_values", "start at 1",
            also_fails=('hidden_pe_stability',)),
    Mistake("base 1000", pe_variant(omega="np.exp(-2.0 * i / d_model * np.log(1000.0))"),
            "hidden_pe_values", "base is not 10000",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability')),
    Mistake("exponent i/d", pe_variant(omega="np.exp(-i / d_model * np.log(10000.0))"),
            "hidden_pe_values", "i/d_model instead of 2i/d_model",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability')),
    Mistake("exponent sign flipped", pe_variant(omega="np.exp(2.0 * i / d_model * np.log(10000.0))"),
            "hidden_pe_values", "sign is flipped",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability')),
    Mistake("integer division in the exponent", pe_variant(omega="10000.0 ** -(2 * i // d_model)"),
            "hidden_pe_values", "integer division",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability')),
    Mistake("column index instead of pair index", '''
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError("odd")
    j = np.arange(d_model)
    angles = np.arange(seq_len)[:, None] / 10000.0 ** (2 * j / d_model)
    pe = np.sin(angles)
    pe[:, 1::2] = np.cos(angles[:, 1::2])
    return pe
''', "hidden_pe_values", "column index j instead of the pair index",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability', 'hidden_pe_unique_bounded')),
    # A float32 return of correct values is one mistake, charged once: by the contracts test.
    Mistake("float32 table", pe_variant(assemble=INTERLEAVE.replace("return pe", "return pe.astype(np.float32)")),
            "hidden_contracts", "sinusoidal_positional_encoding returned a float32 ndarray; expected a float64"),
    # np.zeros(..., dtype=int) filled with sin and cos: every entry cut to a whole number, one cause in every test
    Mistake("integer table", pe_variant(assemble=INTERLEAVE.replace("np.empty((seq_len, d_model))",
                                                                     "np.zeros((seq_len, d_model), dtype=int)")),
            "hidden_pe_values", "an integer array keeps whole numbers only",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability', 'hidden_pe_unique_bounded')),
    Mistake("one position too few", pe_variant(assemble=INTERLEAVE.replace("np.empty((seq_len, d_model))",
                                                                            "np.empty((seq_len - 1, d_model))").replace(
        "np.sin(angles)", "np.sin(angles[1:])").replace("np.cos(angles)", "np.cos(angles[1:])")),
            "hidden_pe_values", "one row too few: an off-by-one",
            also_fails=('hidden_pe_frequency', 'hidden_pe_shapes', 'hidden_pe_stability', 'hidden_pe_unique_bounded')),
    Mistake("no ValueError for odd d_model", pe_variant().replace('raise ValueError("odd")', "d_model -= 1"),
            "hidden_pe_shapes", "must raise ValueError"),     # the module only calls it: not charged there
    Mistake("transposed table", pe_variant(assemble=INTERLEAVE.replace("return pe", "return pe.T")),
            "hidden_pe_values", "transposed",
            also_fails=('hidden_pe_frequency', 'hidden_pe_shapes', 'hidden_pe_stability', 'hidden_pe_unique_bounded')),
    Mistake("only sines", pe_variant(assemble=INTERLEAVE.replace("np.cos(angles)", "np.sin(angles)")),
            "hidden_pe_values", "only sin",
            also_fails=('hidden_pe_frequency', 'hidden_pe_stability', 'hidden_pe_unique_bounded')),
    # --- the SinusoidalPositionalEncoding module
    Mistake("forward returns the encoding alone", '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def forward(self, X):
        return np.broadcast_to(self.get_encoding(X.shape[1]), X.shape).copy()
''', "hidden_pe_class", "returns the encoding alone"),
    Mistake("forward slices by the batch size", '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def forward(self, X):
        return X + self.pe[:X.shape[0], None, :]
''', "hidden_pe_class", None),
    Mistake("get_encoding ignores seq_len", '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def get_encoding(self, seq_len):
        return self.pe
''', "hidden_pe_class", "get_encoding(45)"),
    # Judged on the grader's stand-in table, it is compared with the answer built on that table: the message
    # names float32 rounding, not a gross error against the formula's table.
    Mistake("module keeps its table in float32", '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def __init__(self, max_seq_len, d_model):
        super().__init__(max_seq_len, d_model)
        self.pe = self.pe.astype(np.float32)
''', "hidden_pe_class", "the size of float32 rounding"),
    # --- the learned table
    Mistake("initial table not scaled", learned_variant(init="rng.normal(size=(max_seq_len, d_model))"),
            "hidden_learned_init", "not scaled"),
    Mistake("0.02 used as the variance's square",
            learned_variant(init="rng.normal(0.0, 0.02 ** 2, size=(max_seq_len, d_model))"),
            "hidden_learned_init", "not the variance"),
    Mistake("uniform initialisation", learned_variant(init="rng.uniform(0.0, 0.02, size=(max_seq_len, d_model))"),
            "hidden_learned_init", "normal distribution"),
    Mistake("rng argument ignored",
            learned_variant(init="np.random.default_rng(0).normal(0.0, 0.02, size=(max_seq_len, d_model))"),
            "hidden_learned_init", "rng"),
    Mistake("gradient averaged over the batch", learned_variant(
        backward="self.grad_embedding = np.zeros_like(self.embedding)\n"
                 "        self.grad_embedding[:self.seq_len] = grad_output.mean(axis=0)\n        return grad_output"),
            "hidden_learned_backward", "averaged over the batch rather than summed",
            also_fails=('hidden_learned_accumulation',)),
    Mistake("gradient from the first batch element only", learned_variant(
        backward="self.grad_embedding = np.zeros_like(self.embedding)\n"
                 "        self.grad_embedding[:self.seq_len] = grad_output[0]\n        return grad_output"),
            "hidden_learned_backward", "first batch element",
            also_fails=('hidden_learned_accumulation',)),
    Mistake("grad_embedding only as long as the input", learned_variant(
        backward="self.grad_embedding = grad_output.sum(axis=0)\n        return grad_output"),
            "hidden_learned_backward", "whole table",
            also_fails=('hidden_learned_accumulation',)),
    Mistake("gradient accumulated across calls", learned_variant(
        backward="self.grad_embedding[:self.seq_len] += grad_output.sum(axis=0)\n        return grad_output"),
            "hidden_learned_accumulation", "earlier call"),
    Mistake("backward returns no input gradient", learned_variant(
        backward="self.grad_embedding = np.zeros_like(self.embedding)\n"
                 "        self.grad_embedding[:self.seq_len] = grad_output.sum(axis=0)"),
            "hidden_learned_backward", "input gradient",
            also_fails=('hidden_contracts',)),
    Mistake("forward reads a frozen copy of the table", learned_variant(forward_table="self.frozen"),
            "hidden_learned_forward", None),      # backward is right: the exact gradient does not need forward
    Mistake("learned rows read from 1", learned_variant(rows="1:X.shape[1] + 1"),
            "hidden_learned_forward", "reads row p + 1"),
    # --- analysis tools
    Mistake("rotation blocks transposed", rotation_variant(place="M[2*i:2*i+2, 2*i:2*i+2] = [[c, -s], [s, c]]"),
            "hidden_relative_position", "transposed"),
    Mistake("error assumed to be zero", rotation_variant(error="0.0"),
            "hidden_relative_position", "measured, not assumed"),
    Mistake("error as the mean, not the max",
            rotation_variant(error="float(np.mean(np.linalg.norm(residual, axis=1)))"),
            "hidden_relative_position", "measured, not assumed"),
    Mistake("window assumed to start at position 0", rotation_variant(
        angle="phi = np.arctan2(pe[offset, 2*i], pe[offset, 2*i+1])"), "hidden_relative_position", None),
    Mistake("blocks paired as for a concatenated table", rotation_variant(
        place="h = d // 2\n        M[i, i], M[i, i+h], M[i+h, i], M[i+h, i+h] = c, s, -s, c"),
            "hidden_relative_position", None),
    Mistake("PE^T PE instead of PE PE^T", "def dot_product_distance(pe):\n    return pe.T @ pe\n",
            "hidden_dot_product", "PE^T PE"),
    Mistake("cosine similarity instead of dot products", '''
def dot_product_distance(pe):
    unit = pe / np.linalg.norm(pe, axis=1, keepdims=True)
    return unit @ unit.T
''', "hidden_dot_product", "cosine similarity"),
    Mistake("sample variance", '''
_statistics = encoding_statistics
def encoding_statistics(pe):
    return {**_statistics(pe), "variance": float(pe.var(ddof=1))}
''', "hidden_encoding_statistics", "ddof=0"),
    Mistake("squared norms", '''
_statistics = encoding_statistics
def encoding_statistics(pe):
    return {**_statistics(pe), "position_norms": (pe ** 2).sum(axis=1)}
''', "hidden_encoding_statistics", "squared norms"),
    Mistake("strict bound", '''
_statistics = encoding_statistics
def encoding_statistics(pe):
    return {**_statistics(pe), "bounded": bool(np.all(np.abs(pe) < 1.0))}
''', "hidden_encoding_statistics", "bounded"),
    # --- attention
    Mistake("no 1/sqrt(d_k) scaling", attention_variant(
        "w = np.exp(Q @ np.swapaxes(K, -1, -2) - (Q @ np.swapaxes(K, -1, -2)).max(-1, keepdims=True))\n"
        "    return w / w.sum(-1, keepdims=True) @ V"), "hidden_self_attention", "not divided by sqrt(d_k)"),
    Mistake("softmax over the queries", attention_variant(
        "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n    w = np.exp(s - s.max(-2, keepdims=True))\n"
        "    return w / w.sum(-2, keepdims=True) @ V"), "hidden_self_attention", "over the queries"),
    Mistake("softmax without the max shift", attention_variant(
        "w = np.exp(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))\n    return w / w.sum(-1, keepdims=True) @ V"),
            "hidden_self_attention", "subtract each row's maximum"),
    Mistake("scaled by sqrt(d_model)", attention_variant(
        "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1])\n    w = np.exp(s - s.max(-1, keepdims=True))\n"
        "    return w / w.sum(-1, keepdims=True) @ V"), "hidden_self_attention", "sqrt(d_model)"),
    Mistake("encoder ignored", "def encode_and_attend(X, W_q, W_k, W_v, encoder=None):\n"
                               "    return self_attention(X, W_q, W_k, W_v)\n", "hidden_integration", None),
    # --- mistakes that were graded too leniently, charged several times, or misdiagnosed
    Mistake("float32 computation cast to float64 at the end (a PyTorch recipe ported)", FLOAT32_TABLE,
            "hidden_pe_values", "off by up to 3e-08, the size of float32 rounding", ("hidden_pe_stability",)),
    Mistake("forward adds the encoding into the caller's array", '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def forward(self, X):
        if X.shape[1] > len(self.pe):
            raise ValueError("too long")
        out = X
        out += self.pe[:X.shape[1]]
        return out
''', "hidden_contracts", "SinusoidalPositionalEncoding.forward changed its argument X in place"),
    Mistake("learned forward with X += (in place)", learned_variant().replace(
        "return X + self.embedding[None, :X.shape[1]]", "X += self.embedding[None, :X.shape[1]]\n        return X"),
            "hidden_contracts", "LearnedPositionalEncoding.forward changed its argument X in place"),
    Mistake("table returned as a Python list",
            pe_variant(assemble=INTERLEAVE.replace("return pe", "return pe.tolist()")),
            "hidden_contracts", "sinusoidal_positional_encoding returned a list; expected a float64 numpy ndarray"),
    Mistake("M_k returned as a list [M, error]", '''
_rotation = relative_position_matrix
def relative_position_matrix(pe, offset):
    return list(_rotation(pe, offset))
''', "hidden_contracts", "relative_position_matrix returned a list; expected a tuple (M, error)"),
    Mistake("softmax shifted by the maximum over the wrong axis", attention_variant(
        "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n    w = np.exp(s - s.max(axis=-2, keepdims=True))\n"
        "    return w / w.sum(axis=-1, keepdims=True) @ V"), "hidden_self_attention",
            "the maximum is subtracted along the wrong axis"),
    Mistake("scores as K Q^T (transposed)", attention_variant(
        "s = K @ np.swapaxes(Q, -1, -2) / np.sqrt(Q.shape[-1])\n    w = np.exp(s - s.max(-1, keepdims=True))\n"
        "    return w / w.sum(-1, keepdims=True) @ V"), "hidden_self_attention", "the scores are transposed"),
    Mistake("softmax without keepdims", attention_variant(
        "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n    w = np.exp(s - s.max(axis=-1))\n"
        "    return w / w.sum(axis=-1) @ V"), "hidden_self_attention", "keepdims is missing"),
    Mistake("scaled by sqrt(K.shape[0]) (the length, or the batch)", attention_variant(
        "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[0])\n    w = np.exp(s - s.max(-1, keepdims=True))\n"
        "    return w / w.sum(-1, keepdims=True) @ V"), "hidden_self_attention", None),
    Mistake("values taken as X instead of X @ W_v", attention_variant(
        "s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])\n    w = np.exp(s - s.max(-1, keepdims=True))\n"
        "    return w / w.sum(-1, keepdims=True) @ X"), "hidden_self_attention", None),
    Mistake("encoding added after attention", "def encode_and_attend(X, W_q, W_k, W_v, encoder=None):\n"
                                              "    out = self_attention(X, W_q, W_k, W_v)\n"
                                              "    return out if encoder is None else encoder.forward(out)\n",
            "hidden_integration", None),
    Mistake("backward returns grad_embedding instead of the input gradient", learned_variant(
        backward="self.grad_embedding = np.zeros_like(self.embedding)\n"
                 "        self.grad_embedding[:self.seq_len] = grad_output.sum(axis=0)\n"
                 "        return self.grad_embedding"), "hidden_learned_backward", "input gradient"),
    Mistake("position norms over the wrong axis", '''
_statistics = encoding_statistics
def encoding_statistics(pe):
    return {**_statistics(pe), "position_norms": np.linalg.norm(pe, axis=0)}
''', "hidden_encoding_statistics", "position_norms"),
    Mistake("dot products without the transpose", "def dot_product_distance(pe):\n    return pe @ pe\n",
            "hidden_dot_product", None),
    Mistake("float32 computation returned as float32", FLOAT32_TABLE.replace("pe.astype(np.float64)", "pe"),
            "hidden_pe_values", "the size of float32 rounding", ("hidden_contracts", "hidden_pe_stability")),
    Mistake("float32 frequencies", pe_variant(omega="np.exp(-2.0 * i / d_model * np.log(10000.0)).astype(np.float32)"),
            "hidden_pe_values", "float32 rounding", ("hidden_pe_stability",)),
]

ALTERNATIVES = {
    "plain loops": '''
import math
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2 == 1:
        raise ValueError("d_model must be even")
    pe = np.zeros((seq_len, d_model))
    for pos in range(seq_len):
        for i in range(d_model // 2):
            w = math.exp(-2 * i * math.log(10000) / d_model)
            pe[pos, 2 * i] = math.sin(pos * w)
            pe[pos, 2 * i + 1] = math.cos(pos * w)
    return pe
''',
    "direct powers": pe_variant(omega="1.0 / 10000.0 ** (2 * i / d_model)"),
    "complex exponentials": pe_variant(assemble="z = np.exp(1j * angles)\n    pe = np.empty((seq_len, d_model))\n"
                                                "    pe[:, 0::2], pe[:, 1::2] = z.imag, z.real\n    return pe"),
    "stack and reshape": pe_variant(assemble="return np.stack([np.sin(angles), np.cos(angles)], axis=-1)"
                                             ".reshape(seq_len, d_model)"),
    "M_k from a middle pair of positions": rotation_variant(
        angle="p = (len(pe) - offset) // 2\n        phi = np.arctan2(pe[p + offset, 2*i], pe[p + offset, 2*i+1]) - "
              "np.arctan2(pe[p, 2*i], pe[p, 2*i+1])"),
    "M_k from the formula": '''
def relative_position_matrix(pe, offset):
    L, d = pe.shape
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    M = np.zeros((d, d))
    for i, w in enumerate(omega):
        c, s = np.cos(w * offset), np.sin(w * offset)
        M[2*i:2*i+2, 2*i:2*i+2] = [[c, s], [-s, c]]
    err = max(np.linalg.norm(M @ pe[p] - pe[p + offset]) for p in range(L - offset))
    return M, err
''',
    "M_k by least squares over all pairs": '''
def relative_position_matrix(pe, offset):
    L, d = pe.shape
    M = np.zeros((d, d))
    for i in range(d // 2):
        a, b = pe[:L - offset, 2*i:2*i+2], pe[offset:, 2*i:2*i+2]
        c = np.mean(np.sum(a * b, axis=1))
        s = np.mean(b[:, 0] * a[:, 1] - b[:, 1] * a[:, 0])
        M[2*i:2*i+2, 2*i:2*i+2] = [[c, s], [-s, c]]
    return M, float(np.linalg.norm(pe[:L - offset] @ M.T - pe[offset:], axis=1).max())
''',
    "learned backward with einsum and add.at": learned_variant(
        backward="self.grad_embedding = np.zeros_like(self.embedding)\n"
                 "        np.add.at(self.grad_embedding, np.arange(self.seq_len), np.einsum('bld->ld', grad_output))\n"
                 "        return grad_output.copy()"),
    "attention with einsum": '''
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    s = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(K.shape[-1])
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return np.einsum("...qk,...kd->...qd", e / np.sum(e, axis=-1, keepdims=True), V)
''',
    "statistics by hand": '''
def encoding_statistics(pe):
    n = pe.size
    mean = pe.sum() / n
    return {"position_norms": np.sqrt((pe * pe).sum(axis=1)), "mean": float(mean),
            "variance": float(((pe - mean) ** 2).sum() / n), "min": float(pe.min()), "max": float(pe.max()),
            "bounded": bool((np.abs(pe) <= 1).all())}
''',
}

# Unusual correct answers that must keep full marks
ALTERNATIVES.update({
    "softmax by log-sum-exp": '''
def self_attention(X, W_q, W_k, W_v):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    m = s.max(axis=-1, keepdims=True)
    log_z = m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))
    return np.exp(s - log_z) @ V
''',
    "forward on a copy, then in place": '''
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def forward(self, X):
        if X.shape[1] > len(self.pe):
            raise ValueError("too long")
        out = np.array(X, dtype=np.float64, copy=True)
        out += self.pe[:X.shape[1]]
        return out
''',
    "statistics as numpy scalars and numpy bool": '''
def encoding_statistics(pe):
    return {"position_norms": np.sqrt(np.einsum("ld,ld->l", pe, pe)), "mean": pe.mean(), "variance": pe.var(),
            "min": pe.min(), "max": pe.max(), "bounded": np.all(np.abs(pe) <= 1.0)}
''',
    "table by broadcasting with np.power and a where": '''
def sinusoidal_positional_encoding(seq_len, d_model):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    j = np.arange(d_model)
    angles = np.arange(seq_len)[:, None] / np.power(10000.0, (j - j % 2) / d_model)[None, :]
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
''',
    "dot products with einsum": '''
def dot_product_distance(pe):
    return np.einsum("id,jd->ij", pe, pe)
''',
    "M_k as a tuple built with np.block": '''
def relative_position_matrix(pe, offset):
    L, d = pe.shape
    omega = np.exp(-np.arange(0, d, 2) / d * np.log(10000.0))
    blocks = [[np.zeros((2, 2))] * (d // 2) for _ in range(d // 2)]
    for i, w in enumerate(omega):
        blocks[i][i] = np.array([[np.cos(w * offset), np.sin(w * offset)], [-np.sin(w * offset), np.cos(w * offset)]])
    M = np.block(blocks)
    error = float(np.linalg.norm(pe[:L - offset] @ M.T - pe[offset:], axis=1).max()) if L > offset else 0.0
    return (M, error)
''',
})


# --- implementations ported from well-known public code, their conventions kept --------------------------
# Each outcome was decided from the spec before grading: a port that follows another convention is charged once, in the
# tests of the function that differs, with that convention named (points_lost worked out by hand from the cases).

PORTED_MISTAKES = [
    # tensor2tensor's get_timing_signal_1d: timescales spaced by 1/(d/2 - 1), [sin | cos] halves, odd widths padded.
    # hidden_pe_shapes: the 3 odd widths of 7 cases fail (1 kept of 2); values 4, stability 2, frequency 2;
    # contract 0.5.
    Mistake("port: tensor2tensor get_timing_signal_1d", """
import math
def sinusoidal_positional_encoding(seq_len, d_model):
    position = np.arange(seq_len, dtype=np.float64)
    num_timescales = d_model // 2
    log_timescale_increment = math.log(1.0e4 / 1.0) / max(num_timescales - 1, 1)
    inv_timescales = 1.0 * np.exp(np.arange(num_timescales, dtype=np.float64) * -log_timescale_increment)
    scaled_time = position[:, None] * inv_timescales[None, :]
    signal = np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)
    return np.pad(signal, [[0, 0], [0, d_model % 2]])
""", "hidden_pe_values", "as in tensor2tensor and fairseq",
            also_fails=("hidden_pe_shapes", "hidden_pe_stability", "hidden_pe_frequency"), points_lost=9.5),
    # fairseq's SinusoidalPositionalEmbedding.get_embedding: the same layout, ZeroDivisionError for d_model = 2 (so 4 of
    # the 7 shape cases fail: 0.5 kept), odd widths zero-padded.
    Mistake("port: fairseq SinusoidalPositionalEmbedding.get_embedding", """
import math
def sinusoidal_positional_encoding(seq_len, d_model):
    half_dim = d_model // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim, dtype=np.float64) * -emb)
    emb = np.arange(seq_len, dtype=np.float64)[:, None] * emb[None, :]
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1).reshape(seq_len, -1)
    if d_model % 2 == 1:
        emb = np.concatenate([emb, np.zeros((seq_len, 1))], axis=1)
    return emb
""", "hidden_pe_values", "as in tensor2tensor and fairseq",
            also_fails=("hidden_pe_shapes", "hidden_pe_stability", "hidden_pe_frequency"), points_lost=10),
    # d2l.ai's PositionalEncoding keeps torch's float32 for the angles: values 4 and stability 2, contract 0.5.
    Mistake("port: d2l.ai PositionalEncoding (float32 angles)", """
def sinusoidal_positional_encoding(seq_len, d_model):
    P = np.zeros((1, seq_len, d_model))
    X = np.arange(seq_len, dtype=np.float32).reshape(-1, 1) / np.power(
        np.float32(10000), np.arange(0, d_model, 2, dtype=np.float32) / np.float32(d_model))
    P[:, :, 0::2] = np.sin(X)
    P[:, :, 1::2] = np.cos(X)
    return P[0]
""", "hidden_pe_values", "the size of float32 rounding", also_fails=("hidden_pe_stability",), points_lost=6.5),
]

PORTED_ALTERNATIVES = {
    # The Annotated Transformer's PositionalEncoding: odd widths and too-long inputs raise ValueError through numpy's
    # broadcasting, as the spec asks.
    "port: The Annotated Transformer PositionalEncoding (table)": """
import math
def sinusoidal_positional_encoding(seq_len, d_model):
    pe = np.zeros((seq_len, d_model))
    position = np.arange(0, seq_len)[:, None]
    div_term = np.exp(np.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe
""",
    "port: The Annotated Transformer PositionalEncoding (module)": """
import math
class SinusoidalPositionalEncoding:
    def __init__(self, max_seq_len, d_model):
        pe = np.zeros((max_seq_len, d_model))
        position = np.arange(0, max_seq_len)[:, None]
        div_term = np.exp(np.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = np.sin(position * div_term)
        pe[:, 1::2] = np.cos(position * div_term)
        self.pe = pe[None]

    def forward(self, x):
        return x + self.pe[:, : x.shape[1]]

    def get_encoding(self, seq_len):
        return self.pe[0, :seq_len].copy()
""",
    # Hugging Face GPT-2's wpe: an embedding initialised N(0, 0.02), looked up by position ids; nn.Embedding's backward
    # scatter-adds the upstream rows.
    "port: Hugging Face GPT-2 wpe": """
class LearnedPositionalEncoding:
    def __init__(self, max_seq_len, d_model, rng=None):
        rng = np.random.default_rng() if rng is None else rng
        self.max_seq_len = max_seq_len
        self.embedding = rng.normal(loc=0.0, scale=0.02, size=(max_seq_len, d_model))
        self.grad_embedding = np.zeros_like(self.embedding)

    def forward(self, X):
        if X.shape[1] > self.max_seq_len:
            raise ValueError("sequence longer than n_positions")
        self.position_ids = np.arange(X.shape[1])
        return X + self.embedding[self.position_ids][None]

    def backward(self, grad_output):
        self.grad_embedding = np.zeros_like(self.embedding)
        np.add.at(self.grad_embedding, self.position_ids, grad_output.sum(axis=0))
        return grad_output
""",
    # nanoGPT's CausalSelfAttention without its mask, one head: F.softmax is the stable softmax.
    "port: nanoGPT CausalSelfAttention (unmasked, one head)": """
import math
def self_attention(X, W_q, W_k, W_v):
    q, k, v = X @ W_q, X @ W_k, X @ W_v
    att = (q @ np.swapaxes(k, -2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
    att = np.exp(att - att.max(axis=-1, keepdims=True))
    att = att / att.sum(axis=-1, keepdims=True)
    return att @ v
""",
}

MISTAKES += PORTED_MISTAKES
ALTERNATIVES.update(PORTED_ALTERNATIVES)


# --- unfinished notebooks, degenerate parts, double charges, wrong words ---------------------------------
# Points worked out by hand: a stubbed or missing function loses its value tests and its case of the contracts test
# (12 cases for 2 points in the core assignment, 5 in the bonus one; the share kept is rounded down to a half point).

PART_1 = ("sinusoidal_positional_encoding", "SinusoidalPositionalEncoding")
PART_2 = ("LearnedPositionalEncoding",)
PART_3 = ("relative_position_matrix", "dot_product_distance", "encoding_statistics")
PART_4 = ("self_attention", "encode_and_attend")
ZERO_TABLE = pe_variant(assemble="return np.zeros((seq_len, d_model))")

UNFINISHED = [
    Mistake("stub: sinusoidal_positional_encoding", stubs(PART_1[0]), "hidden_pe_values", "template stub",
            also_fails=("hidden_pe_shapes", "hidden_pe_unique_bounded", "hidden_pe_stability", "hidden_pe_frequency"),
            points_lost=13.5),                      # the module is judged on a stand-in table: not charged
    Mistake("stub: SinusoidalPositionalEncoding", stubs(PART_1[1]), "hidden_pe_class", "template stub",
            points_lost=3.5),                       # 2 contract cases: 2 * 10/12 -> 1.5 kept
    Mistake("stub: LearnedPositionalEncoding", stubs(*PART_2), "hidden_learned_init", "template stub",
            also_fails=("hidden_learned_forward", "hidden_learned_backward", "hidden_learned_accumulation"),
            points_lost=11),                        # 4 contract cases: 2 * 8/12 -> 1 kept
    Mistake("stub: relative_position_matrix", stubs(PART_3[0]), "hidden_relative_position", "template stub",
            points_lost=4.5),
    Mistake("stub: dot_product_distance", stubs(PART_3[1]), "hidden_dot_product", "template stub", points_lost=2.5),
    Mistake("stub: encoding_statistics", stubs(PART_3[2]), "hidden_encoding_statistics", "template stub",
            points_lost=2.5),
    Mistake("stub: self_attention", stubs(PART_4[0]), "hidden_self_attention", "template stub",
            points_lost=3.5),                       # encode_and_attend is judged on a stand-in attention
    Mistake("stub: encode_and_attend", stubs(PART_4[1]), "hidden_integration", "template stub", points_lost=3.5),
    Mistake("stub: Part 1", stubs(*PART_1), "hidden_pe_values", "template stub",
            also_fails=("hidden_pe_shapes", "hidden_pe_unique_bounded", "hidden_pe_stability", "hidden_pe_frequency",
                        "hidden_pe_class"), points_lost=16.5),
    Mistake("stub: Part 2", stubs(*PART_2), "hidden_learned_backward", "template stub",
            also_fails=("hidden_learned_init", "hidden_learned_forward", "hidden_learned_accumulation"),
            points_lost=11),
    Mistake("stub: Part 3", stubs(*PART_3), "hidden_relative_position", "template stub",
            also_fails=("hidden_dot_product", "hidden_encoding_statistics"), points_lost=8.5),
    Mistake("stub: Part 4", stubs(*PART_4), "hidden_integration", "template stub",
            also_fails=("hidden_self_attention",), points_lost=6.5),
    # Only Part 1 written: its 16 points and 3 of the 12 contract cases (0.5); it scored 21 before.
    Mistake("only Part 1 written", stubs(*PART_2, *PART_3, *PART_4), "hidden_integration", "template stub",
            also_fails=("hidden_self_attention", "hidden_relative_position", "hidden_dot_product",
                        "hidden_encoding_statistics", "hidden_learned_init", "hidden_learned_forward",
                        "hidden_learned_backward", "hidden_learned_accumulation"), points_lost=25.5),
    Mistake("cell 'self_attention' did not run", missing(*PART_4), "hidden_integration", "is not defined",
            also_fails=("hidden_self_attention",), points_lost=6.5),
    Mistake("cell 'dot_product_and_statistics' did not run", missing(*PART_3[1:]), "hidden_dot_product",
            "is not defined", also_fails=("hidden_encoding_statistics",), points_lost=4.5),
    # --- degenerate parts earn nothing, here or by agreement elsewhere
    Mistake("degenerate: an all-zero table", ZERO_TABLE, "hidden_pe_values", None,
            also_fails=("hidden_pe_unique_bounded", "hidden_pe_stability", "hidden_pe_frequency"), points_lost=11.5),
    Mistake("degenerate: an all-zero table and a module whose forward returns X", ZERO_TABLE + """
class SinusoidalPositionalEncoding:
    def __init__(self, max_seq_len, d_model):
        self.d_model = sinusoidal_positional_encoding(max_seq_len, d_model).shape[1]
    def forward(self, X):
        return X.copy()
    def get_encoding(self, seq_len):
        return np.zeros((seq_len, self.d_model))
""", "hidden_pe_class", None, also_fails=("hidden_pe_values", "hidden_pe_unique_bounded", "hidden_pe_stability",
                                          "hidden_pe_frequency"), points_lost=14.5),
    Mistake("degenerate: M_k the identity with error 0", "def relative_position_matrix(pe, offset):\n"
                                                         "    return np.eye(pe.shape[1]), 0.0\n",
            "hidden_relative_position", "M is the identity", points_lost=4.5),
    Mistake("degenerate: encode_and_attend returns its input",
            "def encode_and_attend(X, W_q, W_k, W_v, encoder=None):\n    return X.copy()\n",
            "hidden_integration", None, points_lost=3.5),
    # --- one cause charged once: a module that only calls the table function is not charged for it (above: odd
    # widths, a transposed table); a sequence-first forward costs the module's test alone.
    Mistake("forward reads X as (L, B, d) (sequence-first)", """
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def forward(self, X):
        return X + self.get_encoding(X.shape[0])[:, None, :]
""", "hidden_pe_class", None, points_lost=3.5),
    # --- every diagnosis true
    Mistake("a module that builds for an odd width without an error", """
class SinusoidalPositionalEncoding(SinusoidalPositionalEncoding):
    def __init__(self, max_seq_len, d_model):
        self.max_seq_len, self.d_model = max_seq_len, d_model
        self.pe = sinusoidal_positional_encoding(max_seq_len, d_model + d_model % 2)[:, :d_model]
""", "hidden_pe_class", "but it returned a SinusoidalPositionalEncoding object", points_lost=3.5),
    Mistake("exponent doubled (np.arange(0, d, 2) times 2 again)", pe_variant(
        omega="np.exp(-2.0 * (2 * i) / d_model * np.log(10000.0))"), "hidden_pe_values", "the exponent is doubled",
            also_fails=("hidden_pe_stability", "hidden_pe_frequency"), points_lost=8.5),
]

MISTAKES += UNFINISHED

MISTAKES = contract_rule(MISTAKES, "hidden_contracts")
