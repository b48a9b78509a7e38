# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 07 · The Transformer block, counted parameter by parameter
#
# A Transformer is a stack of one repeated unit, the block of Fig. 7.15. This
# notebook builds the encoder block and the decoder block of `keras_seq` at the
# sizes of the original paper, computes the decoder block's six steps, its
# cross attention (Eq. 7.33) included, by hand against the layer, splits
# their parameters along the terms of Eq. (7.32) and checks the chapter's
# totals: 3,150,336 for an encoder block, 4,199,936 for a decoder block, and
# about 63 million for the 6 + 6 block translator of Fig. 7.16 (the `book`
# preset of `zoo`). It then sets the `base` and `big` presets beside the
# sizes Vaswani et al. report, and ends with the normalization inside the
# block: layer norm against batch norm on a padded batch, measured.

# %%
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"

import keras  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import zoo  # noqa: E402
from keras_seq.layers import (  # noqa: E402
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)

keras.utils.set_random_seed(0)
print("backend:", keras.backend.backend(), "| quick mode:", QUICK)

# %% [markdown]
# ## 1. The encoder block, Eq. (7.31) and (7.32)
#
# A block maps a $p \times T$ matrix $a_{\text{in}}$ to a $p \times T$ matrix
# $a_{\text{out}}$ in four steps. Multi-head self attention (Eq. 7.25 and
# 7.26) gives $u_{[1]}^{(t)}$; a residual sum and a layer normalization give
#
# $$u_{[2]}^{(t)} = \text{LayerNorm}\big(a_{\text{in}}^{(t)} + u_{[1]}^{(t)};
# \gamma, \beta\big), \qquad (7.31)$$
#
# a two-layer network applied at every position gives
# $u_{[3]}^{(t)} = W^{[2]} S(W^{[1]} u_{[2]}^{(t)} + b^{[1]}) + b^{[2]}$, and a
# second residual sum and normalization give
# $a_{\text{out}}^{(t)} = \text{LayerNorm}(u_{[2]}^{(t)} + u_{[3]}^{(t)};
# \tilde\gamma, \tilde\beta)$. With width $p$, feed-forward width $N_1$, $H$
# heads of query/key width $m$ and value width $m_v$, the learned parameters
# are
#
# $$\underbrace{4p}_{\gamma,\beta,\tilde\gamma,\tilde\beta}
# + \underbrace{2N_1 p}_{W^{[1]}, W^{[2]}}
# + \underbrace{N_1 + p}_{b^{[1]}, b^{[2]}}
# + H\big(\underbrace{2mp}_{W_q^h, W_k^h}
# + \underbrace{2m_v p}_{W_v^h, W_c^h}\big). \qquad (7.32)$$
#
# The attention projections of Eq. (7.25) have no biases, so the block is
# built with `attention_bias=False`; $m = m_v = p / H = 64$ is the default
# head width.

# %%
p, N1, H, m, m_v = 512, 2048, 8, 64, 64

encoder_block = TransformerEncoderBlock(num_heads=H, ff_dim=N1, attention_bias=False)
encoder_block.build((None, None, p))

# The input and the output of a block have the same shape, p x T per sequence.
a_in = keras.random.normal((2, 10, p), seed=1)
a_out = encoder_block(a_in)
print("a_in", tuple(a_in.shape), "-> a_out", tuple(a_out.shape))
assert a_out.shape == a_in.shape

# %% [markdown]
# Each weight of the layer belongs to exactly one term of Eq. (7.32); the
# weight's path says which. Summing the measured sizes term by term gives the
# table below, next to the formula.

# %%
ENCODER_TERMS = {
    "4p (gamma, beta of two norms)": 4 * p,
    "2 N1 p (W1, W2)": 2 * N1 * p,
    "N1 + p (b1, b2)": N1 + p,
    "H 2mp (W_q, W_k)": H * 2 * m * p,
    "H 2m_v p (W_v, W_c)": H * 2 * m_v * p,
}


def term_of(path):
    """The Eq. (7.32) term a weight of a block belongs to, from its path."""
    name = path.split("/")[-1]
    if name in ("gamma", "beta"):
        return "4p (gamma, beta of two norms)"
    if "feed_forward" in path:
        return "2 N1 p (W1, W2)" if name == "kernel" else "N1 + p (b1, b2)"
    if "/query/" in path or "/key/" in path:
        return "H 2mp (W_q, W_k)"
    if "/value/" in path or "/attention_output/" in path:
        return "H 2m_v p (W_v, W_c)"
    raise ValueError(f"unexpected weight {path}")


def measured_terms(block):
    sizes = {}
    for weight in block.weights:
        term = term_of(weight.path)
        sizes[term] = sizes.get(term, 0) + int(np.prod(weight.shape))
    return sizes


def print_terms(formula, measured):
    print(f"{'term of Eq. (7.32)':32s} {'formula':>11s} {'measured':>11s}")
    for term, value in formula.items():
        print(f"{term:32s} {value:11,d} {measured.get(term, 0):11,d}")
    print(f"{'total':32s} {sum(formula.values()):11,d} {sum(measured.values()):11,d}")


encoder_measured = measured_terms(encoder_block)
print_terms(ENCODER_TERMS, encoder_measured)
assert encoder_measured == ENCODER_TERMS
assert encoder_block.count_params() == sum(ENCODER_TERMS.values()) == 3_150_336
feed_forward_share = ENCODER_TERMS["2 N1 p (W1, W2)"] / encoder_block.count_params()
print(f"feed-forward share of the block: {feed_forward_share:.1%}")
assert round(feed_forward_share, 2) == 0.67  # two thirds
assert 4 * H * m * p == 1_048_576  # all four attention matrices of all heads

# %% [markdown]
# Two thirds of the block is the feed-forward network: its $2N_1p$ weights
# (2,097,152) outweigh the four attention matrices of all eight heads
# ($4Hmp$ = 1,048,576), and the normalizations are a rounding error. The
# sequence length $T$ appears nowhere: the same weights serve every position.

# %% [markdown]
# ## 2. The decoder block, Eq. (7.33)
#
# The decoder block of Fig. 7.15 (b) differs from the encoder block in two
# ways: its self attention is causal (masking, Eq. 7.27), and a cross
# attention layer sits between the self attention and the feed-forward
# network. The queries of the cross attention come from the decoder, the
# keys and values from the encoder output $z^{*\langle 1\rangle}, \dots,
# z^{*\langle S\rangle}$ (the chapter writes $T$ for both lengths; here $S$ is
# the source length). For head $h$ and decoder position $t$,
#
# $$u^{h,\langle t\rangle} = \sum_{\tau=1}^{S} \alpha_\tau^{h,\langle t\rangle}
# W_v^h z^{*\langle\tau\rangle}, \qquad
# \alpha_\tau^{h,\langle t\rangle} =
# \frac{e^{s(W_q^h \tilde u^{(t)},\, W_k^h z^{*\langle\tau\rangle})}}
# {\sum_{t'=1}^{S} e^{s(W_q^h \tilde u^{(t)},\, W_k^h z^{*\langle t'\rangle})}},
# \qquad (7.33)$$
#
# and the heads are combined by Eq. (7.26), $u^{(t)} = \sum_h W_c^h
# u^{h,\langle t\rangle}$. The score is the scaled dot product
# $s(q, k) = q^\top k / \sqrt{m}$. The printed (7.33), like the printed
# (7.25), ends the sum of the denominator at $t' = t$; the weights of a query
# must add up to one over all the positions the numerator runs over, so the
# denominator runs to $S$, an apparent typo. No causal mask applies here:
# the whole source is known before decoding starts.
#
# The block then takes six steps (a residual sum and its normalization
# counted as one):
#
# 1. $u_{[1]}$ = causal multi-head self attention of $a_{\text{in}}$;
# 2. $u_{[2]} = \text{LayerNorm}(a_{\text{in}} + u_{[1]})$, as in Eq. (7.31);
# 3. $u_{[3]}$ = multi-head cross attention, Eq. (7.33) and (7.26), with
#    $\tilde u^{(t)} = u_{[2]}^{(t)}$;
# 4. $u_{[4]} = \text{LayerNorm}(u_{[2]} + u_{[3]})$;
# 5. $u_{[5]} = W^{[2]} S(W^{[1]} u_{[4]} + b^{[1]}) + b^{[2]}$ at every
#    position;
# 6. $a_{\text{out}} = \text{LayerNorm}(u_{[4]} + u_{[5]})$.
#
# Below, each step is one line of NumPy on the weights of
# `TransformerDecoderBlock`, and the result must equal the layer's own
# output. The norms' $\gamma, \beta$ and the feed-forward biases start at 1
# and 0, so they are set to random values first: every weight then matters.

# %%
decoder_block = TransformerDecoderBlock(num_heads=H, ff_dim=N1, attention_bias=False)
decoder_block.build((None, None, p), (None, None, p))
rng = np.random.default_rng(0)
for weight in decoder_block.weights:
    if weight.path.split("/")[-1] in ("gamma", "beta", "bias"):
        start = 1.0 if weight.path.endswith("gamma") else 0.0
        weight.assign(start + 0.1 * rng.normal(size=weight.shape))
W = {w.path.split("/", 1)[1]: np.asarray(w) for w in decoder_block.weights}


def multi_head(x, z, name, causal):
    """Eq. (7.25)/(7.33) for every head, then Eq. (7.26); x (B, T, p), z (B, S, p)."""
    q = np.einsum("btp,phm->bhtm", x, W[f"{name}/query/kernel"])  # W_q^h x(t)
    k = np.einsum("bsp,phm->bhsm", z, W[f"{name}/key/kernel"])  # W_k^h z(tau)
    v = np.einsum("bsp,phm->bhsm", z, W[f"{name}/value/kernel"])  # W_v^h z(tau)
    scores = np.einsum("bhtm,bhsm->bhts", q, k) / np.sqrt(m)  # s(q, k)
    if causal:  # Eq. (7.27): query t sees keys tau <= t only
        scores = np.where(np.tri(x.shape[1], z.shape[1], dtype=bool), scores, -np.inf)
    alpha = np.exp(scores - scores.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)  # the denominator runs over all keys
    u_heads = np.einsum("bhts,bhsm->bhtm", alpha, v)  # u^{h,<t>}
    return np.einsum("bhtm,hmp->btp", u_heads, W[f"{name}/attention_output/kernel"])


def layer_norm(x, name):
    mean, variance = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    normalized = (x - mean) / np.sqrt(variance + 1e-5)
    return W[f"{name}/gamma"] * normalized + W[f"{name}/beta"]


a_in = rng.normal(size=(2, 5, p)).astype("float32")  # decoder side, T = 5
z_star = rng.normal(size=(2, 7, p)).astype("float32")  # encoder output, S = 7

u1 = multi_head(a_in, a_in, "self_attention", causal=True)
u2 = layer_norm(a_in + u1, "self_attention_layer_norm")
u3 = multi_head(u2, z_star, "cross_attention", causal=False)  # Eq. (7.33)
u4 = layer_norm(u2 + u3, "cross_attention_layer_norm")
hidden = np.maximum(
    u4 @ W["feed_forward/intermediate_dense/kernel"]
    + W["feed_forward/intermediate_dense/bias"],
    0.0,
)  # S = ReLU
u5 = (
    hidden @ W["feed_forward/output_dense/kernel"] + W["feed_forward/output_dense/bias"]
)
a_out = layer_norm(u4 + u5, "feed_forward_layer_norm")

by_layer = np.asarray(decoder_block(a_in, z_star))
print("a_in", a_in.shape, "z*", z_star.shape, "-> a_out", by_layer.shape)
difference = np.abs(a_out - by_layer).max()
print(f"six steps by hand against the layer: max |difference| {difference:.1e}")
np.testing.assert_allclose(by_layer, a_out, atol=1e-4)

# %% [markdown]
# Counting its weights, Eq. (7.32) grows by $H(2mp + 2m_vp)$ for the
# cross-attention matrices $W_q^h, W_k^h, W_v^h, W_c^h$ of step 3 and by $2p$
# for the $\gamma, \beta$ of the extra normalization of step 4.

# %%
cross_attention = H * (2 * m * p + 2 * m_v * p)
decoder_formula = sum(ENCODER_TERMS.values()) + cross_attention + 2 * p
cross_weights = sum(
    int(np.prod(w.shape)) for w in decoder_block.weights if "cross_attention/" in w.path
)
print(
    f"cross attention H(2mp + 2m_v p): {cross_attention:,} (measured {cross_weights:,})"
)
print(f"decoder block, formula:  {decoder_formula:,}")
print(f"decoder block, measured: {decoder_block.count_params():,}")
assert cross_weights == cross_attention
assert decoder_block.count_params() == decoder_formula == 4_199_936

# %% [markdown]
# ## 3. The encoder-decoder of Fig. 7.16: about 63 million
#
# Six encoder blocks and six decoder blocks, plus the final linear layer that
# turns each decoder output into scores over $d_V \approx 37{,}000$ tokens
# ($d_V p + p$ parameters in the chapter). The `book` preset of
# `zoo.build_translator` is that model. Its sinusoidal position code (Eq.
# 7.29) has no weights, and, as in Vaswani et al., one $37{,}000 \times 512$
# table serves as the source embedding, the target embedding and the output
# layer (weight tying), so the output layer costs the table and nothing else.
# Building the model allocates its 63 million weights (about 250 MB); it is
# not trained here.

# %%
started = time.time()
book = zoo.build_translator("book")
print(f"built the book preset in {time.time() - started:.1f} s")


def parameters_by_part(model):
    """Parameter counts of a translator grouped into its parts."""
    parts = {"encoder": 0, "decoder": 0, "embeddings and output": 0, "other": 0}
    for layer in model.layers:
        count = layer.count_params() if layer.built else 0
        if layer.name.startswith("encoder_block"):
            parts["encoder"] += count
        elif layer.name.startswith("decoder_block"):
            parts["decoder"] += count
        elif layer.name.endswith("_embedding") or layer.name == "logits":
            parts["embeddings and output"] += count
        else:
            parts["other"] += count  # final norms (pre-norm models only)
    return parts


book_parts = parameters_by_part(book)
for part, count in book_parts.items():
    print(f"{part:22s} {count:12,d}  (~{count / 1e6:.1f}M)")
print(f"{'total':22s} {book.count_params():12,d}  (~{book.count_params() / 1e6:.1f}M)")

table = 37_000 * p
assert book_parts["encoder"] == 6 * 3_150_336  # 18,902,016: "about 19 million"
assert book_parts["decoder"] == 6 * 4_199_936  # 25,199,616: "about 25 million"
assert book_parts["embeddings and output"] == table  # 18,944,000: "about 19M"
assert book.count_params() == sum(book_parts.values()) == 63_045_632
assert round(book.count_params() / 1e6) == 63
assert round(4 * book.count_params() / 1e6, -1) == 250  # MB of float32 weights

# %% [markdown]
# The chapter's output layer, $d_V p + p = 18{,}944{,}512$, has a bias; the
# tied layer here has none, so the preset is exactly 512 parameters below the
# chapter's sum of 63,046,144. The three parts, drawn to scale:

# %%
book_total = 63_046_144
assert 6 * 3_150_336 + 6 * 4_199_936 + table + p == book_total
assert book_total - book.count_params() == p

fig, axis = plt.subplots(figsize=(7.5, 2.2))
left = 0
colors = {"encoder": "tab:blue", "decoder": "tab:orange"}
colors["embeddings and output"] = "tab:green"
for part in ("encoder", "decoder", "embeddings and output"):
    count = book_parts[part]
    axis.barh(0, count / 1e6, left=left, color=colors[part], edgecolor="white")
    axis.text(
        left + count / 2e6,
        0,
        f"{part}\n{count / 1e6:.1f}M",
        ha="center",
        va="center",
        color="white",
        fontsize=9,
    )
    left += count / 1e6
axis.set_yticks([])
axis.set_xlim(0, left)
axis.set_xlabel("parameters (millions)")
axis.set_title(
    f"The book's encoder-decoder Transformer: {book.count_params():,} parameters"
)
fig.tight_layout()
if not QUICK:
    os.makedirs("../docs/images", exist_ok=True)
    fig.savefig("../docs/images/tutorial_07_parameters.png", dpi=110)
plt.show()
del book

# %% [markdown]
# ## 4. The `base` and `big` presets against Vaswani et al.
#
# The `base` preset is the `book` model with biases in the attention
# projections: $3p$ for queries, keys and values
# and $p$ for the output, in each of the 6 + 12 attention layers, which is
# $18 \times 4p = 36{,}864$ more. The `big` preset doubles the width to 1024,
# the feed-forward width to 4096 and the heads to 16. The paper reports 65M
# and 213M for these models without itemizing them; the presets store their
# exact counts, and in full mode the models are built to confirm them (the
# big one takes about 0.9 GB).

# %%
base_extra = 18 * 4 * p
assert base_extra == 36_864
assert zoo.presets.TRANSLATOR_PRESETS["base"]["params"] == 63_045_632 + base_extra

paper = {"book": None, "base": 65e6, "big": 213e6}
print(f"{'preset':6s} {'parameters':>13s} {'paper':>7s}  built here")
for name, reported in paper.items():
    stored = zoo.presets.TRANSLATOR_PRESETS[name]["params"]
    built = "no (quick mode)"
    if name == "book":
        built = "yes, in section 3"
    elif not QUICK:
        started = time.time()
        model = zoo.build_translator(name)
        assert model.count_params() == stored
        built = f"yes, count matches ({time.time() - started:.0f} s)"
        del model
    reported_text = f"{reported / 1e6:.0f}M" if reported else "-"
    print(f"{name:6s} {stored:13,d} {reported_text:>7s}  {built}")

big = zoo.presets.TRANSLATOR_PRESETS["big"]["params"]
base = zoo.presets.TRANSLATOR_PRESETS["base"]["params"]
print(
    f"big / base: {big / base:.2f}x; big is {(big - 213e6) / 213e6:+.2%} from 213M, "
    f"base {(base - 65e6) / 1e6:+.2f}M ({(base - 65e6) / 65e6:+.2%}) from 65M"
)
assert round(4 * big / 1e9, 1) == 0.9  # GB of float32 weights
assert round((big - 213e6) / 213e6, 3) == 0.006  # 0.6% above the paper's 213M
assert round((65e6 - base) / 1e6, 1) == 1.9 and round((65e6 - base) / 65e6, 2) == 0.03
assert round(big / base, 1) == 3.4

# %% [markdown]
# `big` lands 0.6% above the paper's 213M; `base` is 1.9M (about 3%)
# below its 65M. Doubling the width multiplies every $p \times p$-like matrix by
# four and the shared table by two, hence a factor of 3.4 rather than 4.

# %% [markdown]
# ## 5. Layer normalization against batch normalization
#
# Both normalize to zero mean and unit variance and then rescale with learned
# $\gamma, \beta$; they differ in *which numbers* the mean and variance are
# taken over. For a batch of $B$ sequences of length $T$ with $p$ features,
# batch normalization takes one mean per feature over all $B \times T$
# positions, $\mu_j = \frac{1}{BT}\sum_{b,t} z_{btj}$, while layer
# normalization takes one mean per position over its $p$ features,
# $\mu_{bt} = \frac{1}{p}\sum_j z_{btj}$ (and likewise for the variance).
#
# First, `keras.layers.LayerNormalization` (what the blocks use) against the
# formula of Eq. (7.31) written out in NumPy:

# %%
rng = np.random.default_rng(0)
B, T, features = 4, 6, 8
lengths = np.array([6, 4, 2, 3])
real = np.arange(T)[None, :] < lengths[:, None]  # (B, T), True at real tokens
z = rng.normal(size=(B, T, features)).astype("float32")
z[~real] = 0.0  # padded positions hold zeros

layer_norm = keras.layers.LayerNormalization(epsilon=1e-5)
mu = z.mean(axis=-1, keepdims=True)
sigma2 = z.var(axis=-1, keepdims=True)
by_hand = (z - mu) / np.sqrt(sigma2 + 1e-5)  # gamma = 1, beta = 0 at init
np.testing.assert_allclose(np.asarray(layer_norm(z)), by_hand, atol=1e-5)
print("LayerNorm equals the formula over the feature axis (to 1e-5)")

# %% [markdown]
# The picture below lays the padded batch out as the $BT \times p$ matrix
# both layers see (grey rows are padding). Batch norm's mean for feature $j$
# runs down a column, through every sequence and every padded row; layer
# norm's mean for one position runs along a row, within one token.

# %%
flat = z.reshape(B * T, features)
fig, axis = plt.subplots(figsize=(4.2, 5))
axis.imshow(
    np.where(real.reshape(-1, 1), flat, np.nan),
    cmap="coolwarm",
    vmin=-2.5,
    vmax=2.5,
    aspect="auto",
)
axis.imshow(
    np.where(real.reshape(-1, 1), np.nan, 0.0) * np.ones((1, features)),
    cmap="Greys",
    vmin=-1,
    vmax=1,
    aspect="auto",
)
axis.add_patch(
    plt.Rectangle(
        (2.5, -0.5),
        1,
        B * T,
        fill=False,
        lw=2.5,
        color="tab:green",
        label="batch norm: one feature",
    )
)
axis.add_patch(
    plt.Rectangle(
        (-0.5, 7.5),
        features,
        1,
        fill=False,
        lw=2.5,
        color="black",
        label="layer norm: one position",
    )
)
for b in range(1, B):
    axis.axhline(b * T - 0.5, color="white", lw=1.5)
axis.set_yticks(
    [b * T + T / 2 - 0.5 for b in range(B)],
    [f"seq {b} ({lengths[b]} real)" for b in range(B)],
)
axis.set(xlabel="feature j", title="What the mean and variance run over")
axis.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), fontsize=8)
fig.tight_layout()
plt.show()

# %% [markdown]
# Now the property that matters for sequences. Take the first sequence of
# that padded batch and normalize it three ways: inside the batch, alone, and
# inside the batch padded to twice the length. If the statistics come from
# the sequence itself, the three results agree. Batch norm runs in training
# mode (batch statistics), once on the raw tensor and once with the padding
# mask, which Keras accepts to leave padded positions out of the statistics.


# %%
def first_sequence(layer, x, mask=None):
    """Normalized real positions of sequence 0, in training mode."""
    kwargs = (
        {"training": True} if isinstance(layer, keras.layers.BatchNormalization) else {}
    )
    if mask is not None:
        kwargs["mask"] = mask
    out = np.asarray(layer(x, **kwargs))
    return out[0, : lengths[0]]


def pad_to(x, mask, length):
    extra = length - x.shape[1]
    x = np.concatenate([x, np.zeros((x.shape[0], extra, x.shape[2]), "float32")], 1)
    mask = np.concatenate([mask, np.zeros((mask.shape[0], extra), bool)], 1)
    return x, mask


long_z, long_real = pad_to(z, real, 2 * T)
variants = {
    "layer norm": (keras.layers.LayerNormalization(), False),
    "batch norm": (keras.layers.BatchNormalization(momentum=0.0), False),
    "batch norm, masked": (keras.layers.BatchNormalization(momentum=0.0), True),
}
changes = {}
for name, (layer, use_mask) in variants.items():
    in_batch = first_sequence(layer, z, real if use_mask else None)
    alone = first_sequence(layer, z[:1], real[:1] if use_mask else None)
    padded = first_sequence(layer, long_z, long_real if use_mask else None)
    changes[name] = {
        "alone vs in batch": float(np.abs(alone - in_batch).max()),
        "more padding vs in batch": float(np.abs(padded - in_batch).max()),
    }
    print(
        f"{name:20s} max change: alone {changes[name]['alone vs in batch']:.3f}, "
        f"padded to {2 * T} {changes[name]['more padding vs in batch']:.3f}"
    )

assert max(changes["layer norm"].values()) < 1e-6
assert changes["batch norm"]["more padding vs in batch"] > 0.1
assert changes["batch norm"]["alone vs in batch"] > 0.1
assert changes["batch norm, masked"]["more padding vs in batch"] < 1e-5
assert changes["batch norm, masked"]["alone vs in batch"] > 0.1

# %% [markdown]
# Layer norm gives the same output (to 1e-6) whatever else is in the
# batch. Unmasked batch norm changes with both the padding and the company;
# masking the padding removes the first dependence but not the second, since
# the statistics still pool the other sequences. This is the slides' reason
# for preferring layer norm in sequence models: lengths vary, padding is
# everywhere, and batches of long sequences are small.

# %%
fig, axis = plt.subplots(figsize=(7, 3))
names = list(changes)
x = np.arange(len(names))
axis.bar(
    x - 0.2,
    [changes[n]["alone vs in batch"] for n in names],
    0.4,
    label="sequence normalized alone",
)
axis.bar(
    x + 0.2,
    [changes[n]["more padding vs in batch"] for n in names],
    0.4,
    label=f"batch padded to length {2 * T}",
)
axis.set_xticks(x, names)
axis.set_ylabel("max |change| of sequence 0")
axis.set_title("How much one sequence's normalized values depend on the batch")
axis.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# **Summary.** The decoder block is the six steps of section 2, with the
# cross attention of Eq. (7.33) normalised over the whole source; written
# out in NumPy they give the layer's output to within 1e-4. The encoder
# block has 3,150,336 parameters and the decoder block 4,199,936, term for
# term as Eq. (7.32) says; six of each and a tied 37,000-token table make
# the 63,045,632 parameters of the `book` preset (19M + 25M + 19M). Layer
# normalization, the block's normalization, is the one whose output for a
# sequence does not depend on the rest of the batch.
