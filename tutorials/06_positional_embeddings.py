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
# # 06 · Positional embeddings: one-hot, learned and sinusoidal
#
# Self attention treats its input as a set: shuffle the sequence and the
# outputs are shuffled the same way, nothing else changes. This notebook
# measures that blindness, then gives positions back in the three ways of
# Sec. 7.5: a one-hot position vector appended to each input, a learned
# position table (`LearnedPositionalEmbedding`, the linear special case of
# Eq. 7.28, whose general form is built and checked too) and the fixed sines
# and cosines of Eq. (7.29) (`SinusoidalPositionalEncoding`), whose Fig. 7.14
# it redraws and whose values it checks against the formula. It closes with
# what adding (Eq. 7.30) rather than appending the code does to the width and
# the parameter count, and a small trained comparison on a task that cannot
# be solved without positions.

# %%
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"

import keras  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

from keras_seq.layers import (  # noqa: E402
    LearnedPositionalEmbedding,
    MultiHeadAttention,
    SinusoidalPositionalEncoding,
    TokenAndPositionEmbedding,
    TransformerEncoderBlock,
)
from keras_seq.layers.sinusoidal_positional_encoding import (  # noqa: E402
    sinusoidal_encoding,
)

keras.utils.set_random_seed(0)
print("backend:", keras.backend.backend(), "| quick mode:", QUICK)

# %% [markdown]
# ## 1. Self attention does not see order
#
# In Eq. (7.25) the output at time $t$ is a weighted sum over all $\tau$, and
# the weights depend on the vectors, not on their indices. So permuting the
# inputs permutes the outputs, and two equal inputs get equal outputs
# wherever they stand. The chapter's example: $T = 4$, $p = 2$, and
# $x^{(1)} = x^{(4)} = (0.2, -1.3)$.

# %%
x = np.array([[[0.2, -1.3], [0.7, 0.1], [-0.4, 0.9], [0.2, -1.3]]], "float32")
attention = MultiHeadAttention(num_heads=1, key_dim=2)
u = np.asarray(attention(x, x))
print("u(1) =", u[0, 0].round(4), " u(4) =", u[0, 3].round(4))
np.testing.assert_allclose(u[0, 0], u[0, 3], atol=1e-6)

# "deep learning" against "learning deep": reversing the inputs only
# reverses the outputs.
reversed_u = np.asarray(attention(x[:, ::-1], x[:, ::-1]))
np.testing.assert_allclose(reversed_u[:, ::-1], u, atol=1e-6)
print("equal inputs -> equal outputs; reversed inputs -> reversed outputs")

# %% [markdown]
# ## 2. One-hot positions, appended
#
# The most basic remedy appends the one-hot vector $e_t \in \mathbb{R}^T$ to
# $x^{(t)}$, so that $\tilde p = p + T$:
# $\tilde x^{(1)} = (0.2, -1.3, 1, 0, 0, 0)$ and
# $\tilde x^{(4)} = (0.2, -1.3, 0, 0, 0, 1)$. The two equal words are now
# different vectors, and so are their outputs.

# %%
T = x.shape[1]
one_hot = np.broadcast_to(np.eye(T, dtype="float32"), (1, T, T))
x_tilde = np.concatenate([x, one_hot], axis=-1)  # (1, T, p + T)
print("x~(1) =", x_tilde[0, 0], "\nx~(4) =", x_tilde[0, 3])
attention_tilde = MultiHeadAttention(num_heads=1, key_dim=2)
u_tilde = np.asarray(attention_tilde(x_tilde, x_tilde))
gap = float(np.abs(u_tilde[0, 0] - u_tilde[0, 3]).max())
print(f"max |u(1) - u(4)| with one-hot positions: {gap:.4f}")
assert gap > 1e-3

# %% [markdown]
# The price is width: $T$ extra features, a model that cannot take sequences
# longer than the $T$ it was built for, and one new weight per position in
# every matrix that reads the input.

# %% [markdown]
# ## 3. Learned positions: Eq. (7.28) and its linear special case
#
# Eq. (7.28) encodes token and position jointly,
#
# $$\tilde x^{(t)} = W_1 S\big(W_2 x^{(t)} + W_3 e_t + b\big)
# \in \mathbb{R}^{\tilde p}, \qquad (7.28)$$
#
# with learned $W_1 \in \mathbb{R}^{\tilde p \times \tilde p}$,
# $W_2 \in \mathbb{R}^{\tilde p \times p}$,
# $W_3 \in \mathbb{R}^{\tilde p \times T}$, $b \in \mathbb{R}^{\tilde p}$ and
# an element-wise activation $S$ such as ReLU. The product $W_3 e_t$ is
# column $t$ of $W_3$: a learned vector per position. What
# `LearnedPositionalEmbedding` stores, a (max_length, D) table whose row $t$
# is added to the token's vector, is not (7.28) itself but its linear special
# case: $W_1 = I$, $S$ the identity and $b = 0$, which leaves
# $\tilde x^{(t)} = W_2 x^{(t)} + W_3 e_t$. With $x^{(t)}$ the one-hot
# vector of the token, $W_2 x^{(t)}$ is a row of the token table, and that
# sum is exactly `TokenAndPositionEmbedding(positional="learned")`. First the
# lookup against the one-hot product:

# %%
max_length, width = 16, 6
positions = LearnedPositionalEmbedding(max_length)
looked_up = np.asarray(positions(np.zeros((1, 5, width), "float32")))[0]  # (5, D)
W3 = np.asarray(positions.embeddings).T  # (D, max_length), columns = positions
e = np.eye(max_length, dtype="float32")[:5]  # e_0 ... e_4 as rows
np.testing.assert_allclose(looked_up, e @ W3.T, atol=1e-7)
print("W_3 e_t equals row t of the table; table shape", positions.embeddings.shape)

# %% [markdown]
# The general form, built from Keras layers: `Dense` layers without bias for
# $W_1$ and $W_2$, a `LearnedPositionalEmbedding` for $W_3 e_t$, a bias
# vector $b$ and an activation $S$. Given the token table as $W_2$, the
# position table as $W_3$, $W_1 = I$, $b = 0$ and $S$ linear, it must return
# what `TokenAndPositionEmbedding` returns for the same token ids; with ReLU
# and a random $W_1$ it is a different, nonlinear map, with
# $\tilde p^2 + \tilde p$ more parameters.


# %%
@keras.saving.register_keras_serializable(package="tutorial_06")
class JointPositionEncoding(keras.layers.Layer):
    """Eq. (7.28): (B, T, p) inputs -> W_1 S(W_2 x + W_3 e_t + b), (B, T, p~)."""

    def __init__(self, max_length, output_dim, activation="relu", **kwargs):
        super().__init__(**kwargs)
        self.max_length, self.output_dim = max_length, output_dim
        self.activation = keras.activations.get(activation)
        self.w1 = keras.layers.Dense(output_dim, use_bias=False)  # W_1
        self.w2 = keras.layers.Dense(output_dim, use_bias=False)  # W_2
        self.w3 = LearnedPositionalEmbedding(max_length)  # rows W_3 e_t

    def build(self, input_shape):
        self.w2.build(input_shape)
        self.w3.build(tuple(input_shape[:-1]) + (self.output_dim,))
        self.b = self.add_weight(shape=(self.output_dim,), initializer="zeros")
        self.w1.build(tuple(input_shape[:-1]) + (self.output_dim,))

    def call(self, x):
        hidden = self.w2(x)  # (B, T, p~): W_2 x^(t)
        hidden = hidden + self.w3(hidden) + self.b  # + W_3 e_t + b
        return self.w1(self.activation(hidden))  # W_1 S(...)

    def get_config(self):
        return {
            **super().get_config(),
            "max_length": self.max_length,
            "output_dim": self.output_dim,
            "activation": keras.activations.serialize(self.activation),
        }


vocabulary = 100
embedding = TokenAndPositionEmbedding(
    vocabulary_size=vocabulary, max_length=max_length, embedding_dim=width
)
token_ids = np.array([[5, 17, 5, 42, 99]], "int32")
reference = np.asarray(embedding(token_ids))  # (1, 5, D)
one_hot_tokens = np.eye(vocabulary, dtype="float32")[token_ids]  # x^(t), p = V

special = JointPositionEncoding(max_length, width, activation="linear")
special.build((None, None, vocabulary))
special.w2.set_weights([np.asarray(embedding.token_embedding.embeddings)])  # W_2
special.w3.set_weights([np.asarray(embedding.position_embedding.embeddings)])  # W_3
special.w1.set_weights([np.eye(width, dtype="float32")])  # W_1 = I; b = 0 already
np.testing.assert_allclose(np.asarray(special(one_hot_tokens)), reference, atol=1e-6)
print("Eq. (7.28) with W_1 = I, S = identity, b = 0 equals TokenAndPositionEmbedding")

general = JointPositionEncoding(max_length, width, activation="relu")
general.build((None, None, vocabulary))
general.set_weights(special.get_weights())
general.w1.set_weights([np.asarray(keras.random.normal((width, width), seed=3))])
gap = float(np.abs(np.asarray(general(one_hot_tokens)) - reference).max())
print(f"with S = ReLU and a random W_1: max |difference| = {gap:.3f}")
assert gap > 1e-2

extra = general.count_params() - embedding.count_params()
print(
    f"TokenAndPositionEmbedding, learned: {embedding.count_params()} parameters "
    f"= {vocabulary} x {width} (tokens) + {max_length} x {width} (positions); "
    f"Eq. (7.28) in general: {general.count_params()} (+{extra} = W_1 and b)"
)
assert embedding.count_params() == vocabulary * width + max_length * width
assert extra == width * width + width

# %% [markdown]
# Appending $e_t$ and then applying any linear map (the first thing attention
# does) also amounts to adding a learned vector per position, since
# $W[x; e_t] = W_x x + W_e e_t$. The learned table skips the wide
# intermediate vector, but it still holds one row per position up to
# `max_length` and knows nothing about positions it never saw in training.

# %% [markdown]
# ## 4. Sines and cosines, Eq. (7.29), and Fig. 7.14
#
# With $p_e$ even and $i = 0, \dots, p_e/2 - 1$,
#
# $$r^{(t)}_{2i} = \sin\Big(\frac{t}{M^{2i/p_e}}\Big), \qquad
# r^{(t)}_{2i+1} = \cos\Big(\frac{t}{M^{2i/p_e}}\Big), \qquad M = 10{,}000.
# \qquad (7.29)$$
#
# Pair $i$ is a sine and a cosine of wavelength $2\pi M^{2i/p_e}$, from
# $2\pi$ for the first pair to almost $2\pi M$ for the last: fast columns
# tell neighbours apart, slow ones tell the beginning from the end. First the
# package's table against the formula written directly in float64 NumPy, for
# the size of Fig. 7.14, $p_e = 768$ and $T = 4000$. (The package counts
# positions from 0, the book from 1; row $t$ of the table is position $t$ in
# both.)

# %%
p_e, T_fig, M = 768, 4000, 10_000
table = np.asarray(sinusoidal_encoding(T_fig, p_e))  # (T, p_e), float32

t = np.arange(T_fig, dtype="float64")[:, None]
i = np.arange(p_e // 2, dtype="float64")[None, :]
angles = t / M ** (2 * i / p_e)
formula = np.zeros((T_fig, p_e))
formula[:, 0::2] = np.sin(angles)
formula[:, 1::2] = np.cos(angles)

error_60 = np.abs(table[:60] - formula[:60]).max()
error_all = np.abs(table - formula).max()
print(f"max |package - formula|, first 60 positions: {error_60:.1e}")
print(f"max |package - formula|, all {T_fig} positions: {error_all:.1e}")
assert error_60 < 1e-5 and error_all < 1e-3

golden = {
    (0, 0): 0.0,  # sin(0)
    (0, 1): 1.0,  # cos(0)
    (1, 0): np.sin(1.0),  # 0.841471
    (1, 1): np.cos(1.0),  # 0.540302
    (50, 2): np.sin(50 / M ** (2 / p_e)),
    (51, 767): np.cos(51 / M ** (766 / p_e)),
}
for (row, column), value in golden.items():
    print(f"r_{column}^({row}) = {table[row, column]: .6f} (formula {value: .6f})")
    assert abs(table[row, column] - value) < 1e-6

# %% [markdown]
# The layer adds the same table to its input (`mode="add"`, Eq. 7.30) or
# appends it (`mode="concat"`). On zero inputs both return the code itself:

# %%
zeros = np.zeros((1, 60, p_e), "float32")
added = np.asarray(SinusoidalPositionalEncoding()(zeros))[0]
appended = np.asarray(
    SinusoidalPositionalEncoding(mode="concat", output_dim=p_e)(zeros[:, :, :4])
)[0]
np.testing.assert_allclose(added, table[:60], atol=1e-6)
np.testing.assert_allclose(appended[:, 4:], table[:60], atol=1e-6)
print("add mode:", added.shape, "| concat mode on width 4:", appended.shape)

# %% [markdown]
# Fig. 7.14 (a) is the first 60 positions by the first 200 features of that
# table; (b) is the difference between the codes of two neighbouring
# positions, $t = 50$ and $t = 51$.

# %%
difference = table[51] - table[50]
fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
image = left.imshow(
    table[1:61, :200],
    aspect="auto",
    cmap="viridis",
    vmin=-1,
    vmax=1,
    extent=(-0.5, 199.5, 60.5, 0.5),
)
left.set(
    xlabel="feature j",
    ylabel="position t",
    title=f"(a) $r_j^{{(t)}}$, $p_e$ = {p_e}, t = 1..60, j < 200",
)
fig.colorbar(image, ax=left, fraction=0.046)
right.plot(difference, lw=0.8)
right.set(
    xlabel="feature j",
    ylabel="$r_j^{(51)} - r_j^{(50)}$",
    title="(b) difference between the codes of t = 51 and t = 50",
)
right.grid(alpha=0.3)
fig.tight_layout()
if not QUICK:
    os.makedirs("../docs/images", exist_ok=True)
    fig.savefig("../docs/images/tutorial_06_sinusoidal.png", dpi=110)
plt.show()

# %% [markdown]
# Where does the difference in (b) live? Pair $i$ moves by an angle of
# $M^{-2i/p_e}$ per step, so the change of its two features is at most about
# that angle: large for the first features, negligible for the last.

# %%
envelope = np.abs(difference)
for threshold in (0.5, 0.1, 0.01):
    last = int(np.nonzero(envelope > threshold)[0].max())
    print(f"|difference| > {threshold:<4}: only among the first {last + 1} features")
step = M ** (-2 * np.arange(p_e // 2) / p_e)  # the angle pair i turns per step
assert np.all(envelope[0::2] <= step + 1e-6) and np.all(envelope[1::2] <= step + 1e-6)

# %% [markdown]
# Two more properties follow from the formula and are easy to check. The
# values stay in $[-1, 1]$ whatever $t$, unlike a raw position index. And the
# inner product of two codes depends only on their distance,
# $r^{(t)} \cdot r^{(s)} = \sum_i \cos\big((t-s)/M^{2i/p_e}\big)$: the code
# carries relative position in a form a dot-product score can read.

# %%
assert np.abs(table).max() <= 1.0 + 1e-6
dots = {(t_, s_): float(table[t_] @ table[s_]) for t_, s_ in [(10, 3), (1007, 1000)]}
print(
    "r(10).r(3) =",
    round(dots[(10, 3)], 3),
    "| r(1007).r(1000) =",
    round(dots[(1007, 1000)], 3),
)
assert abs(dots[(10, 3)] - dots[(1007, 1000)]) < 1e-2

# %% [markdown]
# ## 5. Adding (Eq. 7.30) or appending
#
# Appending a $p_e$-wide code makes every vector $\tilde p = p + p_e$ wide;
# Eq. (7.30) adds a $p_e = p$ code instead, and the width stays $p$. Width is
# what the blocks pay for: every matrix of Eq. (7.32) is $p$ on one side.
# With the book's $p = 512$, a code of the same size appended doubles the
# width of every block that follows, and multiplies its parameters by about
# 2.7 (8,395,776 against 3,150,336): the attention matrices grow as $p^2$,
# the feed-forward layer (inner width 2048) as $p$.


# %%
def block_parameters(model_width):
    block = TransformerEncoderBlock(num_heads=8, ff_dim=2048, attention_bias=False)
    block.build((None, None, model_width))
    return block.count_params()


added_block, appended_block = block_parameters(512), block_parameters(1024)
print(f"encoder block at width 512 (code added):    {added_block:,}")
print(
    f"encoder block at width 1024 (code appended): {appended_block:,} "
    f"({appended_block / added_block:.2f}x)"
)
assert added_block == 3_150_336 and appended_block == 8_395_776
assert round(appended_block / added_block, 1) == 2.7

# %% [markdown]
# ### A measured comparison on a task that needs positions
#
# The task: reverse a sequence of $T = 8$ random tokens, so the output at $t$
# is the input at $T - 1 - t$. Without positions a self-attention model sees
# a bag of tokens and can only guess which one goes where. The model is a
# token embedding, a position scheme, one `TransformerEncoderBlock` and a
# softmax layer, trained the same way for each scheme:
#
# - no positions;
# - one-hot positions appended ($\tilde p = p + T$);
# - learned positions added (`LearnedPositionalEmbedding`, the linear case
#   of Eq. 7.28);
# - sinusoids added (Eq. 7.30);
# - sinusoids appended ($\tilde p = 2p$, `mode="concat"`).


# %%
@keras.saving.register_keras_serializable(package="tutorial_06")
class OneHotPositions(keras.layers.Layer):
    """Appends the one-hot vector of each position: (B, T, D) -> (B, T, D + T)."""

    def call(self, inputs):
        length = inputs.shape[1]
        codes = ops.eye(length, dtype=inputs.dtype)[None]  # (1, T, T)
        codes = ops.broadcast_to(codes, (ops.shape(inputs)[0], length, length))
        return ops.concatenate([inputs, codes], axis=-1)


@keras.saving.register_keras_serializable(package="tutorial_06")
class AddPositions(keras.layers.Layer):
    """Adds a learned position table (LearnedPositionalEmbedding) to its input."""

    def __init__(self, max_length, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.positions = LearnedPositionalEmbedding(max_length)

    def call(self, inputs):
        return inputs + self.positions(inputs)

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length}


SEQUENCE_LENGTH, VOCABULARY, WIDTH = 8, 16, 32


def position_layer(scheme):
    return {
        "none": None,
        "one-hot, appended": OneHotPositions(),
        "learned, added": AddPositions(SEQUENCE_LENGTH),
        "sinusoidal, added": SinusoidalPositionalEncoding(),
        "sinusoidal, appended": SinusoidalPositionalEncoding(
            mode="concat", output_dim=WIDTH
        ),
    }[scheme]


def reversal_model(scheme):
    token_ids = keras.Input((SEQUENCE_LENGTH,), dtype="int32")
    x = keras.layers.Embedding(VOCABULARY, WIDTH)(token_ids)  # (B, T, p)
    layer = position_layer(scheme)
    if layer is not None:
        x = layer(x)  # (B, T, p), (B, T, p + T) or (B, T, 2p)
    x = TransformerEncoderBlock(num_heads=2, ff_dim=64, key_dim=16)(x)
    logits = keras.layers.Dense(VOCABULARY)(x)  # (B, T, V)
    return keras.Model(token_ids, logits)


rng = np.random.default_rng(0)
n_train = 2000 if QUICK else 4000
inputs = rng.integers(1, VOCABULARY, size=(n_train + 1000, SEQUENCE_LENGTH))
targets = inputs[:, ::-1]
epochs = 6 if QUICK else 10

results = {}
for scheme in [
    "none",
    "one-hot, appended",
    "learned, added",
    "sinusoidal, added",
    "sinusoidal, appended",
]:
    keras.utils.set_random_seed(1)
    model = reversal_model(scheme)
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    started = time.time()
    history = model.fit(
        inputs[:n_train], targets[:n_train], batch_size=64, epochs=epochs, verbose=0
    )
    _, accuracy = model.evaluate(inputs[n_train:], targets[n_train:], verbose=0)
    results[scheme] = {
        "parameters": model.count_params(),
        "accuracy": accuracy,
        "curve": history.history["accuracy"],
        "seconds": time.time() - started,
    }
    print(
        f"{scheme:22s} {model.count_params():6,d} parameters, "
        f"test accuracy {accuracy:.3f} ({time.time() - started:.0f} s)"
    )

# %% [markdown]
# What can a model without positions reach? At position $t$ it knows its own
# token $x^{(t)}$ and the bag of the others, not where they stand. Its target
# is one of the 7 other tokens, each equally likely to sit at $T - 1 - t$, so
# the best it can do is name the most frequent of them, right with
# probability (its count) / 7. That ceiling, measured on the held-out
# sequences, is where the position-blind model stops; every scheme that
# carries position goes far past it. Appending buys its accuracy with a
# wider block (the parameter counts above); adding keeps the width.


# %%
def position_blind_ceiling(sequences):
    """Mean best accuracy of any rule that sees x_t and the bag of the rest."""
    total = 0.0
    for row in sequences:
        for token in row:
            counts = np.bincount(row, minlength=VOCABULARY)
            counts[token] -= 1  # the target is one of the other tokens
            total += counts.max() / (len(row) - 1)
    return total / sequences.size


bag_ceiling = position_blind_ceiling(inputs[n_train:])
chance = 1 / (VOCABULARY - 1)
print(
    f"chance 1/15 = {chance:.3f}; best position-blind answer: {bag_ceiling:.3f}; "
    f"no positions, trained: {results['none']['accuracy']:.3f}"
)
assert results["none"]["accuracy"] < bag_ceiling + 0.03
for scheme in results:
    if scheme != "none":
        assert results[scheme]["accuracy"] > results["none"]["accuracy"] + 0.2, scheme

fig, (left, right) = plt.subplots(1, 2, figsize=(12, 3.8))
for scheme, result in results.items():
    left.plot(np.arange(1, epochs + 1), result["curve"], label=scheme)
left.axhline(chance, color="gray", ls=":", label="chance (1/15)")
left.axhline(
    bag_ceiling, color="black", ls="--", lw=0.8, label="best without positions"
)
left.set(
    xlabel="epoch",
    ylabel="training accuracy per token",
    title="Reversing 8 tokens: training",
)
left.legend(fontsize=8)
names = list(results)
right.barh(names, [results[n]["accuracy"] for n in names], color="tab:blue")
for k, name in enumerate(names):
    right.text(
        results[name]["accuracy"] + 0.01,
        k,
        f"{results[name]['accuracy']:.2f} ({results[name]['parameters']:,} p.)",
        va="center",
        fontsize=8,
    )
right.set(xlim=(0, 1.25), xlabel="test accuracy per token", title="Held-out sequences")
right.invert_yaxis()
fig.tight_layout()
if not QUICK:
    fig.savefig("../docs/images/tutorial_06_reversal.png", dpi=110)
plt.show()

# %% [markdown]
# **Summary.** Self attention alone is order-blind (equal inputs gave equal
# outputs, reversed inputs reversed outputs). A one-hot position, a learned
# position table and the sinusoidal code each restore order; the package's
# sinusoidal table matches Eq. (7.29) to float32 precision and redraws Fig.
# 7.14. The learned table is the linear special case of Eq. (7.28) ($W_1 = I$,
# $S$ the identity, $b = 0$), which the general form built from Keras layers
# reproduces exactly. Adding the code keeps the model width $p$, where
# appending a $p$-wide code would double it and make a $p = 512$ block about
# 2.7 times larger.
