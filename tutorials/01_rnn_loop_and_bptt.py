# %% [markdown]
# # 01 · The RNN as a loop, unrolled, and trained through time
#
# What this shows: a Keras `SimpleRNN` is nothing more than the recursion of
# Eq. (7.1)–(7.2) run over its own weights, which we check number for number;
# the book's toy look-ahead model over an 8-word lexicon has exactly 748
# parameters, and we train it; backpropagation through time (Eq. 7.6–7.11)
# written out by hand, (7.7) and (7.8) included, gives the same gradients as
# `tf.GradientTape`; and, at
# initialization, the gradient that reaches the first input shrinks
# geometrically with the length T for SimpleRNN, LSTM and GRU (a path of T
# Jacobians, Eq. 7.12), but only like 1/T for a Transformer encoder block,
# whose path from any input to any output has constant length. The
# chapter's cut of the far adjoints (Eq. 7.13) is computed and compared with
# the full gradient, and so is truncated backpropagation through time
# (TBPTT), the separate technique the chapter names for long sequences;
# gradient clipping (`clipnorm`) is shown taming the exploding case, and the
# TBPTT chunk explains why $T < d$ for RNNs in the operation counts.

# %%
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pathlib
import time

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

import zoo
from keras_seq.layers import TransformerEncoderBlock

QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"
IMAGES = pathlib.Path.cwd().parent / "docs" / "images"
keras.utils.set_random_seed(0)
print(f"Keras {keras.__version__} on {keras.backend.backend()}; quick mode: {QUICK}")

# %% [markdown]
# ## 1. The recursion of Eq. (7.1)–(7.2)
#
# An RNN keeps a state $h^{(t)} \in \mathbb{R}^m$ and updates it with the same
# function at every step, starting from $h^{(0)} = 0$:
#
# $$h^{(t)} = S_h\big(W_{hh} h^{(t-1)} + W_{hx} x^{(t)} + b_h\big), \qquad
#   \hat y^{(t)} = S_y\big(W_{yh} h^{(t)} + b_y\big).$$
#
# Unrolling the loop, $h^{(t)} = f(\dots f(f(h^{(0)}, x^{(1)}), x^{(2)}) \dots,
# x^{(t)})$ (Eq. 7.1). Keras stores the weights for row vectors
# (`x @ kernel + h @ recurrent_kernel + bias`), so the book's matrices are the
# transposes: $W_{hx}$ = `kernel.T` and $W_{hh}$ = `recurrent_kernel.T`. Below,
# a short NumPy loop over those weights reproduces the layer.

# %%
p, m, T = 8, 20, 6  # input width, state width, sequence length
rnn = keras.layers.SimpleRNN(m, return_sequences=True, name="simple_rnn")
x = np.random.default_rng(0).normal(size=(3, T, p)).astype("float32")
keras_states = keras.ops.convert_to_numpy(rnn(x))  # (B, T, m)

W_hx = keras.ops.convert_to_numpy(rnn.cell.kernel).T  # (m, p)
W_hh = keras.ops.convert_to_numpy(rnn.cell.recurrent_kernel).T  # (m, m)
b_h = keras.ops.convert_to_numpy(rnn.cell.bias)  # (m,)


def rnn_loop(x, W_hh, W_hx, b_h):
    """Eq. (7.2) with S_h = tanh, one step at a time; returns all states."""
    h = np.zeros((x.shape[0], W_hh.shape[0]))  # h(0) = 0, (B, m)
    states, pre_activations = [], []
    for t in range(x.shape[1]):
        a = h @ W_hh.T + x[:, t] @ W_hx.T + b_h  # (B, m)
        h = np.tanh(a)
        states.append(h)
        pre_activations.append(a)
    return np.stack(states, axis=1), np.stack(pre_activations, axis=1)


loop_states, _ = rnn_loop(x.astype("float64"), W_hh, W_hx, b_h)
difference = np.abs(loop_states - keras_states).max()
print(f"largest |keras - loop| over {loop_states.size} state entries: {difference:.1e}")
np.testing.assert_allclose(loop_states, keras_states, atol=1e-5)

# The same three weight tensors serve every step: the count does not grow with T.
assert rnn.count_params() == m * m + m * p + m == 580
print(f"SimpleRNN parameters for p = {p}, m = {m}: {rnn.count_params()} (any T)")

# %% [markdown]
# ## 2. The toy look-ahead model of Sec. 7.2: 748 parameters
#
# The lexicon has $d_V = 8$ words in alphabetical order, each one-hot encoded,
# so $p = q = 8$; the state has $m = 20$ units and $S_y$ is a softmax. The count
# is
#
# $$\underbrace{20 \times 20}_{W_{hh}} + \underbrace{20 \times 8}_{W_{hx}}
#   + \underbrace{20}_{b_h} + \underbrace{8 \times 20}_{W_{yh}}
#   + \underbrace{8}_{b_y} = 748.$$
#
# The model reads one-hot vectors directly, so it is three Keras layers: a
# `Masking` layer (no weights; it lets shorter sentences be zero-padded), the
# `SimpleRNN` and a softmax `Dense`.

# %%
LEXICON = [
    "deep",
    "engineering",
    "learning",
    "machine",
    "mathematical",
    "of",
    "statistics",
    "the",
]
d_V, m_toy = len(LEXICON), 20

toy = keras.Sequential(
    [
        keras.Input((None, d_V)),
        keras.layers.Masking(mask_value=0.0),
        keras.layers.SimpleRNN(m_toy, return_sequences=True, name="state"),
        keras.layers.Dense(d_V, activation="softmax", name="output"),
    ],
    name="toy_look_ahead",
)
book_count = m_toy * m_toy + m_toy * d_V + m_toy + d_V * m_toy + d_V
assert toy.count_params() == book_count == 748
print(f"toy model parameters: {toy.count_params()} (book: 748)")

# %% [markdown]
# `zoo.build_rnn_language_model` is built for real vocabularies: it reserves
# token id 0 for padding and learns an embedding table instead of taking
# one-hot vectors. With one layer of 20 SimpleRNN units and an 8-wide
# embedding over the 8 words plus padding, the count is the book's 748 plus the
# 9 × 8 embedding table and the 20 + 1 extra output weights for the padding
# id. On one-hot inputs the embedding would be redundant anyway:
# $W_{hx} E$ is again just a 20 × 8 matrix.

# %%
zoo_toy = zoo.build_rnn_language_model(
    vocabulary_size=d_V + 1,
    cell="simple",
    units=m_toy,
    num_layers=1,
    embedding_dim=d_V,
    dropout=0.0,
)
extra = (d_V + 1) * d_V + (m_toy + 1)  # embedding table + padding id's logit
assert zoo_toy.count_params() == 748 + extra == 841
print(
    f"zoo.build_rnn_language_model equivalent: {zoo_toy.count_params()} = 748 + {extra}"
)

# %% [markdown]
# We train the toy model for one-step look-ahead, $y^{(t)} = x^{(t+1)}$, with the
# categorical cross-entropy of Eq. (7.4)–(7.5), on four sentences of the
# lexicon. After "of" the next word is "deep" or "machine", and only the word
# just before "of" (engineering or statistics) tells which: the state that
# reads "of" has to carry the word of the step before.

# %%
SENTENCES = [
    "the mathematical engineering of deep learning",
    "the statistics of machine learning",
    "the engineering of deep learning",
    "the mathematical statistics of machine learning",
]


def one_hot_batch(sentences):
    """Zero-padded one-hot inputs, next-word targets and a padding weight."""
    ids = [[LEXICON.index(w) for w in s.split()] for s in sentences]
    length = max(len(s) for s in ids) - 1
    inputs = np.zeros((len(ids), length, d_V), "float32")
    targets = np.zeros((len(ids), length), "int32")
    weights = np.zeros((len(ids), length), "float32")
    for row, sentence in enumerate(ids):
        n = len(sentence) - 1
        inputs[row, np.arange(n), sentence[:-1]] = 1.0
        targets[row, :n] = sentence[1:]
        weights[row, :n] = 1.0
    return inputs, targets, weights


# The word that decides what follows "of" is always the one just before it.
assert {s.split()[s.split().index("of") - 1] for s in SENTENCES} == {
    "engineering",
    "statistics",
}
inputs, targets, weights = one_hot_batch(SENTENCES)
toy.compile(
    optimizer=keras.optimizers.Adam(0.03), loss="sparse_categorical_crossentropy"
)
# One epoch of 300 identical full batches: the same as 300 epochs, without the
# per-epoch overhead.
full_batches = tf.data.Dataset.from_tensors((inputs, targets, weights)).repeat(300)
start = time.time()
toy.fit(full_batches, epochs=1, shuffle=False, verbose=0)
loss = toy.evaluate(inputs, targets, sample_weight=weights, verbose=0)
seconds = time.time() - start
print(f"training loss after 300 full-batch steps: {loss:.3f} ({seconds:.1f} s)")

predicted = keras.ops.convert_to_numpy(toy(inputs)).argmax(-1)  # (B, T)
continuations = {}  # prefix -> the next words seen after it in training
misses = []  # per sentence, the number of wrong next words
for sentence in SENTENCES:
    words = sentence.split()
    for t in range(1, len(words)):
        continuations.setdefault(tuple(words[:t]), set()).add(words[t])
for row, sentence in enumerate(SENTENCES):
    words = sentence.split()
    guesses = [LEXICON[i] for i in predicted[row, : len(words) - 1]]
    marks = [
        ""
        if guess == word
        else ("*" if len(continuations[tuple(words[: t + 1])]) > 1 else "!")
        for t, (guess, word) in enumerate(zip(guesses, words[1:]))
    ]
    print(f"{sentence:<48} -> " + " ".join(g + k for g, k in zip(guesses, marks)))
    assert "!" not in marks  # every next word that the prefix determines is right
    misses.append(sum(k != "" for k in marks))
print("* = a miss where the training sentences continue the prefix in several ways")
print(
    f"next words seen after 'the': {len(continuations[('the',)])}; "
    f"after 'the mathematical': {len(continuations[('the', 'mathematical')])}; "
    f"misses in the first sentence: {misses[0]}"
)
assert len(continuations[("the",)]) == 3
assert len(continuations[("the", "mathematical")]) == 2
if not QUICK:  # the sentence below reads it
    assert misses[0] == 1

# %% [markdown]
# The misses (marked `*`) are exactly where the training sentences disagree:
# after "the" three words occur and after "the mathematical" two, so no model
# can do better than pick one of them. Every "of" is
# resolved correctly (the `!` check above): the state remembers whether
# "engineering" or "statistics" came one step earlier. Fig. 7.5 shows the
# book's reading of the first sentence, with one error; the first sentence
# here also has one (printed above).
#
# ## 3. Backpropagation through time by hand, Eq. (7.6)–(7.11)
#
# Take the loss $C = u^\top h^{(T)}$ of the last state (any loss of the last
# output reduces to this once $\partial C / \partial h^{(T)} = u$ is known). The
# adjoints $\zeta^{(t)} = \partial C / \partial h^{(t)}$ run backwards with the
# Jacobian of one step, Eq. (7.11):
#
# $$\zeta^{(T)} = u, \qquad \zeta^{(t)} = W_{hh}^\top\,
#   \mathrm{diag}\big(\dot\sigma(a^{(t+1)})\big)\, \zeta^{(t+1)},\qquad
#   a^{(t)} = W_{hh} h^{(t-1)} + W_{hx} x^{(t)} + b_h,$$
#
# and the shared weight collects a term from every step, Eq. (7.9)–(7.10):
#
# $$\frac{\partial C}{\partial W_{hh}} = \sum_{t=1}^{T}
#   \mathrm{diag}\big(\dot\sigma(a^{(t)})\big)\, \zeta^{(t)}\, {h^{(t-1)}}^\top .$$
#
# The gradient with respect to the first input is
# $W_{hx}^\top \mathrm{diag}(\dot\sigma(a^{(1)}))\,\zeta^{(1)}$. We compare both
# with what `tf.GradientTape` computes on the Keras layer of Section 1.
#
# The printed (7.11) evaluates the slope at
# $W_{hh} h^{(t)} + W_{hx} x^{(t)} + b_h$. Since
# $h^{(t+1)} = S_h(W_{hh} h^{(t)} + W_{hx} x^{(t+1)} + b_h)$, the input in the
# Jacobian $\partial h^{(t+1)} / \partial h^{(t)}$ is $x^{(t+1)}$, so the slope
# is $\dot\sigma(a^{(t+1)})$ as above: an index slip, like the printed
# denominators of (7.25) and (7.33) noted in notebooks 05 and 07. The last
# lines below run the recursion with the printed index and compare it with
# the tape.


# %%
def bptt_by_hand(x, u, W_hh, W_hx, b_h):
    """Adjoints, the per-step terms of dC/dW_hh and dC/dx(1) for C = u . h(T)."""
    states, pre = rnn_loop(x[None], W_hh, W_hx, b_h)
    states, pre = states[0], pre[0]  # (T, m)
    previous = np.vstack([np.zeros((1, W_hh.shape[0])), states[:-1]])  # h(t-1)
    slope = 1.0 - np.tanh(pre) ** 2  # sigma-dot(a(t)) for tanh, (T, m)
    zeta = np.zeros_like(states)
    zeta[-1] = u
    for t in range(len(states) - 2, -1, -1):
        zeta[t] = W_hh.T @ (slope[t + 1] * zeta[t + 1])  # Eq. (7.6), (7.11)
    # Eq. (7.9)-(7.10): step t adds diag(sigma-dot(a(t))) zeta(t) h(t-1)^T.
    terms = np.einsum("ti,tj->tij", slope * zeta, previous)  # (T, m, m)
    grad_x1 = W_hx.T @ (slope[0] * zeta[0])
    return zeta, terms, grad_x1


u = np.random.default_rng(1).normal(size=m)
sequence = x[0].astype("float64")  # (T, p)
zeta, terms, grad_x1 = bptt_by_hand(sequence, u, W_hh, W_hx, b_h)
grad_W_hh = terms.sum(axis=0)

x_tensor = tf.constant(x[:1])
with tf.GradientTape() as tape:
    tape.watch(x_tensor)
    loss = tf.reduce_sum(rnn(x_tensor)[0, -1] * tf.constant(u, "float32"))
tape_W, tape_x = tape.gradient(loss, [rnn.cell.recurrent_kernel, x_tensor])
tape_W_hh = keras.ops.convert_to_numpy(tape_W).T  # back to the book's layout
tape_x1 = keras.ops.convert_to_numpy(tape_x)[0, 0]

np.testing.assert_allclose(grad_W_hh, tape_W_hh, rtol=1e-4, atol=1e-6)
np.testing.assert_allclose(grad_x1, tape_x1, rtol=1e-4, atol=1e-6)
print(f"dC/dW_hh: largest |hand - tape| = {np.abs(grad_W_hh - tape_W_hh).max():.1e}")
print(f"dC/dx(1): largest |hand - tape| = {np.abs(grad_x1 - tape_x1).max():.1e}")
print("adjoint norms |zeta(t)|, t = 1..T:", np.round(np.linalg.norm(zeta, axis=1), 3))

# Eq. (7.11) as printed: the slope at W_hh h(t) + W_hx x(t) + b_h, x(t) for x(t+1).
states_1, _ = rnn_loop(sequence[None], W_hh, W_hx, b_h)
printed_pre = states_1[0, :-1] @ W_hh.T + sequence[:-1] @ W_hx.T + b_h  # (T-1, m)
zeta_printed = u
for t in range(T - 2, -1, -1):  # from zeta(T-1) down to zeta(1)
    zeta_printed = W_hh.T @ ((1.0 - np.tanh(printed_pre[t]) ** 2) * zeta_printed)
slope_1 = 1.0 - np.tanh(sequence[0] @ W_hx.T + b_h) ** 2  # sigma-dot(a(1)), h(0) = 0
grad_x1_printed = W_hx.T @ (slope_1 * zeta_printed)
slip = np.abs(grad_x1_printed - tape_x1).max() / np.abs(tape_x1).max()
print(
    f"dC/dx(1) with the printed index of (7.11): off by {slip:.0%} of the largest entry"
)
assert slip > 0.1

# %% [markdown]
# ### A loss at every step: Eq. (7.7) and (7.8)
#
# The chapter's loss averages one term per step, $C = \frac{1}{T}
# \sum_{t=1}^{T} C^{(t)}$ (Eq. 7.4), so its gradient averages theirs,
#
# $$g_W = \frac{1}{T} \sum_{t=1}^{T}
#   \frac{\partial C^{(t)}(h^{(t)}, y^{(t)}; W)}{\partial W}, \qquad (7.7)$$
#
# and each $C^{(t)}$ reaches $W$ through every state up to $h^{(t)}$:
#
# $$g_W = \frac{1}{T} \sum_{t=1}^{T} \sum_{\tau=1}^{t}
#   \frac{\partial h^{(\tau)}}{\partial W}\, \zeta^{(\tau)}. \qquad (7.8)$$
#
# With $C^{(t)} = {u^{(t)}}^\top h^{(t)}$, one vector $u^{(t)}$ per step,
# $\partial C^{(t)} / \partial W$ is the computation above on the first $t$
# steps: the inner sum of (7.8) is the sum of `bptt_by_hand`'s terms on
# $x^{(1)}, \dots, x^{(t)}$, with $\partial h^{(\tau)} / \partial W\,
# \zeta^{(\tau)}$ the term $\mathrm{diag}(\dot\sigma(a^{(\tau)}))\,
# \zeta^{(\tau)} {h^{(\tau-1)}}^\top$ of (7.9). Inside (7.8), $\zeta^{(\tau)}$ is
# the adjoint of $C^{(t)}$ alone, $\partial C^{(t)} / \partial h^{(\tau)}$. The
# adjoint of the whole $C$ already sums over every $t \ge \tau$: with it, the
# gradient is one sum over $\tau$ (the single backward pass a framework
# runs), and putting it inside the sum over $t$ counts its terms again. The
# cell checks all three against the tape.

# %%
U = np.random.default_rng(6).normal(size=(T, m))  # u(t), one per step
per_step, prefix_adjoints = [], []
for t in range(1, T + 1):
    zeta_t, terms_t, _ = bptt_by_hand(sequence[:t], U[t - 1], W_hh, W_hx, b_h)
    per_step.append(terms_t.sum(axis=0))  # Eq. (7.8): the sum over tau <= t
    prefix_adjoints.append(np.vstack([zeta_t, np.zeros((T - t, m))]))  # (T, m)
g_W = np.mean(per_step, axis=0)  # Eq. (7.7): (1/T) sum over t

with tf.GradientTape() as tape:
    loss = tf.reduce_mean(tf.reduce_sum(rnn(x_tensor)[0] * U.astype("float32"), -1))
tape_all_steps = keras.ops.convert_to_numpy(
    tape.gradient(loss, rnn.cell.recurrent_kernel)
).T
np.testing.assert_allclose(g_W, tape_all_steps, rtol=1e-4, atol=1e-6)

# The adjoint of the whole C, and the two ways of using it.
whole_zeta = np.mean(prefix_adjoints, axis=0)  # dC/dh(tau), (T, m)
states_1, pre_1 = rnn_loop(sequence[None], W_hh, W_hx, b_h)
slope_all = 1.0 - np.tanh(pre_1[0]) ** 2  # sigma-dot(a(tau)), (T, m)
previous = np.vstack([np.zeros((1, m)), states_1[0, :-1]])  # h(tau - 1)
local = np.einsum("ti,tj->tij", slope_all * whole_zeta, previous)  # (T, m, m)
one_sum = local.sum(axis=0)
double_sum = np.mean([local[:t].sum(axis=0) for t in range(1, T + 1)], axis=0)
np.testing.assert_allclose(one_sum, tape_all_steps, rtol=1e-4, atol=1e-6)
recount = np.abs(double_sum - tape_all_steps).max() / np.abs(tape_all_steps).max()
print(f"Eq. (7.7)-(7.8) against the tape: {np.abs(g_W - tape_all_steps).max():.1e}")
one_sum_error = np.abs(one_sum - tape_all_steps).max()
print(f"one sum over tau with the whole loss's adjoints: {one_sum_error:.1e}")
print(
    f"those adjoints inside the sum over t: off by {recount:.0%} of the largest entry"
)
assert recount > 0.1

# %% [markdown]
# ## 4. Why the adjoints vanish or explode, Eq. (7.12)
#
# Dropping the activation, the bias and the inputs, the recursion is a matrix
# power, $\zeta^{(t)} = (W_{hh}^\top)^{T-t} \zeta^{(T)}$, so its size follows the
# largest eigenvalue modulus $\rho$ of $W_{hh}$: it decays like $\rho^{T-t}$
# when $\rho < 1$ and grows when $\rho > 1$. Keras initializes
# `recurrent_kernel` orthogonally, which puts every eigenvalue on the unit
# circle, exactly at the boundary; each $\tanh$ slope $\dot\sigma \le 1$ then
# tips the product towards vanishing.

# %%
eigenvalues = np.linalg.eigvals(W_hh)
print(
    f"|eigenvalues| of the initial W_hh: min {np.abs(eigenvalues).min():.4f}, "
    f"max {np.abs(eigenvalues).max():.4f}"
)
np.testing.assert_allclose(np.abs(eigenvalues), 1.0, atol=1e-5)

steps = np.arange(0, 101)
fig, ax = plt.subplots(figsize=(6, 3.5))
for rho in (0.9, 1.0, 1.1):
    W = rho * W_hh
    norms, z = [], u.copy()
    for _ in steps:
        norms.append(np.linalg.norm(z))
        z = W.T @ z
    ax.semilogy(steps, norms, label=f"linear, $\\rho$ = {rho}")
    if rho != 1.0:
        # The linear recursion changes the norm by exactly rho per step.
        np.testing.assert_allclose(norms[-1] / norms[0], rho**100, rtol=1e-4)
ax.set(
    title="Eq. (7.12): $\\|(W_{hh}^T)^{k}\\zeta\\|$, orthogonal $W_{hh}$ times $\\rho$",
    xlabel="steps back in time, k = T - t",
    ylabel="adjoint norm",
)
ax.legend()
plt.show()
print(
    f"after 100 steps: rho = 0.9 gives {0.9**100:.1e}, rho = 1.1 gives {1.1**100:.1e}"
)

# %% [markdown]
# ## 5. Dropping the far adjoints, Eq. (7.13), and truncated BPTT
#
# Why the far past matters: the chapter's example is a text whose blank can
# only be filled in from a word near its start,
#
# > Slava grew up in Ukraine before he moved around the world, first to the
# > United States, and then to Australia. He loves teaching languages and is
# > an avid teacher of his own mother tongue _.
#
# Section 4 says what happens to the adjoint that has to carry "Ukraine" to
# the blank: it shrinks or grows geometrically with the distance. When it
# shrinks, the chapter picks a $T_0 < T$ (its example: $T = 300$,
# $T_0 = 250$), sets $\zeta^{(t)} = 0$ for $t < T_0$, and the gradient
# (7.10) keeps only the near terms:
#
# $$g_W \approx \frac{1}{T} \sum_{t=T_0}^{T} \sum_{\tau=T_0}^{t}
#   \sum_{j=1}^{m} \frac{\partial h_j^{(\tau)}}{\partial W}\,
#   \zeta_j^{(\tau)}. \qquad (7.13)$$
#
# For the loss of the last state, $C = u^\top h^{(T)}$ of Section 3, the sums
# over $t$ reduce to $t = T$ (and $1/T$ is a constant), so (7.13) is the sum
# of the per-step terms `bptt_by_hand` returns, from $\tau = T_0$ on: 51 of
# the 300. An automatic-differentiation framework gets the same truncation
# from one line, which hands the state $h^{(T_0 - 1)}$ to the remaining steps
# as a constant (`tf.stop_gradient`): the forward pass is unchanged, and no
# adjoint flows back past it. (7.13) describes what vanishing adjoints
# already do to the gradient; the chapter names *truncated backpropagation
# through time* (TBPTT) separately, as a technique that limits how many
# steps the signal backpropagates in each pass. TBPTT makes the same cut
# every $k$ steps: it splits a long stream into chunks, carries the state from one chunk
# into the next (Keras' `stateful=True`, or `initial_state=` as below) and
# backpropagates within the chunk only. `tbptt_gradient` cuts the sequence
# into chunks of `chunk` steps counted back from $T$, so its last chunk
# starts at $T_0 = T - \text{chunk} + 1$.

# %%
T_BOOK, T0_BOOK = 300, 250
long_x = np.random.default_rng(2).normal(size=(1, T_BOOK, p))  # (1, T, p)
long_rnn = keras.layers.SimpleRNN(m, return_state=True, dtype="float64")
long_rnn(long_x[:, :1])  # builds the weights
initial_kernel = keras.ops.convert_to_numpy(long_rnn.cell.recurrent_kernel)
W_hx_long = keras.ops.convert_to_numpy(long_rnn.cell.kernel).T  # (m, p)
b_h_long = keras.ops.convert_to_numpy(long_rnn.cell.bias)  # (m,)


def tbptt_gradient(layer, x, u, chunk):
    """dC/dW_hh, dC/dx and h(T) for C = u . h(T), backpropagating in chunks.

    Chunks of `chunk` steps are counted back from T (the first one takes
    what is left); `chunk >= T` is full backpropagation through time.
    """
    x = tf.constant(x)
    T = x.shape[1]
    starts = [0] + list(range(T - chunk, 0, -chunk))[::-1]
    with tf.GradientTape() as tape:
        tape.watch(x)
        h = tf.zeros((x.shape[0], layer.units), dtype=x.dtype)  # h(0) = 0
        for start, end in zip(starts, starts[1:] + [T]):
            # The state carries over; its adjoint does not: zeta(tau) = 0 for
            # every tau before this chunk, Eq. (7.13).
            _, h = layer(x[:, start:end], initial_state=tf.stop_gradient(h))
        loss = tf.reduce_sum(h[0] * u)
    grad_W, grad_x = tape.gradient(loss, [layer.cell.recurrent_kernel, x])
    as_numpy = keras.ops.convert_to_numpy
    return as_numpy(grad_W).T, as_numpy(grad_x)[0], as_numpy(h)[0]


chunk = T_BOOK - T0_BOOK + 1  # the last chunk is tau = T0 .. T
full, _, h_full = tbptt_gradient(long_rnn, long_x, u, chunk=T_BOOK)
truncated, grad_x, h_chunked = tbptt_gradient(long_rnn, long_x, u, chunk)
W_hh_long = initial_kernel.T  # book layout, (m, m)
_, long_terms, _ = bptt_by_hand(long_x[0], u, W_hh_long, W_hx_long, b_h_long)
np.testing.assert_allclose(full, long_terms.sum(axis=0), rtol=1e-7, atol=1e-12)
np.testing.assert_allclose(
    truncated, long_terms[T0_BOOK - 1 :].sum(axis=0), rtol=1e-7, atol=1e-12
)
np.testing.assert_allclose(h_chunked, h_full, atol=1e-12)  # the same forward pass
assert chunk == len(long_terms[T0_BOOK - 1 :]) == 51 and T0_BOOK - 1 == 249
assert np.all(grad_x[: T0_BOOK - 1] == 0.0)  # no input before T0 is reached
print(
    f"tape and hand agree: full BPTT, Eq. (7.10), and (7.13) keeping {chunk} of "
    f"{T_BOOK} terms; dC/dx(t) = 0 for every t < {T0_BOOK} after truncation"
)

# How much of the full gradient the dropped terms hold, as initialized and
# with W_hh doubled (the sums by hand, checked against the tape above).
dropped_share, adjoint_growth = {}, {}
for scale in (1.0, 2.0):
    long_zeta, long_terms, _ = bptt_by_hand(
        long_x[0], u, scale * W_hh_long, W_hx_long, b_h_long
    )
    # |zeta(1)| / |zeta(T0)|: below 1 when adjoints shrink on the way back.
    adjoint_growth[scale] = np.linalg.norm(long_zeta[0]) / np.linalg.norm(
        long_zeta[T0_BOOK - 1]
    )
    full_sum = long_terms.sum(axis=0)  # Eq. (7.10): tau = 1 .. T
    truncated_sum = long_terms[T0_BOOK - 1 :].sum(axis=0)  # Eq. (7.13)
    dropped_share[scale] = np.linalg.norm(full_sum - truncated_sum) / np.linalg.norm(
        full_sum
    )
    print(
        f"W_hh x {scale}: |full - truncated| / |full| = {dropped_share[scale]:.1e}; "
        f"|zeta(1)| / |zeta(T0)| = {adjoint_growth[scale]:.1e}"
    )
assert dropped_share[1.0] < 1e-6 and dropped_share[2.0] > 0.5
assert adjoint_growth[1.0] < 1.0 < adjoint_growth[2.0]

# %% [markdown]
# Both implementations agree with the sums by hand, and the chunked forward
# pass ends in the same state as the whole one. What truncation changes
# depends on the adjoints. With the weights as initialized, the 249 dropped
# terms hold less than one part in a million of the gradient: the backward
# pass over them is wasted work, and skipping it is what makes long
# sequences affordable. With $W_{hh}$ doubled, the adjoints grow on their way
# back and the dropped terms are more than half of the gradient: (7.13) is
# then no approximation of (7.10) at all. In both cases the inputs before
# $T_0$ get exactly zero gradient, so an update can never learn that they
# matter.
#
# That is the blank's problem. Feed the 34 words before it (as random word
# vectors) to the same layer, and take the state after "tongue" as the one
# that predicts the blank; "Ukraine" is 29 steps back. Full BPTT reaches it
# with a faint gradient; TBPTT with chunks of 20 words does not reach it.

# %%
SLAVA = (
    "Slava grew up in Ukraine before he moved around the world, first to the "
    "United States, and then to Australia. He loves teaching languages and is "
    "an avid teacher of his own mother tongue _"
)
words = SLAVA.split()
blank, clue = len(words), words.index("Ukraine") + 1  # 1-based positions
assert (blank, clue) == (35, 5) and blank - 1 - clue == 29
vocabulary = sorted(set(words))
word_vectors = np.random.default_rng(3).normal(size=(len(vocabulary), p))
slava_x = word_vectors[[vocabulary.index(w) for w in words[:-1]]][None]  # (1, 34, p)
_, full_x, _ = tbptt_gradient(long_rnn, slava_x, u, chunk=blank - 1)
_, chunked_x, _ = tbptt_gradient(long_rnn, slava_x, u, chunk=20)
last_word = np.linalg.norm(full_x[-1])
reach = np.linalg.norm(full_x[clue - 1]) / last_word
print(f"|dC/dx| at 'tongue' (step {blank - 1}): {last_word:.2e}")
print(f"at 'Ukraine' (step {clue}), full BPTT: {reach:.1e} of that")
print(f"at 'Ukraine', chunks of 20: {np.linalg.norm(chunked_x[clue - 1]):.1f}")
assert 0.0 < reach < 1e-2 and np.all(chunked_x[clue - 1] == 0.0)

# %% [markdown]
# ## 6. Gradient clipping on the exploding case
#
# The other way out of Section 4 is the $\rho = 1.1$ curve: adjoints that grow
# by a tenth per step, $1.1^{100} \approx 1.4 \times 10^4$ over 100 steps. The
# chapter's remedy for exploding gradients is to clip them (Sec. 5.4). A
# Keras optimizer does it when built with `clipnorm=c`: before the update,
# each weight's gradient $g$ becomes $g \min(1, c / \lVert g \rVert)$
# (`global_clipnorm=c` does the same with the norm of all the gradients
# together). We take the linear RNN of Eq. (7.12), whose $W_{hh}$ is
# orthogonal times 1.1 (`Orthogonal(gain=1.1)`), fit its state after
# $T = 100$ steps to random targets with plain SGD (learning rate $10^{-3}$),
# and measure each update $\lVert \Delta W \rVert$, without clipping and with
# `clipnorm=1`.

# %%
LEARNING_RATE, CLIPNORM, CLIP_STEPS = 1e-3, 1.0, 2
clip_x = np.random.default_rng(4).normal(size=(16, 100, p)).astype("float32")
clip_y = np.random.default_rng(5).normal(size=(16, m)).astype("float32")
update_norms, losses = {}, {}
for clipnorm in (None, CLIPNORM):
    keras.utils.set_random_seed(0)
    linear_rnn = keras.layers.SimpleRNN(
        m,
        activation=None,  # Eq. (7.12) drops the activation
        recurrent_initializer=keras.initializers.Orthogonal(gain=1.1),
    )
    linear_rnn.build((None, None, p))
    moduli = np.abs(np.linalg.eigvals(linear_rnn.cell.recurrent_kernel.numpy()))
    np.testing.assert_allclose(moduli, 1.1, rtol=1e-5)  # rho = 1.1
    optimizer = keras.optimizers.SGD(LEARNING_RATE, clipnorm=clipnorm)
    update_norms[clipnorm], losses[clipnorm] = [], []
    for _ in range(CLIP_STEPS):
        before = [w.numpy() for w in linear_rnn.trainable_weights]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((linear_rnn(clip_x) - clip_y) ** 2)
        gradients = tape.gradient(loss, linear_rnn.trainable_weights)
        optimizer.apply(gradients, linear_rnn.trainable_weights)
        steps_taken = [
            w.numpy() - b for w, b in zip(linear_rnn.trainable_weights, before)
        ]
        update_norms[clipnorm].append([np.linalg.norm(s) for s in steps_taken])
        losses[clipnorm].append(float(loss))
    label = "no clipping" if clipnorm is None else f"clipnorm={clipnorm}"
    for step, (loss, norms) in enumerate(zip(losses[clipnorm], update_norms[clipnorm])):
        sizes = ", ".join(f"{n:.1e}" for n in norms)
        print(
            f"{label:<14} step {step + 1}: loss {loss:.3e}, |update| per weight {sizes}"
        )

unclipped, clipped = np.array(update_norms[None]), np.array(update_norms[CLIPNORM])
assert abs(1.1**100 - 1.4e4) < 0.05e4  # the growth over 100 steps, Section 4
assert unclipped[0].max() > 1e4 and np.isnan(losses[None][1])
assert np.all(clipped <= LEARNING_RATE * CLIPNORM * (1 + 1e-4))
assert np.all(np.diff(losses[CLIPNORM]) < 0) and min(losses[CLIPNORM]) > 1e8

# %% [markdown]
# Without clipping the first update moves a weight by more than $10^4$,
# which throws the model so far that the next loss is no longer a number
# (`nan`). With `clipnorm=1` no weight moves by more than
# $10^{-3}$, the learning rate times $c$, and the loss goes down. Clipping
# bounds the step, not the recursion: the forward pass of this model still
# multiplies the state by a $W_{hh}$ of modulus 1.1 at every step, which is
# why its loss stays above $10^8$ (printed above).

# %% [markdown]
# ## 7. The gradient of the last output with respect to the first input
#
# The quantity that decides whether a model can learn that $x^{(1)}$ matters
# for $\hat y^{(T)}$ is the Jacobian $\partial y^{(T)} / \partial x^{(1)}$. In an
# RNN it is a product of $T$ one-step Jacobians, a path of length
# $\mathcal{O}(T)$; in a self-attention block every output reads every input
# directly, a path of length $\mathcal{O}(1)$:
#
# | layer | parameters | sequential steps | path length |
# |---|---|---|---|
# | RNN (Simple, LSTM, GRU) | $\mathcal{O}(d^2)$ | $\mathcal{O}(T)$ | $\mathcal{O}(T)$ |
# | self-attention | $\mathcal{O}(d^2)$ | $\mathcal{O}(1)$ | $\mathcal{O}(1)$ |
#
# We measure $\lVert \partial y^{(T)} / \partial x^{(1)} \rVert_F$ at
# initialization for width $d = 32$ and random $\mathcal{N}(0, 1)$ inputs: a
# `SimpleRNN`, an `LSTM` and a `GRU` (their final state) and a
# `keras_seq.layers.TransformerEncoderBlock` (its last position). One backward
# pass per length estimates the Frobenius norm: for
# $v \sim \mathcal{N}(0, I)$, $\mathbb{E}\lVert J^\top v \rVert^2 = \lVert J
# \rVert_F^2$, averaged over a batch of 16 sequences. Everything runs in
# float64 so the smallest values do not underflow.

# %%
D, BATCH = 32, 16
LENGTHS = (
    [2, 5, 13, 32, 80, 200] if QUICK else [2, 3, 5, 8, 13, 20, 32, 50, 80, 125, 200]
)
keras.utils.set_random_seed(0)
models = {
    "SimpleRNN": keras.layers.SimpleRNN(D, dtype="float64"),
    "LSTM": keras.layers.LSTM(D, dtype="float64"),
    "GRU": keras.layers.GRU(D, dtype="float64"),
    "Transformer block": TransformerEncoderBlock(
        num_heads=4, ff_dim=64, dtype="float64"
    ),
}


def last_output(name, sequence):
    if name == "Transformer block":
        return models[name](sequence)[:, -1]  # (B, D): the last position
    return models[name](sequence)  # (B, D): the final state h(T)


def first_input_gradient_norm(name, length, rng):
    x = tf.constant(rng.normal(size=(BATCH, length, D)))
    v = tf.constant(rng.normal(size=(BATCH, D)))
    first, rest = x[:, :1], x[:, 1:]
    with tf.GradientTape() as tape:
        tape.watch(first)
        y = last_output(name, tf.concat([first, rest], axis=1))
        projected = tf.reduce_sum(v * y)
    g = tape.gradient(projected, first)[:, 0]  # (B, D) = J^T v per sequence
    return float(tf.sqrt(tf.reduce_mean(tf.reduce_sum(g * g, axis=-1))))


start = time.time()
norms = {name: [] for name in models}
for length in LENGTHS:
    for name in models:
        rng = np.random.default_rng(length)  # the same inputs for every model
        norms[name].append(first_input_gradient_norm(name, length, rng))
seconds = time.time() - start
print(f"measured {len(LENGTHS)} lengths x {len(models)} models in {seconds:.1f} s")
print("T      " + "".join(f"{name:>19}" for name in models))
for i, length in enumerate(LENGTHS):
    print(f"{length:<7}" + "".join(f"{norms[name][i]:19.2e}" for name in models))

# %%
lengths = np.array(LENGTHS, dtype="float64")
fig, ax = plt.subplots(figsize=(7, 4.2))
for name, values in norms.items():
    ax.semilogy(lengths, values, "o-", label=name, markersize=4)
ax.semilogy(
    lengths, norms["Transformer block"][0] * lengths[0] / lengths, "k:", label="∝ 1/T"
)
ax.set(
    title="Gradient reaching the first input: path length O(T) against O(1)",
    xlabel="sequence length T",
    ylabel=r"$\|\partial y^{(T)} / \partial x^{(1)}\|_F$ (at initialization)",
)
ax.legend()
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
if not QUICK:
    IMAGES.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMAGES / "tutorial_01_gradient_vs_length.png", dpi=110)
plt.show()

# %% [markdown]
# On the semi-log axes the three recurrent layers fall close to straight
# lines from T = 13 on: the gradient shrinks by a roughly constant factor per
# step, as a product of $T$ Jacobians does. We read that factor off the slope
# between T = 13 and the longest length (below 0.9 for all three), and
# compare it with the Transformer block, whose gradient only thins out like
# 1/T (within a factor of 4 over the range), because the attention weights
# of the last position spread over T keys.

# %%
first = LENGTHS.index(13)
for name, values in norms.items():
    span = LENGTHS[-1] - LENGTHS[first]
    per_step = (values[-1] / values[first]) ** (1.0 / span)
    ratio = values[-1] / values[0]
    print(
        f"{name:<18} per-step factor {per_step:.3f}; "
        f"norm(T={LENGTHS[-1]}) / norm(T=2) = {ratio:.1e}"
    )
    if name == "Transformer block":
        # Within a factor of 4 of 1/T scaling over a 100-fold range of T.
        assert 1 / 4 < ratio / (LENGTHS[0] / LENGTHS[-1]) < 4
    else:
        assert per_step < 0.9 and ratio < 1e-10

# %% [markdown]
# ## 8. Why $T$ is a chunk, and why then $T < d$
#
# The table of Section 7 leaves out the number of operations: a recurrent
# layer multiplies a $d \times d$ matrix with a vector at each of $T$ steps,
# $\mathcal{O}(T d^2)$, and self attention forms $T^2$ dot products of length
# $d$, $\mathcal{O}(T^2 d)$ (notebook 08 counts and times both). Attention is
# cheaper exactly when $T < d$. For a recurrent network, the $T$ in these
# counts is not the length of the text: trained with TBPTT, it is the chunk
# length, the stretch the backward pass runs over, and Sections 5 and 6 are
# why it is kept short (the adjoints past a few tens of steps have vanished,
# or they explode). The lecture notes give chunks of $T = 64$ with states of
# $d \ge 256$, so $T < d$; a Transformer's path length is constant, so it is
# trained on windows longer than its width (below, 2,048 tokens at
# $d = 768$). Backpropagating through all 300 steps of Section 5 at
# $d = 256$ would also put an RNN on the $T > d$ side.

# %%
print(f"{'':<26}{'T':>6}{'d':>6}{'RNN T d^2':>16}{'attention T^2 d':>18}")
for setting, T_, d_ in [
    ("RNN chunk (TBPTT)", 64, 256),
    ("the whole of Section 5", T_BOOK, 256),
    ("Transformer window", 2048, 768),
]:
    rnn_ops, attention_ops = T_ * d_**2, T_**2 * d_
    print(f"{setting:<26}{T_:>6}{d_:>6}{rnn_ops:>16,}{attention_ops:>18,}")
    assert (attention_ops < rnn_ops) == (T_ < d_)
assert 64 * 256**2 == 4 * 64**2 * 256 == 4_194_304  # a chunk: attention 4x fewer
