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
# # 04 · Attention: score functions and an attention matrix
#
# Attention turns a sequence of input vectors into a sequence of outputs,
# each a weighted average of the inputs, with weights that a score function
# computes from a query and the keys (Sec. 7.4, Eq. 7.20 and 7.21). This
# notebook recomputes the four score functions of the chapter (dot, general,
# concatenation, additive) by hand from the weights of
# `keras_seq.layers.ScoreAttention` and checks them against the layer,
# including the zero weight that padding must get. It then trains a small
# German-to-English Transformer (`zoo.build_translator`) on the `trans-de-en`
# sentences and draws its cross-attention matrix in the manner of Fig. 7.11:
# one row per output word, one column per source word. It closes with the
# lecture slides' four steps from the GRU's gated update to multi-head
# attention, checking the first and the last by hand.

# %%
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"

import keras  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import zoo  # noqa: E402
from keras_seq import data, text  # noqa: E402
from keras_seq.callbacks import TimeBudget  # noqa: E402
from keras_seq.layers import MultiHeadAttention, ScoreAttention  # noqa: E402
from zoo.recipes import translator as recipe  # noqa: E402

keras.utils.set_random_seed(0)
print("backend:", keras.backend.backend(), "| quick mode:", QUICK)

# %% [markdown]
# ## 1. Weights from scores, Eq. (7.20) and (7.21)
#
# For each output time $t$, a query $z_q^{(t)}$ is scored against every key
# $z_k^{(1)}, \dots, z_k^{(T_{\text{in}})}$, and a softmax turns the scores
# into attention weights,
#
# $$\alpha^{(t)} = S_{\text{softmax}}\Big(s(z_q^{(t)}, z_k^{(1)}), \dots,
# s(z_q^{(t)}, z_k^{(T_{\text{in}})})\Big), \qquad (7.20)$$
#
# which weigh the values into the output,
# $u^{(t)} = \sum_{\tau} \alpha^{(t)}_\tau v^{(\tau)}$ (Eq. 7.21, non-causal
# form). In the encoder-decoder of Fig. 7.10 the query is the previous decoder
# state and the keys and values are the encoder outputs. The score $s$ can
# be chosen; the chapter lists
#
# $$s(z_q, z_k) = \begin{cases}
# z_q^\top z_k & \text{(dot)}\\
# z_q^\top W_s z_k & \text{(general)}\\
# w_s^\top \tanh\big(\widetilde W_s [z_q; z_k]\big) & \text{(concatenation)}\\
# w_s^\top \tanh\big(W_{sa} z_q + W_{sb} z_k\big) & \text{(additive)}
# \end{cases}$$
#
# `ScoreAttention(score=...)` implements all four (and `"scaled_dot"`,
# the dot product divided by $\sqrt{m_k}$); its concatenation score also has
# a bias inside the tanh. A small batch: three decoder states of width 8 per
# sentence, and six encoder outputs of width 8, the last two of the second
# sentence being padding.

# %%
rng = np.random.default_rng(0)
batch, t_out, t_in, width, units = 2, 3, 6, 8, 6
queries = rng.normal(size=(batch, t_out, width)).astype("float32")  # z_q
keys = rng.normal(size=(batch, t_in, width)).astype("float32")  # z_k = v
real = np.array([[True] * 6, [True] * 4 + [False] * 2])  # (B, T_in)

layers = {}
for score in ("dot", "general", "concat", "additive"):
    layers[score] = ScoreAttention(score=score, units=units)
    layers[score](queries, keys, value_mask=real)  # builds the weights
    shapes = {w.path.split("/", 1)[1]: tuple(w.shape) for w in layers[score].weights}
    print(f"{score:8s} {layers[score].count_params():4d} parameters {shapes}")

assert layers["dot"].count_params() == 0
assert layers["general"].count_params() == width * width
assert layers["additive"].count_params() == (width + width + 1) * units
assert layers["concat"].count_params() == (width + width + 2) * units

# %% [markdown]
# Now each score by hand, one query-key pair at a time, from the layer's own
# weights. The concatenation score is computed literally, by stacking
# $[z_q; z_k]$ for every pair (the layer splits $\widetilde W_s$ into a query
# half and a key half instead, which gives the same numbers without building
# the pairs). The softmax skips padded keys, as if their score were
# $-\infty$.


# %%
def weight(layer, name):
    """A weight of `layer` by the end of its path, as a NumPy array."""
    matches = [w for w in layer.weights if w.path.endswith(name)]
    assert len(matches) == 1, name
    return np.asarray(matches[0])


def score_by_hand(score, layer, q, k):
    """s(q, k) for one query vector q and one key vector k."""
    if score == "dot":
        return q @ k
    if score == "general":
        return q @ weight(layer, "general_kernel/kernel") @ k
    if score == "additive":
        hidden = q @ weight(layer, "query_projection/kernel") + k @ weight(
            layer, "key_projection/kernel"
        )
        return np.tanh(hidden) @ weight(layer, "score_vector/kernel")
    stacked = np.concatenate([q, k])  # [z_q; z_k], width Q + K
    hidden = stacked @ weight(layer, "concat_projection/kernel")
    hidden = hidden + weight(layer, "concat_projection/bias")
    return np.tanh(hidden) @ weight(layer, "score_vector/kernel")


def attention_by_hand(score, layer):
    scores = np.full((batch, t_out, t_in), -np.inf)
    for b in range(batch):
        for t in range(t_out):
            for tau in range(t_in):
                if real[b, tau]:
                    scores[b, t, tau] = score_by_hand(
                        score, layer, queries[b, t], keys[b, tau]
                    )
    alpha = np.exp(scores - scores.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)  # Eq. (7.20)
    return alpha, alpha @ keys  # Eq. (7.21): u = sum_tau alpha_tau v_tau


print(
    f"{'score':8s} {'max |alpha diff|':>17s} {'max |u diff|':>13s} "
    f"{'row sums':>9s} {'padding weight':>15s}"
)
for score, layer in layers.items():
    context, alpha = layer(queries, keys, value_mask=real)
    context, alpha = np.asarray(context), np.asarray(alpha)
    alpha_hand, context_hand = attention_by_hand(score, layer)
    np.testing.assert_allclose(alpha, alpha_hand, atol=1e-5)
    np.testing.assert_allclose(context, context_hand, atol=1e-5)
    np.testing.assert_allclose(alpha.sum(-1), 1.0, atol=1e-6)
    padding_weight = float(alpha[1, :, 4:].max())
    assert padding_weight == 0.0
    print(
        f"{score:8s} {np.abs(alpha - alpha_hand).max():17.1e} "
        f"{np.abs(context - context_hand).max():13.1e} "
        f"{alpha.sum(-1).min():9.6f} {padding_weight:15.1f}"
    )

# %% [markdown]
# All four agree with the formulas to float32 round-off, every row of
# weights sums to one, and the padded keys get exactly zero weight, so the
# padding never leaks into the outputs. The picture below draws each
# score's weights for the second sentence; with random weights they say
# nothing about which score is better, only that each score defines its own
# notion of "similar".

# %%
fig, axes = plt.subplots(1, 4, figsize=(12, 2.6), sharey=True)
for axis, (score, layer) in zip(axes, layers.items()):
    _, alpha = layer(queries, keys, value_mask=real)
    axis.imshow(np.asarray(alpha)[1], cmap="gray_r", vmin=0, vmax=1)
    axis.set_title(f"{score}", fontsize=10)
    axis.set_xlabel("key position (4, 5: padding)")
axes[0].set_ylabel("query t")
fig.suptitle("Attention weights of the second sentence, untrained layers", fontsize=10)
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 2. An attention matrix from a trained translator
#
# Fig. 7.11 shows, for one translated sentence, the weights $\alpha^{(t)}$
# as rows of a matrix: output word $t$ against the input words. Here the
# model is the encoder-decoder Transformer of Fig. 7.16, whose decoder reads
# the source through cross attention (Eq. 7.33): the same Eq. (7.20) and
# (7.21) with the scaled dot product as score, once per head. (The model of
# Fig. 7.10, an RNN decoder with `ScoreAttention`, is
# `zoo.build_rnn_translator(score=...)`; notebook 03 trains it on a copy
# task.)
#
# The training recipe is the package's (`zoo.recipes.translator`):
# WordPiece vocabularies, length-bucketed `tf.data` batches, teacher forcing,
# label-smoothed masked cross-entropy and the warm-up schedule. To get a
# readable matrix out of a few CPU minutes, the model trains on the shorter
# pairs of the training split only (at most 10 words a side).

# %%
started = time.time()
corpus = data.load_trans_de_en()
max_words = 8 if QUICK else 10


def short(pair):
    return all(len(side.split()) <= max_words for side in pair)


train_pairs = [pair for pair in corpus.train if short(pair)]
validation_pairs = [pair for pair in corpus.validation if short(pair)]
test_pairs = [pair for pair in corpus.test if short(pair)]
if QUICK:
    train_pairs, validation_pairs = train_pairs[:2000], validation_pairs[:100]
    test_pairs = test_pairs[:40]
print(
    f"{len(corpus.train):,} training pairs, {len(train_pairs):,} with "
    f"<= {max_words} words a side; {len(validation_pairs)} validation, "
    f"{len(test_pairs)} test"
)
print("e.g.", train_pairs[100])

# An upper bound: the learner keeps only subwords seen often enough, which
# on these pairs is well under 4,000 (asserted below).
vocabulary_size = 1500 if QUICK else 4000
source_vocabulary, target_vocabulary = recipe.build_vocabularies(
    train_pairs, vocabulary_size, lowercase=True
)
source_tokenizer = text.make_tokenizer(source_vocabulary, lowercase=True)
target_tokenizer = text.make_tokenizer(target_vocabulary, lowercase=True)
print(
    f"vocabularies: {len(source_vocabulary)} German, {len(target_vocabulary)} "
    f"English WordPiece tokens ({time.time() - started:.0f} s)"
)
if not QUICK:
    assert max(len(source_vocabulary), len(target_vocabulary)) < 2000

# %%
config = (
    {
        "model_dim": 32,
        "num_heads": 2,
        "ff_dim": 64,
        "num_encoder_layers": 1,
        "num_decoder_layers": 1,
    }
    if QUICK
    else {
        "model_dim": 128,
        "num_heads": 4,
        "ff_dim": 512,
        "num_encoder_layers": 2,
        "num_decoder_layers": 2,
    }
)
max_length = 32
model = zoo.build_translator(
    source_vocabulary_size=len(source_vocabulary),
    target_vocabulary_size=len(target_vocabulary),
    max_length=max_length,
    dropout=0.1,
    **config,
)
recipe.compile_translator(
    model, warmup_steps=300, learning_rate_scale=0.7, jit_compile=False
)
print(f"translator: {model.count_params():,} parameters, {config}")

train_data = text.make_translation_dataset(
    train_pairs,
    source_tokenizer,
    target_tokenizer,
    max_length,
    batch_tokens=2048,
    shuffle=True,
    seed=0,
    training=True,
)
validation_data = text.make_translation_dataset(
    validation_pairs,
    source_tokenizer,
    target_tokenizer,
    max_length,
    batch_tokens=2048,
)
# A fixed number of epochs, with a wall-clock cap that only a much slower
# machine reaches in full mode: the text below reads the model trained for
# all of them, so a busy machine should not cut it short.
epochs, minutes = (2, 1.0) if QUICK else (7, 30.0)
started = time.time()
history = model.fit(
    train_data,
    validation_data=validation_data,
    epochs=epochs,
    callbacks=[TimeBudget(minutes)],
    verbose=0,
    shuffle=False,  # shuffled already
).history
print(f"trained {len(history['loss'])} epochs in {time.time() - started:.0f} s")
if not QUICK:
    assert len(history["loss"]) == epochs
for epoch, (loss, val_loss, accuracy) in enumerate(
    zip(history["loss"], history["val_loss"], history["val_masked_accuracy"]), 1
):
    print(
        f"  epoch {epoch:2d}: loss {loss:.2f}, validation loss {val_loss:.2f}, "
        f"validation token accuracy {accuracy:.2f}"
    )

# %% [markdown]
# A few minutes of CPU training make a weak translator, so its quality is
# measured before its attention is read: greedy decoding of the short test
# pairs, scored with corpus BLEU (sacrebleu, lowercase). The project's
# `make demo` trains a larger model on all pairs; the README gives the BLEU
# it reaches on the whole test split.

# %%
started = time.time()
preprocessor = text.TranslationPreprocessor(
    source_tokenizer, target_tokenizer, max_length=max_length
)
hypotheses = recipe.translate_texts(model, preprocessor, [s for s, _ in test_pairs])
bleu = recipe.corpus_bleu(hypotheses, [t for _, t in test_pairs], lowercase=True)
print(
    f"test BLEU on {len(test_pairs)} short pairs: {bleu:.2f} "
    f"({time.time() - started:.0f} s to translate)"
)
for (source, reference), hypothesis in list(zip(test_pairs, hypotheses))[:5]:
    print(f"  {source}\n    reference: {reference}\n    model:     {hypothesis}")
if not QUICK:  # the summary calls it a weak translator
    assert bleu < 5

# %% [markdown]
# To draw the matrix, the model first translates a sentence greedily; then
# its own output, shifted right behind the start token, is fed back through
# the decoder (teacher forcing), and
# `Translator.cross_attention_weights` returns the weights of the last
# decoder block's cross attention, one matrix per head. Row $t$ is the
# output token produced at step $t$, so it is $\alpha^{(t)}$ of Fig. 7.11.
# The source is padded with zeros (at least three) to check that padding
# again gets no weight.

# %%
source_vocab = source_tokenizer.get_vocabulary()
target_vocab = target_tokenizer.get_vocabulary()


def attention_matrix(sentence, min_padding=3):
    """Greedy translation and its cross-attention weights (heads, T, S)."""
    ids = recipe.tokenize_to_lists(source_tokenizer, [sentence])[0]
    ids = ids[: model.max_length - min_padding]
    # Padding to a few fixed widths keeps the number of compiled decoding
    # loops small (one per source shape).
    width = 16 if len(ids) + min_padding <= 16 else model.max_length
    source_ids = np.array([ids + [0] * (width - len(ids))], "int32")
    output = np.asarray(model.generate(source_ids, max_new_tokens=24))[0].tolist()
    if text.END_ID in output:
        output = output[: output.index(text.END_ID) + 1]
    decoder_ids = np.array([[text.START_ID] + output[:-1]], "int32")
    weights = np.asarray(model.cross_attention_weights(source_ids, decoder_ids))[0]
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.all(weights[:, :, len(ids) :] == 0.0)  # padding columns
    translation = text.detokenize(target_tokenizer, np.array([output]))[0]
    return (
        weights[:, :, : len(ids)],
        [source_vocab[i] for i in ids],
        [target_vocab[i] for i in output],
        translation,
    )


def draw(axis, weights, source_tokens, target_tokens, title):
    axis.imshow(
        weights, cmap="gray_r", vmin=0, vmax=max(weights.max(), 1e-6), aspect="auto"
    )
    axis.set_xticks(
        range(len(source_tokens)), source_tokens, rotation=60, ha="right", fontsize=9
    )
    axis.set_yticks(range(len(target_tokens)), target_tokens, fontsize=9)
    axis.set_title(title, fontsize=9)


sentence = "Das Wetter ist heute sehr schön."
weights, source_tokens, target_tokens, translation = attention_matrix(sentence)
print("source:", sentence)
print("output:", translation)

heads = weights.shape[0]
fig, axes = plt.subplots(1, heads + 1, figsize=(3.3 * (heads + 1), 3.8))
for h in range(heads):
    draw(axes[h], weights[h], source_tokens, target_tokens, f"head {h + 1}")
draw(axes[-1], weights.mean(0), source_tokens, target_tokens, "mean of the heads")
axes[0].set_ylabel("output token (row t = alpha(t))")
fig.suptitle(
    "Cross attention of the last decoder block: German source (columns) "
    "-> English output (rows)",
    fontsize=10,
)
fig.tight_layout()
if not QUICK:
    os.makedirs("../docs/images", exist_ok=True)
    fig.savefig(
        "../docs/images/tutorial_04_attention.png", dpi=110, bbox_inches="tight"
    )
plt.show()

# %% [markdown]
# Reading the matrix row by row: for each output token, the source token
# with the largest mean weight, and that weight. A row that looked nowhere in
# particular would spread its weight evenly, $1/T_{\text{in}}$ per column.
# For the English words that have an obvious German counterpart in this
# sentence, the printout also says whether the row peaks on it.

# %%
COUNTERPARTS = {"the": "das", "weather": "wetter", "is": "ist", "today": "heute"}
COUNTERPARTS.update({"very": "sehr", ".": "."})
COUNTERPARTS.update(dict.fromkeys(["nice", "beautiful", "lovely", "fine"], "schön"))
COUNTERPARTS.update(dict.fromkeys(["good", "well", "great"], "schön"))
mean = weights.mean(0)
hits = []
for row, token in enumerate(target_tokens):
    column = int(mean[row].argmax())
    note = ""
    if token in COUNTERPARTS:
        hits.append(source_tokens[column] == COUNTERPARTS[token])
        note = "counterpart" if hits[-1] else f"(counterpart: {COUNTERPARTS[token]})"
    print(
        f"  {token:>10s} <- {source_tokens[column]:<8s} "
        f"({mean[row, column]:.2f}) {note}"
    )
print(f"{sum(hits)} of {len(hits)} rows with a counterpart peak on it")
peak = chosen_peak = float(mean.max(-1).mean())
print(
    f"largest weight per row, mean of the heads: {peak:.2f} on average; "
    f"uniform would be 1/{len(source_tokens)} = {1 / len(source_tokens):.2f}"
)
if not QUICK:
    assert peak > 2 / len(source_tokens) and sum(hits) > len(hits) / 2

# %% [markdown]
# The sentence above was picked for its common words. Three sentences taken
# in order from the short test pairs, without choosing, show what the model
# does on sentences it translates badly; each panel has its own grey scale,
# so the printout compares their peaks with the chosen sentence's.

# %%
picked = [s for s, _ in test_pairs if 4 <= len(s.split()) <= 8][:3]
fig, axes = plt.subplots(1, len(picked), figsize=(4.4 * len(picked), 3.8))
picked_peaks = []
for axis, source in zip(np.atleast_1d(axes), picked):
    weights, source_tokens, target_tokens, translation = attention_matrix(source)
    picked_peaks.append(float(weights.mean(0).max(-1).mean()))
    print(
        f"largest weight per row, mean of the heads: {picked_peaks[-1]:.2f} on "
        f"average ({len(source_tokens)} source tokens, uniform "
        f"{1 / len(source_tokens):.2f}): {source}"
    )
    draw(
        axis,
        weights.mean(0),
        source_tokens,
        target_tokens,
        f"{source}\n-> {translation}",
    )
fig.suptitle("Mean cross attention over heads, test sentences", fontsize=10)
fig.tight_layout()
plt.show()
print(f"the chosen sentence: {chosen_peak:.2f}")
if not QUICK:  # the summary reads this comparison
    assert max(picked_peaks) < chosen_peak

# %% [markdown]
# **Summary.** The four score functions of Sec. 7.4, recomputed by hand from
# `ScoreAttention`'s weights, match the layer to 1e-5; attention weights sum
# to one and padded keys get exactly zero. A small Transformer trained for a
# few CPU minutes is a weak translator (the BLEU score above), yet on the
# chosen sentence most rows of its cross attention that have an obvious
# German counterpart peak on it, as in Fig. 7.11, and the rows are far from
# uniform (the printout gives the counts and weights; the full-mode run
# asserts both). On the three unchosen test sentences, where its
# translations go wrong, the rows peak lower: the largest weight of a row
# averages less than on the chosen sentence (printed above). The matrix
# shows where the decoder looks, not whether it is right.


# %% [markdown]
# ## 3. From gated recurrent units to attention
#
# Where does attention come from? The lecture slides (004, "Gated recurrent
# units to attention") reach it from the GRU in four steps. Write the GRU's
# additive update with a gate $u_t \in (0, 1)$ that keeps part of the old
# state (Keras' $z$; the chapter's update gate $g_u$ of Eq. 7.18 is
# $1 - u_t$):
#
# $$h_t = u_t \odot h_{t-1} + (1 - u_t) \odot \tilde h_t, \qquad
#   \tilde h_t = f(x_t, h_{t-1}).$$
#
# Unrolled from $h_0 = 0$, the state is a weighted sum of every candidate so
# far,
#
# $$h_t = \sum_{i=1}^{t} w_{t,i} \odot \tilde h_i, \qquad
#   w_{t,i} = (1 - u_i) \odot \prod_{j=i+1}^{t} u_j ,$$
#
# with weights $w_{t,i} \ge 0$ that add up to $1 - \prod_{j=1}^{t} u_j$.
# (The slide prints the two products with other index ranges, which at
# $t = 1$ would give the weight $u_1$ instead of $1 - u_1$; the code below
# checks the form above against the recursion.) The slides then ask:
#
# 1. *Free the weights.* Replace the products of gates by a softmax of
#    scores, $\alpha_i \propto \exp \mathrm{ATT}(\tilde h_i, x_t)$. A product
#    of gates shrinks with the distance: with every gate at 0.9, the
#    candidate 49 steps back keeps a weight of at most $0.9^{49} \approx
#    0.006$. A softmax weight can be large at any distance.
# 2. *Free the candidates.* Compute $\tilde h_i = f(x_i)$ from the input
#    alone, so that no step waits for the one before.
# 3. *Separate keys and values.* Score a key $K(f(x_i))$ against a query
#    $Q(x_t)$, and average values $V(f(x_i))$:
#    $h_t = \sum_{i \le t} \alpha_i V(f(x_i))$.
# 4. *Several heads.* $h_t = [h_t^1; \dots; h_t^K]$, where head $k$ has its
#    own $Q^k, K^k, V^k$ and its own weights $\alpha^k$.
#
# With the scaled dot product as ATT, step 4 is causal multi-head self
# attention: each head is the chapter's Eq. (7.24) with its own $W_q^k$,
# $W_k^k$, $W_v^k$ (Eq. 7.25 is the same with the sum over all $\tau$), and
# the Transformer combines the heads with one more matrix, Eq. (7.26),
# $\sum_k W_c^k h_t^k$, which is one matrix applied to the concatenation
# (the layer's output projection).


# %%
def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


gru_rng = np.random.default_rng(1)
steps, width = 12, 4
keep = sigmoid(gru_rng.normal(size=(steps, width)))  # u_t, one gate per entry
candidates = np.tanh(gru_rng.normal(size=(steps, width)))  # h~_t
h = np.zeros(width)
for t in range(steps):
    h = keep[t] * h + (1.0 - keep[t]) * candidates[t]  # the additive update
# Unrolled: w_{t,i} = (1 - u_i) prod_{j > i} u_j, here at t = steps.
gru_weights = np.stack(
    [(1.0 - keep[i]) * np.prod(keep[i + 1 :], axis=0) for i in range(steps)]
)  # (steps, width)
np.testing.assert_allclose(h, (gru_weights * candidates).sum(0), atol=1e-12)
np.testing.assert_allclose(gru_weights.sum(0), 1.0 - np.prod(keep, axis=0), atol=1e-12)
assert np.all(gru_weights >= 0.0) and round(0.9**49, 3) == 0.006
print("the GRU state is the weighted sum of its candidates: checked")
print("weights of the oldest and newest candidate, per entry:")
print("  i = 1: ", np.round(gru_weights[0], 4))
print(f"  i = {steps}:", np.round(gru_weights[-1], 4))

# Step 4 by hand: K heads of causal scaled dot-product attention,
# concatenated, against the layer given the same projections.
heads, head_dim, model_dim, length = 2, 3, 4, 5
f_x = gru_rng.normal(size=(1, length, model_dim)).astype("float32")  # f(x_i)
mha = MultiHeadAttention(num_heads=heads, key_dim=head_dim, use_bias=False)
layer_output = np.asarray(mha(f_x, f_x, use_causal_mask=True))[0]  # (T, D)
projection = {w.path.split("/")[-2]: np.asarray(w) for w in mha.weights}
x_i = f_x[0].astype("float64")  # (T, D)
head_outputs = []
for k in range(heads):
    queries_k = x_i @ projection["query"][:, k]  # Q^k(f(x_t)), (T, H)
    keys_k = x_i @ projection["key"][:, k]  # K^k(f(x_i)), (T, H)
    values_k = x_i @ projection["value"][:, k]  # V^k(f(x_i)), (T, H)
    scores = queries_k @ keys_k.T / np.sqrt(head_dim)  # ATT, (T, T)
    scores[np.triu_indices(length, k=1)] = -np.inf  # only i <= t
    alpha = np.exp(scores - scores.max(-1, keepdims=True))
    alpha /= alpha.sum(-1, keepdims=True)  # alpha^k_i, rows sum to 1
    head_outputs.append(alpha @ values_k)  # h_t^k = sum_i alpha_i^k V^k f(x_i)
concatenated = np.concatenate(head_outputs, axis=-1)  # [h^1; ...; h^K], (T, K H)
by_hand = concatenated @ projection["attention_output"].reshape(-1, model_dim)
np.testing.assert_allclose(by_hand, layer_output, atol=1e-5)
print(
    f"step 4 by hand ({heads} heads) against MultiHeadAttention: largest "
    f"difference {np.abs(by_hand - layer_output).max():.1e}"
)
