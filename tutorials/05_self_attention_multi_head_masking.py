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
# # 05 · Self attention, multiple heads and masking
#
# Self attention lets every element of a sequence be rewritten as a mixture
# of all the others, with mixing weights computed from the elements
# themselves. This notebook writes the chapter's equations with `keras.ops`
# on small tensors and checks them against the package's layers: simple self
# attention (Eq. 7.23), the chapter's "more versatile" causal form with
# learned $p \times p$ query, key and value matrices (Eq. 7.24) and its
# non-causal generalisation against `keras_seq.layers.MultiHeadAttention`
# with one head, multiple heads (Eq. 7.25, with a note on its printed
# denominator) and the identity behind Eq. (7.26), and masking: the
# chapter's Eq. (7.27) masks keys, which a dot-product score cannot take, so
# implementations mask scores, with a finite sentinel and a zeroing step
# that `keras_seq.masks` provides. It then measures what a causal mask
# guarantees, and how the same word gets different vectors in different
# sentences ("The animal didn't cross the street because it was
# too tired / wide").

# %%
import math
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"

import keras  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from keras_seq import masks  # noqa: E402
from keras_seq.layers import (  # noqa: E402
    MultiHeadAttention,
    ScoreAttention,
    TokenAndPositionEmbedding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)

keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
print("backend:", keras.backend.backend(), "| quick mode:", QUICK)

# %% [markdown]
# ## 1. Simple self attention, Eq. (7.23)
#
# In its simplest form the queries, the keys and the values are the inputs
# themselves. With the inner product as score, the causal form is
#
# $$u^{(t)} = \sum_{\tau \le t} \alpha^{(t)}_\tau x^{(\tau)}, \qquad
# \alpha^{(t)}_\tau = \frac{e^{x^{(t)} \cdot x^{(\tau)}}}
# {\sum_{t' \le t} e^{x^{(t)} \cdot x^{(t')}}}, \qquad (7.23)$$
#
# and the non-causal form sums over all $\tau$. In matrix form with the
# inputs as rows of $X$ ($T \times p$): scores $XX^\top$, a row-wise softmax
# over the allowed positions, and $U = AX$.

# %%
T, p = 5, 4
X = rng.normal(size=(T, p)).astype("float32")

scores = ops.matmul(X, ops.transpose(X))  # (T, T): s(x_t, x_tau)
causal = masks.causal_mask(T, T)  # (T, T), True where tau <= t
A_causal = ops.softmax(ops.where(causal, scores, -np.inf), axis=-1)
A_full = ops.softmax(scores, axis=-1)
U_causal = ops.matmul(A_causal, X)  # (T, p)
U_full = ops.matmul(A_full, X)

np.set_printoptions(precision=3, suppress=True)
print("causal attention weights alpha (row t, column tau):")
print(np.asarray(A_causal))
np.testing.assert_allclose(np.asarray(A_causal).sum(-1), 1.0, atol=1e-6)
assert np.all(np.asarray(A_causal)[~np.asarray(causal)] == 0.0)

# %% [markdown]
# Every row sums to one and the weights above the diagonal are zero. The
# score-function attention of Sec. 7.4, `ScoreAttention(score="dot")`, is the
# same computation with queries, keys and values all set to $X$:

# %%
layer = ScoreAttention(score="dot")
for use_causal_mask, expected in [(True, U_causal), (False, U_full)]:
    context, weights = layer(X[None], X[None], use_causal_mask=use_causal_mask)
    np.testing.assert_allclose(np.asarray(context)[0], np.asarray(expected), atol=1e-5)
print("ScoreAttention(score='dot') reproduces Eq. (7.23), causal and non-causal")

# %% [markdown]
# ## 2. More versatile self attention, Eq. (7.24)
#
# Simple self attention has no parameters, so it cannot learn what to look
# for. The chapter's "more versatile" form maps each input three ways with
# learned $p \times p$ matrices, $z_q^{(t)} = W_q x^{(t)}$ (query),
# $z_k^{(t)} = W_k x^{(t)}$ (key) and $v^{(t)} = W_v x^{(t)}$ (value), and
# keeps the causal sum of Eq. (7.23):
#
# $$u^{(t)} = \sum_{\tau \le t} \alpha^{(t)}_\tau W_v x^{(\tau)}, \qquad
# \alpha^{(t)}_\tau = \frac{e^{s(W_q x^{(t)},\, W_k x^{(\tau)})}}
# {\sum_{t'=1}^{t} e^{s(W_q x^{(t)},\, W_k x^{(t')})}}. \qquad (7.24)$$
#
# Queries and keys decide the weights; the values are what gets mixed. The
# chapter leaves the score $s$ open; the Transformer's is the scaled inner
# product $s(q, k) = q \cdot k / \sqrt{m}$ ($m$ the length of $q$ and $k$,
# here $m = p$), which keeps the scores in a range where the softmax is not
# saturated. Below, Eq. (7.24) term by term in float64 NumPy, one $t$ at a
# time with the sums running to $t$, then in matrix form with a causal mask,
# then `MultiHeadAttention` with one head, no biases, these very matrices as
# its weights and its output projection $W_c$ set to the identity, so that
# its output is $u^{(t)}$ itself.

# %%
W_q, W_k, W_v = (rng.normal(size=(p, p)).astype("float32") for _ in range(3))


def score(q, k):
    """The scaled inner product s(q, k) = q . k / sqrt(m)."""
    return q @ k / math.sqrt(len(q))


def versatile_causal(x, w_q, w_k, w_v):
    """Eq. (7.24) as printed: a loop over t, sums over tau <= t only."""
    x = x.astype("float64")
    u = np.zeros((len(x), w_v.shape[0]))
    for t in range(len(x)):
        # s(W_q x^(t), W_k x^(tau)) for tau = 1..t; later keys never enter.
        s = np.array([score(w_q @ x[t], w_k @ x[tau]) for tau in range(t + 1)])
        alpha = np.exp(s) / np.exp(s).sum()  # denominator: t' = 1..t
        u[t] = sum(alpha[tau] * (w_v @ x[tau]) for tau in range(t + 1))
    return u  # (T, p)


def self_attention(x, w_q, w_k, w_v, causal=False):
    """Eq. (7.24) in matrix form for x of shape (T, p); returns (U, alpha)."""
    q = ops.matmul(x, ops.transpose(w_q))  # (T, m): rows W_q x^(t)
    k = ops.matmul(x, ops.transpose(w_k))  # (T, m): rows W_k x^(tau)
    v = ops.matmul(x, ops.transpose(w_v))  # (T, m_v): rows W_v x^(tau)
    s = ops.matmul(q, ops.transpose(k)) / math.sqrt(w_q.shape[0])  # (T, T)
    if causal:  # tau <= t: scores of later keys become -inf, Eq. (7.27)
        s = ops.where(masks.causal_mask(x.shape[0], x.shape[0]), s, -np.inf)
    alpha = ops.softmax(s, axis=-1)
    return ops.matmul(alpha, v), alpha  # (T, m_v), (T, T)


def one_head_layer(w_q, w_k, w_v):
    """MultiHeadAttention with one head, no biases, W_c = I and these weights."""
    m, m_v = w_q.shape[0], w_v.shape[0]
    layer = MultiHeadAttention(num_heads=1, key_dim=m, value_dim=m_v, use_bias=False)
    width = w_q.shape[1]  # p
    layer.build((None, None, width), (None, None, width))
    # Kernels are stored as (p, heads, m) for the projections and
    # (heads, m_v, p) for the output, i.e. transposes of the book's matrices.
    layer.set_weights(
        [w_q.T[:, None, :], w_k.T[:, None, :], w_v.T[:, None, :], np.eye(width)[None]]
    )
    return layer


U_loop = versatile_causal(X, W_q, W_k, W_v)
U_matrix, _ = self_attention(X, W_q, W_k, W_v, causal=True)
U_layer = one_head_layer(W_q, W_k, W_v)(X[None], X[None], use_causal_mask=True)
np.testing.assert_allclose(np.asarray(U_matrix), U_loop, atol=1e-5)
np.testing.assert_allclose(np.asarray(U_layer)[0], U_loop, atol=1e-5)
print("Eq. (7.24), causal, p x p: loop = matrix form = MultiHeadAttention (1e-5)")

# %% [markdown]
# The chapter then generalises (7.24) in two directions, and the layer
# follows both. The non-causal form (the red part of its Fig. 7.12) sums
# over every $\tau \in \{1, \dots, T\}$, in the numerator's sum and in the
# softmax's denominator alike, for when the whole sequence is available. And
# the projections need not be square (its footnote 10): queries and keys may
# have $m$ entries, $W_q, W_k \in \mathbb{R}^{m \times p}$, and values $m_v$,
# $W_v \in \mathbb{R}^{m_v \times p}$, the shapes multi-head attention uses
# below. Here $m = 3$, $m_v = p = 4$, no mask:

# %%
m, m_v = 3, p
W_q = rng.normal(size=(m, p)).astype("float32")
W_k = rng.normal(size=(m, p)).astype("float32")
W_v = rng.normal(size=(m_v, p)).astype("float32")

U_hand, alpha_hand = self_attention(X, W_q, W_k, W_v)
U_layer, alpha_layer = one_head_layer(W_q, W_k, W_v)(
    X[None], X[None], return_attention_scores=True
)
np.testing.assert_allclose(np.asarray(U_layer)[0], np.asarray(U_hand), atol=1e-5)
np.testing.assert_allclose(
    np.asarray(alpha_layer)[0, 0], np.asarray(alpha_hand), atol=1e-6
)
assert np.all(np.asarray(alpha_hand) > 0)  # every tau gets weight, later ones too
print("non-causal, m = 3, m_v = 4: outputs and weights equal to 1e-5")

# %% [markdown]
# ## 3. Multiple heads, Eq. (7.25) and (7.26)
#
# With $H$ heads, head $h$ has its own $W_q^h, W_k^h \in \mathbb{R}^{m \times p}$
# and $W_v^h \in \mathbb{R}^{m_v \times p}$ and applies the non-causal form of
# Eq. (7.24) with them:
#
# $$u^{h,(t)} = \sum_{\tau=1}^{T} \alpha^{h,(t)}_\tau W_v^h x^{(\tau)}, \qquad
# \alpha^{h,(t)}_\tau = \frac{e^{s(W_q^h x^{(t)},\, W_k^h x^{(\tau)})}}
# {\sum_{t'=1}^{T} e^{s(W_q^h x^{(t)},\, W_k^h x^{(t')})}}. \qquad (7.25)$$
#
# The chapter prints the denominator of (7.25) as a sum over $t' = 1, \dots, t$,
# the causal denominator of (7.24), while the numerator's sum runs to $T$ and
# the text calls the form non-causal. Taken literally, the weights of every
# row $t < T$ would then add up to more than one (checked below), so we read
# the upper limit $t$ as a typo for $T$. The heads are combined by
#
# $$u^{(t)} = \sum_{h=1}^H W_c^h u^{h,(t)}, \qquad
# W_c^h \in \mathbb{R}^{p \times m_v}. \qquad (7.26)$$
#
# Stacking the $W_c^h$ side by side into one $p \times H m_v$ matrix $W_c$
# gives the usual implementation: concatenate the heads, apply one matrix.
# Both are computed below, and the layer with the same weights as well.

# %%
H, m, m_v, p, T = 3, 2, 3, 6, 5
X = rng.normal(size=(T, p)).astype("float32")
heads = {
    name: rng.normal(size=(H, rows, p)).astype("float32")
    for name, rows in [("q", m), ("k", m), ("v", m_v)]
}
W_c = [rng.normal(size=(p, m_v)).astype("float32") for _ in range(H)]

# Eq. (7.25): u^{h,(t)} = sum_{tau=1}^{T} alpha^{h,(t)}_tau W_v^h x^(tau), one
# softmax over all T keys per head, with that head's W_q^h, W_k^h, W_v^h.
head_outputs = [
    self_attention(X, heads["q"][h], heads["k"][h], heads["v"][h])[0] for h in range(H)
]  # H tensors of shape (T, m_v)
# Eq. (7.26): u^(t) = sum_h W_c^h u^{h,(t)}.
summed = sum(
    ops.matmul(u_h, ops.transpose(W_c[h])) for h, u_h in enumerate(head_outputs)
)
concatenated = ops.concatenate(head_outputs, axis=-1)  # (T, H m_v)
projected = ops.matmul(concatenated, ops.transpose(np.concatenate(W_c, axis=1)))

gap = float(np.abs(np.asarray(summed) - np.asarray(projected)).max())
print(f"max |sum_h W_c^h u^h - W_c [u^1; ...; u^H]| = {gap:.1e}")
np.testing.assert_allclose(np.asarray(summed), np.asarray(projected), atol=1e-5)

multi_head = MultiHeadAttention(num_heads=H, key_dim=m, value_dim=m_v, use_bias=False)
multi_head.build((None, T, p), (None, T, p))
multi_head.set_weights(
    [np.transpose(heads[n], (2, 0, 1)) for n in ("q", "k", "v")]  # (p, H, m)
    + [np.stack([w.T for w in W_c])]  # (H, m_v, p)
)
U_layer = np.asarray(multi_head(X[None], X[None]))[0]
np.testing.assert_allclose(U_layer, np.asarray(summed), atol=1e-5)
print("MultiHeadAttention with these weights gives the same u (to 1e-5)")
print(
    f"parameters: H(2mp + 2m_v p) = {H * (2 * m * p + 2 * m_v * p)}, "
    f"layer: {multi_head.count_params()}"
)
assert multi_head.count_params() == H * (2 * m * p + 2 * m_v * p)

# %% [markdown]
# The printed denominator, taken literally for head 1: numerators
# $e^{s_{t\tau}}$ for all $\tau \le T$, divided by their partial sum up to
# $t$. Row $t$ then adds up to
# $\sum_{\tau=1}^{T} e^{s_{t\tau}} / \sum_{t'=1}^{t} e^{s_{tt'}}$, which is
# above one for every $t < T$ and exactly one only in the last row.

# %%
q = X @ heads["q"][0].T  # (T, m)
k = X @ heads["k"][0].T  # (T, m)
numerators = np.exp(q @ k.T / math.sqrt(m))  # (T, T): e^{s_{t tau}}, all tau
printed = numerators / np.cumsum(numerators, axis=-1).diagonal()[:, None]
row_sums = printed.sum(-1)
print("row sums with the denominator summed to t:", [f"{r:.6g}" for r in row_sums])
assert np.all(row_sums[:-1] > 1.0) and abs(row_sums[-1] - 1.0) < 1e-6

# %% [markdown]
# ## 4. Masking, Eq. (7.27)
#
# An encoder uses (7.25) as it stands; a decoder must not look ahead, so the
# weight of any key after time $t$ has to be zero. The chapter makes (7.25)
# causal by setting, when the weights at time $t$ are computed, the *keys*
# of the later positions to $-\infty$:
#
# $$z_k^{(t+1)} = -\infty, \quad z_k^{(t+2)} = -\infty, \quad \dots, \quad
# z_k^{(T)} = -\infty, \qquad (7.27)$$
#
# so that the softmax turns them into $\alpha^{(t)}_{t+1} = \dots =
# \alpha^{(t)}_T = 0$. With the inner-product score this does not work as
# written. A key of $-\infty$ entries gives $q \cdot k = \sum_i q_i \cdot
# (-\infty)$: $-\infty$ only when every entry of the query is positive,
# $+\infty$ when every entry is negative (the future key would take all the
# weight; in floating point the softmax's $\infty - \infty$ gives `nan`), and
# `nan` as soon as the query has a zero entry ($0 \cdot (-\infty)$) or
# entries of both signs ($+\infty - \infty$). Either way the future key's
# weight comes out `nan` instead of zero, and the row no longer sums to one
# (whether the past key's weight survives depends on the order of the
# softmax kernel's steps, which differs between CPUs).

# %%
future_key = np.full(3, -np.inf, "float32")  # z_k^(tau) = -inf, tau > t
past_key = np.array([0.3, -0.2, 0.5], "float32")
queries = {
    "all entries positive": np.array([0.5, 1.0, 2.0], "float32"),
    "all entries negative": np.array([-0.5, -1.0, -2.0], "float32"),
    "a zero entry": np.array([0.5, 0.0, 2.0], "float32"),
    "mixed signs": np.array([0.5, -1.0, 2.0], "float32"),
}
key_masked = {}
with np.errstate(invalid="ignore"):
    for name, q in queries.items():
        row = np.array([q @ past_key, q @ future_key], "float32")  # (tau <= t, tau > t)
        key_masked[name] = np.asarray(ops.softmax(row))
        print(
            f"query with {name:22s} q.k_future = {row[1]:5}  alpha = {key_masked[name]}"
        )
assert np.array_equal(key_masked["all entries positive"], [1.0, 0.0])
for name in ("all entries negative", "a zero entry", "mixed signs"):
    assert np.isnan(key_masked[name][1])  # the future key: nan, not 0

# %% [markdown]
# What the chapter's sentence after (7.27) asks for, zero weights on the
# future, is what the lecture slides (002) and every implementation do: mask
# the *score* rather than the key,
#
# $$e_{t,\tau} = \begin{cases} s(z_q^{(t)}, z_k^{(\tau)}) & \tau \le t \\
# -\infty & \tau > t \end{cases}, \qquad
# \alpha^{(t)}_\tau = \frac{e^{e_{t,\tau}}}{\sum_{t'=1}^{T} e^{e_{t,t'}}},$$
#
# which is the same as replacing $e^{s}$ by $0$ inside the softmax for every
# $\tau > t$. Any query now gives the future key a weight of exactly zero.
# (Sections 1 and 2 masked this way: `ops.where(causal, scores, -np.inf)`.)

# %%
for name, q in queries.items():
    # Eq. (7.27) as implemented: the score of the future key is -inf.
    row = np.array([q @ past_key, -np.inf], "float32")
    alpha = np.asarray(ops.softmax(row))
    assert np.array_equal(alpha, [1.0, 0.0]), name
print("score mask: alpha = [1, 0] for all four queries")

# %% [markdown]
# Batches add a second reason to mask: sequences are padded to a common
# length with token id 0, and no real token should attend to padding. In
# `keras_seq` every mask is boolean, `True` meaning "may attend", and
# `keras_seq.masks` is the one place they are built and combined (by logical
# AND). For one padded sequence of 6 slots holding 4 real tokens:

# %%
token_ids = np.array([[12, 7, 30, 5, 0, 0]], "int32")
length = token_ids.shape[1]
padding = masks.padding_mask(token_ids)  # (1, T): real tokens
padding_attention = masks.attention_mask_from_padding(padding, padding)  # (1, T, T)
causal = masks.causal_mask(length, length)  # (T, T)
combined = masks.merge_masks(padding_attention, causal[None])  # (1, T, T)

panels = {
    "padding mask": np.asarray(padding_attention)[0],
    "causal mask": np.asarray(causal),
    "padding AND causal": np.asarray(combined)[0],
}
fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
labels = [f"{i}:{t}" for i, t in enumerate(token_ids[0])]
for axis, (title, mask) in zip(axes, panels.items()):
    axis.imshow(mask, cmap="Blues", vmin=0, vmax=1.3)
    for (row, column), allowed in np.ndenumerate(mask):
        axis.text(
            column,
            row,
            "1" if allowed else "0",
            ha="center",
            va="center",
            fontsize=8,
            color="black" if allowed else "gray",
        )
    axis.set_xticks(range(length), labels, fontsize=8)
    axis.set_yticks(range(length), labels, fontsize=8)
    axis.set(xlabel="key (position:token id)", ylabel="query", title=title)
fig.suptitle("True = may attend; token id 0 is padding", fontsize=10)
fig.tight_layout()
if not QUICK:
    os.makedirs("../docs/images", exist_ok=True)
    fig.savefig("../docs/images/tutorial_05_masks.png", dpi=110)
plt.show()

# %% [markdown]
# ### A sentinel instead of $-\infty$, and the zeroing step
#
# Padding breaks the literal $-\infty$ a second way. A padded query row has
# no key it may attend to, so every one of its scores is $-\infty$ and the
# softmax computes $e^{-\infty - (-\infty)}$, that is $0/0$: `nan`.
# `keras_seq.masks.masked_softmax` therefore writes a large negative but
# finite sentinel, `masks.masked_value("float32")` (0.7 times the most
# negative float32, about $-2.38 \times 10^{38}$). That removes the `nan`,
# not the problem: when every score of a row is the same sentinel, the
# softmax spreads the row evenly, $1/T = 1/6$ per key, as if the padded
# query attended to everything. The zeros come from a second step, *after*
# the softmax, `weights = where(mask, weights, 0)`, which sets every masked
# weight to exactly zero, so a fully masked row becomes all zeros. Each step
# on the mask above:

# %%
keras.utils.set_random_seed(1)
scores = keras.random.normal((1, length, length), seed=3)  # (1, T, T)
allowed = panels["padding AND causal"]  # (T, T), rows 4 and 5 all False

with_inf = np.asarray(ops.softmax(ops.where(combined, scores, -np.inf), axis=-1))[0]
sentinel = masks.masked_value("float32")
with_sentinel = np.asarray(ops.softmax(ops.where(combined, scores, sentinel), axis=-1))[
    0
]
zeroed = np.where(allowed, with_sentinel, 0.0)  # the step after the softmax
library = np.asarray(masks.masked_softmax(scores, combined, "float32"))[0]

print(f"sentinel = {sentinel:.3e}")
print("-inf:            padded query rows\n", with_inf[4:])
print("sentinel only:   padded query rows\n", with_sentinel[4:])
print("sentinel, then where(mask, weights, 0):\n", zeroed[4:])
assert sentinel == 0.7 * float(np.finfo("float32").min)
assert np.all(np.isnan(with_inf[4:])) and np.all(np.isfinite(with_inf[:4]))
np.testing.assert_allclose(with_sentinel[4:], 1 / length, atol=1e-7)  # 1/6 each
assert np.all(zeroed[4:] == 0.0)
np.testing.assert_array_equal(library, zeroed)  # masked_softmax does both steps
np.testing.assert_allclose(with_sentinel[:4], with_inf[:4], atol=1e-7)

# %% [markdown]
# In rows with at least one allowed key the sentinel and $-\infty$ give the
# same weights; only the fully masked rows differ. `MultiHeadAttention`
# computes its weights with `masked_softmax` and then, for the same reason,
# sets the whole output vector of a query with no key to zero: with a zero
# weight row the context is zero, but the output projection's bias would
# still come through. Measured on the layer: masked weights are exactly
# zero, the real query rows sum to one, and the padded query rows, weights
# and outputs alike, are all zero.

# %%
keras.utils.set_random_seed(1)
attention = MultiHeadAttention(num_heads=2, key_dim=4)
x = keras.random.normal((1, length, 8), seed=2)
outputs, weights = attention(
    x,
    x,
    query_mask=padding,
    value_mask=padding,
    use_causal_mask=True,
    return_attention_scores=True,
)
weights, outputs = np.asarray(weights), np.asarray(outputs)  # (1, N, T, T), (1, T, D)
print("head 0 weights:\n", weights[0, 0])
assert np.all(weights[0][:, ~allowed] == 0.0)
np.testing.assert_allclose(weights[0, :, :4].sum(-1), 1.0, atol=1e-6)
assert np.all(weights[0, :, 4:] == 0.0)
assert np.all(outputs[0, 4:] == 0.0) and np.all(np.abs(outputs[0, :4]).sum(-1) > 0)

# %% [markdown]
# ## 5. What causality guarantees, measured
#
# If the output at $t$ may only depend on inputs up to $t$, then changing
# the input at a later position must leave every earlier output untouched.
# One `TransformerDecoderBlock` (self attention without an encoder, as in a
# decoder-only language model), called with and without its causal mask on
# the same weights: perturb the input at position 5 of 10 and measure how
# much each output moves.

# %%
keras.utils.set_random_seed(3)
T, p, changed_at = 10, 16, 5
block = TransformerDecoderBlock(num_heads=2, ff_dim=32)
x = np.asarray(keras.random.normal((1, T, p), seed=4))
x_perturbed = x.copy()
x_perturbed[0, changed_at] += np.asarray(keras.random.normal((p,), seed=5))

movement = {}
for use_causal_mask in (True, False):
    before = np.asarray(block(x, use_causal_mask=use_causal_mask))
    after = np.asarray(block(x_perturbed, use_causal_mask=use_causal_mask))
    name = "causal" if use_causal_mask else "unmasked"
    movement[name] = np.abs(after - before).max(axis=-1)[0]  # (T,)
    print(f"{name:8s} max |change| per position:", movement[name].round(3))

assert movement["causal"][:changed_at].max() == 0.0
assert movement["causal"][changed_at:].min() > 1e-3
assert movement["unmasked"].min() > 1e-3  # every position moves

fig, axis = plt.subplots(figsize=(8, 3.2))
positions = np.arange(T)
axis.bar(positions - 0.2, movement["causal"], 0.4, label="causal mask")
axis.bar(positions + 0.2, movement["unmasked"], 0.4, label="no mask")
axis.axvline(changed_at - 0.5, color="gray", ls=":")
axis.text(changed_at - 0.4, axis.get_ylim()[1] * 0.9, "input changed here", fontsize=8)
axis.set(
    xlabel="output position t",
    ylabel="max |change| of the output",
    title=f"Perturbing the input at position {changed_at}",
    xticks=positions,
)
axis.legend()
fig.tight_layout()
if not QUICK:
    fig.savefig("../docs/images/tutorial_05_causality.png", dpi=110)
plt.show()

# %% [markdown]
# With the mask, outputs 0 to 4 are bit-for-bit identical: the perturbed
# key gets a weight of exactly zero. Without it, every position moves. This
# is what makes parallel teacher forcing legitimate: all $T$ positions are
# computed at once, yet none of them sees its own future.

# %% [markdown]
# ## 6. The same word, two contexts
#
# The lecture notes' example: in "The animal didn't cross the street because
# it was too **tired**", "it" is the animal; with "too **wide**" it is the
# street, and the word that decides comes *after* "it". A word embedding
# gives "it" one vector whatever the sentence; a self-attention encoder
# gives it a vector computed from the whole sentence. Three small models
# with random weights (no training: this measures what each *can* depend
# on, not whether it resolves the reference):
#
# - context-free: token embedding plus learned position embedding;
# - encoder: the same embedding and two `TransformerEncoderBlock`s (every
#   position attends to every position);
# - causal decoder: the same embedding and two `TransformerDecoderBlock`s
#   with the causal mask.

# %%
sentences = [
    "the animal didn't cross the street because it was too tired",
    "the animal didn't cross the street because it was too wide",
]
words = sorted({w for s in sentences for w in s.split()})
word_ids = {w: i + 1 for i, w in enumerate(words)}  # 0 is padding
ids = np.array([[word_ids[w] for w in s.split()] for s in sentences], "int32")
tokens = sentences[0].split()
it_at = tokens.index("it")

keras.utils.set_random_seed(7)
embedding = TokenAndPositionEmbedding(len(words) + 1, max_length=16, embedding_dim=32)
encoder_blocks = [TransformerEncoderBlock(num_heads=4, ff_dim=64) for _ in range(2)]
decoder_blocks = [TransformerDecoderBlock(num_heads=4, ff_dim=64) for _ in range(2)]


def contextual(token_ids, blocks):
    x = embedding(token_ids)
    for block in blocks:
        x = block(x)
    return np.asarray(x)  # (2, T, D)


vectors = {
    "context-free": np.asarray(embedding(ids)),
    "encoder": contextual(ids, encoder_blocks),
    "causal decoder": contextual(ids, decoder_blocks),
}
relative = {
    name: np.linalg.norm(v[0] - v[1], axis=-1) / np.linalg.norm(v[0], axis=-1)
    for name, v in vectors.items()
}  # per position: |v_tired - v_wide| / |v_tired|
for name, r in relative.items():
    print(f"{name:15s} relative change of 'it': {r[it_at]:.3f}")

assert relative["context-free"][it_at] == 0.0
assert relative["encoder"][it_at] > 0.05
assert relative["causal decoder"][it_at] < 1e-6
# Every encoder output mixes in the last word; no causal one but the last does.
assert np.all(relative["encoder"] > 1e-3)
assert relative["causal decoder"][:-1].max() < 1e-6 < relative["causal decoder"][-1]

fig, axis = plt.subplots(figsize=(9, 3.4))
x_positions = np.arange(len(tokens))
for k, (name, r) in enumerate(relative.items()):
    axis.bar(x_positions + (k - 1) * 0.27, r, 0.27, label=name)
axis.set_xticks(x_positions, tokens[:-1] + ["tired / wide"], rotation=30, ha="right")
axis.get_xticklabels()[it_at].set_fontweight("bold")
axis.set(
    ylabel="|v(tired) - v(wide)| / |v(tired)|",
    title="How much each word's vector changes when 'tired' becomes 'wide'",
)
axis.legend()
fig.tight_layout()
plt.show()

# %% [markdown]
# The context-free vector of "it" is identical in the two sentences. The
# encoder's is not, and neither is that of any other word: each output mixes
# in the last word. The causal decoder's vectors change only at the last
# position, because "tired" and "wide" come after every other word. So an
# encoder (bidirectional) representation is the kind that *can* tell the two
# "it"s apart; a causal one, at the position of "it", cannot. Whether a given
# model actually links "it" to "animal" or "street" is a property of its
# training, which these random weights do not have; we do not claim it here.
#
# **Summary.** Eq. (7.23), and Eq. (7.24) in the chapter's causal form with
# $p \times p$ matrices and in its non-causal, rectangular generalisation,
# written with `keras.ops` match `ScoreAttention` and a one-head
# `MultiHeadAttention` to 1e-5; summing $W_c^h u^h$ over heads, Eq. (7.25)
# and (7.26), equals concatenating and projecting (to 1e-5), and the printed
# denominator of (7.25) would make rows $t < T$ sum to more than one. Setting
# keys to $-\infty$ as (7.27) is printed gives `nan` weights for three of the
# four queries tried;
# masking the scores gives the zero weights it intends. A finite sentinel
# alone leaves a fully padded row uniform at $1/T$; the zeroing step after
# the softmax makes it zero. A causal block's earlier outputs are unchanged,
# bit for bit, when a later input changes.
