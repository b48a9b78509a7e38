# %% [markdown]
# # 00 · Sequence tasks and word embeddings (Sec. 7.1)
#
# What this shows: the chapter's opening section, before any recurrence.
# Words become vectors, and the cosine of the angle between two vectors
# measures how close the words are, on the chapter's own example (king,
# queen, mean); word2vec's two variants, continuous bag of words and
# skip-gram, written as two small Keras models and trained briefly on
# Shakespeare, with the nearest neighbours they find; a pre-trained
# embedding used frozen or fine-tuned inside a small sentiment model, with
# the trainable weights counted; and the input-output shapes of
# Fig. 7.1 and 7.2 (one-to-many, many-to-one, many-to-many aligned or not),
# each realised by a layer or a `zoo` builder, with the shapes printed.

# %%
import collections
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pathlib
import re
import warnings

import keras
import matplotlib.pyplot as plt
import numpy as np

with warnings.catch_warnings():  # tqdm's notice about ipywidgets, via keras-hub
    warnings.simplefilter("ignore")
    import zoo
    from keras_seq import data
    from keras_seq.layers import MaskedMeanPooling

QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"
IMAGES = pathlib.Path.cwd().parent / "docs" / "images"
keras.utils.set_random_seed(0)
print(f"Keras {keras.__version__} on {keras.backend.backend()}; quick mode: {QUICK}")

# %% [markdown]
# ## 1. Word embeddings and the cosine of the angle
#
# One-hot encoding gives each word of a lexicon of $d_V$ words its own axis:
# a vector of length $d_V$ (tens of thousands) with a single 1. A word
# embedding instead maps each word to a dense vector of $p \ll d_V$ real
# numbers, learned so that words used in similar contexts get nearby
# vectors. Closeness is the cosine of the angle between two vectors,
#
# $$\cos\theta(u, v) = \frac{u^\top v}{\lVert u\rVert\,\lVert v\rVert}
#   \in [-1, 1].$$
#
# The chapter's hypothetical example has $p = 4$: **king** $= (0.41, 1.2,
# 3.4, -1.3)$, **queen** $= (0.39, 1.1, 3.5, 1.6)$ and **mean** $= (-0.2,
# -3.2, 1.3, 0.8)$, and quotes the cosines 0.729, -0.04 and 0.156.

# %%
book_vectors = {
    "king": np.array([0.41, 1.2, 3.4, -1.3]),
    "queen": np.array([0.39, 1.1, 3.5, 1.6]),
    "mean": np.array([-0.2, -3.2, 1.3, 0.8]),
}


def cosine(u, v):
    return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))


book_words = list(book_vectors)
book_cosines = np.array(
    [[cosine(book_vectors[a], book_vectors[b]) for b in book_words] for a in book_words]
)
for a, b in [("king", "queen"), ("mean", "king"), ("mean", "queen")]:
    print(f"cos({a}, {b}) = {cosine(book_vectors[a], book_vectors[b]):+.3f}")
assert round(cosine(book_vectors["king"], book_vectors["queen"]), 3) == 0.729
assert round(cosine(book_vectors["mean"], book_vectors["king"]), 2) == -0.04
assert round(cosine(book_vectors["mean"], book_vectors["queen"]), 3) == 0.156

# %% [markdown]
# The three numbers of the chapter come out of its vectors to the digits it
# prints: king and queen are close (0.729), mean is almost orthogonal to
# both. A `keras.layers.Embedding` is this lookup table, a $d_V \times p$
# matrix whose row $i$ is the vector of word $i$; multiplying a one-hot row
# by the matrix picks the same row, which is why the table is the first
# layer of every text model in this project.

# %%
table = keras.layers.Embedding(3, 4)
table.build((None,))
table.set_weights([np.stack([book_vectors[w] for w in book_words])])
one_hot = np.eye(3)[[1]]  # "queen" as a one-hot row, (1, d_V)
looked_up = keras.ops.convert_to_numpy(table(np.array([1])))  # (1, p)
np.testing.assert_allclose(one_hot @ table.get_weights()[0], looked_up, atol=1e-6)
print("Embedding row 1:", looked_up[0], "= one-hot(queen) @ table")

# %% [markdown]
# ## 2. word2vec: continuous bag of words and skip-gram
#
# word2vec (Mikolov et al., 2013) trains a network on a prediction task
# and keeps its first layer as the embedding. Around each word $w_t$ take
# the context of $c$ words on either side. The two variants the chapter
# names swap what is predicted from what:
#
# * **continuous bag of words (CBOW)**: from the context, predict the
#   centre word. The $2c$ context vectors are averaged (the order is lost,
#   hence the name) and a dense softmax layer over the lexicon scores the
#   centre word;
# * **skip-gram**: from the centre word's vector, predict each of the $2c$
#   context words; one softmax scores all of them.
#
# Both are a few Keras layers, which is the point here: the embedding is a
# layer inside a model trained with `model.fit`, and nothing is hidden.
# gensim's `Word2Vec` would train faster, but in a C loop that shows no
# network, and it is not a dependency of this project. word2vec's own code
# replaces the full softmax by a hierarchical softmax or by negative
# sampling to afford lexicons of millions of words; with 2,000 words the
# full softmax is cheap and exact.
#
# The corpus is the training works of `keras_seq.data.load_shakespeare`,
# lower-cased and split into words; the 1,998 commonest words form the
# lexicon, id 1 stands for every other word and id 0 is left free for
# padding (Section 3 pads). A centre word that is not in the lexicon is
# skipped.

# %%
LINES, EPOCHS = (10_000, 3) if QUICK else (60_000, 5)
LEXICON, WINDOW, WIDTH = 2000, 2, 32  # d_V, c, p
PAD, OTHER = 0, 1

corpus = data.load_shakespeare()


def words_of(line):
    return re.findall(r"[a-z']+", line.lower())


words = [w for line in corpus.train[:LINES] for w in words_of(line)]
counts = collections.Counter(words)
lexicon = ["<pad>", "<other>"] + [w for w, _ in counts.most_common(LEXICON - 2)]
index = {word: i for i, word in enumerate(lexicon)}


def word_ids(word_list):
    return np.array([index.get(w, OTHER) for w in word_list], "int32")


ids = word_ids(words)
offsets = [o for o in range(-WINDOW, WINDOW + 1) if o != 0]
centre = ids[WINDOW:-WINDOW]  # (N,)
context = np.stack(
    [ids[WINDOW + o : len(ids) - WINDOW + o] for o in offsets], axis=1
)  # (N, 2c)
known = centre != OTHER
centre, context = centre[known], context[known]
print(
    f"{len(words):,} words from {LINES:,} lines; {len(centre):,} (centre, context) "
    f"examples; {np.mean(ids == OTHER):.1%} of words outside the lexicon"
)
print("centre", lexicon[centre[10]], "<- context", [lexicon[i] for i in context[10]])


# %%
class ScoreEveryContextWord(keras.layers.Layer):
    """Skip-gram's one softmax, (B, d_V) -> (B, 2c, d_V), one copy per label.

    The copies let the usual sparse cross-entropy score each of the 2c
    context words against the same distribution, which is the skip-gram
    loss summed over the context (averaged here).
    """

    def __init__(self, context_size, **kwargs):
        super().__init__(**kwargs)
        self.context_size = context_size

    def call(self, logits):
        return keras.ops.repeat(logits[:, None], self.context_size, axis=1)

    def get_config(self):
        return {**super().get_config(), "context_size": self.context_size}


def build_cbow():
    context_ids = keras.Input((2 * WINDOW,), dtype="int32", name="context_ids")
    x = keras.layers.Embedding(LEXICON, WIDTH, name="embedding")(context_ids)
    x = keras.layers.GlobalAveragePooling1D(name="bag")(x)  # (B, p)
    logits = keras.layers.Dense(LEXICON, name="centre_logits")(x)  # (B, d_V)
    return keras.Model(context_ids, logits, name="cbow")


def build_skip_gram():
    centre_ids = keras.Input((), dtype="int32", name="centre_ids")
    x = keras.layers.Embedding(LEXICON, WIDTH, name="embedding")(centre_ids)
    logits = keras.layers.Dense(LEXICON, name="context_logits")(x)  # (B, d_V)
    logits = ScoreEveryContextWord(2 * WINDOW, name="every_context_word")(logits)
    return keras.Model(centre_ids, logits, name="skip_gram")


variants = {
    "CBOW": (build_cbow, context, centre),
    "skip-gram": (build_skip_gram, centre, context),
}
word2vec, losses = {}, {}
for name, (build, inputs, targets) in variants.items():
    keras.utils.set_random_seed(0)
    model = build()
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(inputs, targets, batch_size=512, epochs=EPOCHS, verbose=0)
    word2vec[name], losses[name] = model, history.history["loss"]
    print(
        f"{name:<9} input {tuple(model.input.shape)} -> output "
        f"{tuple(model.output.shape)}; {model.count_params():,} parameters; "
        f"loss {losses[name][0]:.3f} -> {losses[name][-1]:.3f} "
        f"(uniform guess: log d_V = {np.log(LEXICON):.3f})"
    )
    assert np.all(np.diff(losses[name]) < 0) and losses[name][-1] < np.log(LEXICON)

# %% [markdown]
# Both losses fall at every epoch and end well below $\log d_V$, the loss
# of a uniform guess. The learned tables are the first layer of each
# model. The nearest neighbours of a few frequent words, by cosine:


# %%
def unit_rows(model):
    table = keras.ops.convert_to_numpy(model.get_layer("embedding").embeddings)
    return table / np.linalg.norm(table, axis=1, keepdims=True)  # (d_V, p)


def nearest(rows, word, k=5):
    similarity = rows @ rows[index[word]]  # cosines, (d_V,)
    order = [i for i in np.argsort(-similarity) if i not in (PAD, OTHER, index[word])]
    return [lexicon[i] for i in order[:k]]


probes = ["he", "the", "good", "lord", "love"]
for name, model in word2vec.items():
    rows = unit_rows(model)
    print(f"{name}:")
    for word in probes:
        print(f"  {word:<5} -> {', '.join(nearest(rows, word))}")

# %% [markdown]
# Rather than read single lists, we measure a property of many: for the
# words of two closed classes, subject pronouns and determiners (articles,
# possessives, demonstratives), the share of their five nearest neighbours
# that belong to the same class, against the same share for a table of
# random vectors.

# %%
CLASSES = {
    "pronoun": "i thou he she we you they ye it who".split(),
    "determiner": (
        "the a an my thy his her our your their this that these those every "
        "some no whose"
    ).split(),
}


def same_class_share(rows):
    hits = total = 0
    for members in CLASSES.values():
        members = [w for w in members if w in index]
        for word in members:
            hits += sum(n in members for n in nearest(rows, word))
            total += 5
    return hits / total


random_rows = np.random.default_rng(0).normal(size=(LEXICON, WIDTH))
random_rows /= np.linalg.norm(random_rows, axis=1, keepdims=True)
shares = {name: same_class_share(unit_rows(m)) for name, m in word2vec.items()}
shares["random vectors"] = same_class_share(random_rows)
for name, share in shares.items():
    print(f"{name:<15} {share:.0%} of the neighbours share the word's class")
assert shares["random vectors"] < 0.05
assert shares["CBOW"] > 0.25 and shares["skip-gram"] > 0.25

# %% [markdown]
# Random vectors place a pronoun's or determiner's neighbours in its class
# by chance only (under 5%); after a few epochs both word2vec tables put
# more than a quarter of them there, with no label ever saying what a
# pronoun is: words that fill the same slots get nearby vectors.

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
image = left.imshow(book_cosines, cmap="RdBu", vmin=-1, vmax=1)
left.set(
    xticks=range(3), yticks=range(3), xticklabels=book_words, yticklabels=book_words
)
for i in range(3):
    for j in range(3):
        left.text(j, i, f"{book_cosines[i, j]:.3f}", ha="center", va="center")
left.set_title("The chapter's vectors (p = 4): cosines")
fig.colorbar(image, ax=left, fraction=0.046)
for name, curve in losses.items():
    right.plot(range(1, len(curve) + 1), curve, "o-", label=name)
right.axhline(np.log(LEXICON), color="grey", ls="--", label="uniform guess, log d_V")
right.set(
    title="word2vec on Shakespeare: training loss",
    xlabel="epoch",
    ylabel="cross-entropy (nats)",
)
right.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
right.legend()
fig.tight_layout()
if not QUICK:
    IMAGES.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMAGES / "tutorial_00_embeddings.png", dpi=110)
plt.show()

# %% [markdown]
# ## 3. Pre-trained and fine-tuned embeddings
#
# A pre-trained table can be used as it is, frozen, or fine-tuned, that is
# trained further with the rest of a larger model (the chapter's last
# remark on word2vec). We put the skip-gram table under a small sentiment
# model for the movie-review snippets (`load_movie_review_snippets`): the
# embedding, a mean over the real words (many-to-one, Section 4), and one
# logit. Frozen, only the head trains: $p + 1 = 33$ weights. Fine-tuned,
# the $d_V \times p$ table trains too. A frozen table of random vectors is
# the baseline that says what the pre-trained vectors bring.

# %%
reviews = data.load_movie_review_snippets()
MAX_WORDS = 40


def review_ids(examples):
    rows = np.zeros((len(examples), MAX_WORDS), "int32")  # 0 = padding
    for row, (sentence, _) in zip(rows, examples):
        found = word_ids(words_of(sentence))[:MAX_WORDS]
        row[: len(found)] = found
    return rows, np.array([label for _, label in examples], "float32")


train_x, train_y = review_ids(reviews.train)
validation_x, validation_y = review_ids(reviews.validation)
in_lexicon = np.mean(train_x[train_x != PAD] != OTHER)
print(
    f"{len(train_x):,} training and {len(validation_x):,} validation snippets; "
    f"{in_lexicon:.0%} of their words are in the Shakespeare lexicon"
)

skip_gram_table = keras.ops.convert_to_numpy(
    word2vec["skip-gram"].get_layer("embedding").embeddings
)
random_table = (
    np.random.default_rng(1)
    .normal(scale=skip_gram_table.std(), size=skip_gram_table.shape)
    .astype("float32")
)


def sentiment_model(table, trainable):
    keras.utils.set_random_seed(0)
    token_ids = keras.Input((MAX_WORDS,), dtype="int32", name="token_ids")
    embedding = keras.layers.Embedding(
        LEXICON, WIDTH, mask_zero=True, trainable=trainable, name="embedding"
    )
    x = embedding(token_ids)  # (B, T, p), with the padding mask
    x = MaskedMeanPooling(name="mean_of_words")(x)  # (B, p)
    logit = keras.layers.Dense(1, name="logit")(x)  # (B, 1)
    model = keras.Model(token_ids, logit)
    embedding.set_weights([table])
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.BinaryCrossentropy(from_logits=True),
        metrics=[keras.metrics.BinaryAccuracy(threshold=0.0, name="accuracy")],
    )
    return model


def count(weights):
    return int(sum(np.prod(w.shape) for w in weights))


settings = {
    "pre-trained, frozen": (skip_gram_table, False),
    "pre-trained, fine-tuned": (skip_gram_table, True),
    "random, frozen": (random_table, False),
}
SENTIMENT_EPOCHS = 3 if QUICK else 8
sentiment = {}
for name, (table, trainable) in settings.items():
    model = sentiment_model(table, trainable)
    trainable_count = count(model.trainable_weights)
    history = model.fit(
        train_x,
        train_y,
        batch_size=64,
        epochs=SENTIMENT_EPOCHS,
        validation_data=(validation_x, validation_y),
        verbose=0,
    ).history
    after = model.get_layer("embedding").get_weights()[0]
    sentiment[name] = history
    print(
        f"{name:<24} trainable {trainable_count:>6,} of {model.count_params():,}; "
        f"loss {history['loss'][0]:.3f} -> {history['loss'][-1]:.3f}; "
        f"validation accuracy {history['val_accuracy'][-1]:.1%}; "
        f"table moved by {np.abs(after - table).max():.3f}"
    )
    expected = LEXICON * WIDTH + WIDTH + 1 if trainable else WIDTH + 1
    assert trainable_count == expected
    assert (np.abs(after - table).max() > 0) == trainable  # frozen: not one change
    assert history["loss"][-1] < history["loss"][0]
accuracy = {name: h["val_accuracy"][-1] for name, h in sentiment.items()}
frozen_best = max(accuracy["pre-trained, frozen"], accuracy["random, frozen"])
assert accuracy["pre-trained, fine-tuned"] > frozen_best + 0.05

# %% [markdown]
# The counts are the ones announced: 33 trainable weights when the table
# is frozen, $2{,}000 \times 32 + 33 = 64{,}033$ when it is fine-tuned; a
# frozen table ends training unchanged to the last digit, a fine-tuned one
# moves. On the 529 held-out snippets the fine-tuned model is more than 5
# points more accurate than either frozen one: a table learned to predict
# Shakespeare's neighbouring words is not, as it stands, what a sentiment
# head needs, and fine-tuning adapts it to the task. Whether a frozen table
# is enough depends on how close its corpus and objective are to the
# task; notebook 11 makes the same comparison for a whole pre-trained
# encoder.
#
# ## 4. Input and output shapes: Fig. 7.1 and 7.2
#
# The chapter sorts sequence tasks by the shapes of input $x$ and output
# $\hat y$. Each has a realisation in this project:
#
# | Fig. 7.2 | task (Fig. 7.1) | realised by |
# |---|---|---|
# | (a) one-to-many | captioning (d) | zeros after $x^{(1)}$; `generate` |
# | (b) many-to-one | sentiment (b) | `build_classifier`; a last output |
# | (c) many-to-many, not aligned | translation (c) | `build_translator` |
# | (d) many-to-many, aligned | look-ahead (a) | `build_rnn_language_model` |
#
# In shapes: (a) $x^{(1)} \to \hat y^{(1)}, \hat y^{(2)}, \dots$ until a
# stop; (b) $x^{(1)}, \dots, x^{(T)} \to \hat y$; (c) $x^{(1)}, \dots,
# x^{(S)} \to \hat y^{(1)}, \dots, \hat y^{(T)}$ with $S \ne T$ in
# general (`build_rnn_seq2seq` too); (d) the same with $S = T$, one output
# per input (`build_language_model` too).
#
# ### (a) One-to-many
#
# The recursion (7.2) maps each $x^{(t)}$ to an $\hat y^{(t)}$. For one
# input, the chapter runs it on $x^{(1)}$ and then on $x^{(t)} = 0$ for
# $t = 2, 3, \dots$, until a stopping criterion: a `<stop>` symbol in
# $\hat y^{(t)}$. Below, a `SimpleRNN` and a softmax layer over $q$ symbols
# (untrained, so we declare as `<stop>` the symbol it happens to emit at
# step 4 of the first sequence: the mechanics, not the meaning, are the
# point).

# %%
p, q, m, B, T_MAX = 6, 10, 16, 3, 12  # input and output widths, state, batch
rnn = keras.layers.SimpleRNN(m, return_sequences=True, name="rnn")
readout = keras.layers.Dense(q, activation="softmax", name="readout")
x_first = np.random.default_rng(2).normal(size=(B, 1, p)).astype("float32")
x = np.concatenate([x_first, np.zeros((B, T_MAX - 1, p), "float32")], axis=1)
y_hat = keras.ops.convert_to_numpy(readout(rnn(x)))  # (B, T_MAX, q)
symbols = y_hat.argmax(axis=-1)  # (B, T_MAX)
STOP = int(symbols[0, 3])


def cut_at_stop(row):
    """The symbols up to and including the first <stop>, or all T_MAX."""
    stops = np.flatnonzero(row == STOP)
    return row[: stops[0] + 1] if len(stops) else row


outputs = [cut_at_stop(row) for row in symbols]
print(f"x^(1) {x_first.shape} -> zeros appended {x.shape} -> y_hat {y_hat.shape}")
for b, row in enumerate(outputs):
    print(f"  sequence {b}: {len(row):>2} symbols {row.tolist()}")
assert x.shape == (B, T_MAX, p) and y_hat.shape == (B, T_MAX, q)
assert len(outputs[0]) <= 4 and all(STOP not in row[:-1] for row in outputs)

# %% [markdown]
# Generation in this project is the same shape with the chapter's other
# choice of input, Eq. (7.3): the previous output is fed back instead of a
# zero. `model.generate` starts from one token and stops a row at
# `end_token_id`, filling the rest with padding. We run a tiny language
# model without a stop, then with the token it produced third in the first
# row declared the stop.

# %%
language_model = zoo.build_language_model("tiny")
prompt = np.array([[5], [17], [42]], "int32")  # one token each, (B, 1)
free = keras.ops.convert_to_numpy(
    language_model.generate(prompt, max_new_tokens=10, end_token_id=None)
)
stop_id = int(free[0, 2])
stopped = keras.ops.convert_to_numpy(
    language_model.generate(prompt, max_new_tokens=10, end_token_id=stop_id)
)
print(f"prompt {prompt.shape} -> generated {free.shape}")
print("without a stop:     ", free[0].tolist())
print(f"stopping at id {stop_id:>2}:", stopped[0].tolist())
first_stop = int(np.flatnonzero(free[0] == stop_id)[0])
assert stopped.shape == free.shape == (3, 10)
assert np.array_equal(stopped[0, : first_stop + 1], free[0, : first_stop + 1])
assert np.all(stopped[0, first_stop + 1 :] == 0)

# %% [markdown]
# ### (b) Many-to-one
#
# For a many-to-one task the chapter keeps the recursion as it is and
# ignores every $\hat y^{(t)}$ with $t < T$. Keras' `return_sequences=False`
# does exactly that: its output is the last element of the sequence that
# `return_sequences=True` returns, with the same weights.

# %%
T, E = 7, 6
sequence = np.random.default_rng(3).normal(size=(B, T, E)).astype("float32")
every_step = keras.layers.LSTM(m, return_sequences=True, name="every_step")
every_step_outputs = keras.ops.convert_to_numpy(every_step(sequence))  # (B, T, m)
last_only = keras.layers.LSTM(m, name="last_only")
last_only.build(sequence.shape)
last_only.set_weights(every_step.get_weights())
last_output = keras.ops.convert_to_numpy(last_only(sequence))  # (B, m)
print(f"return_sequences=True {every_step_outputs.shape}; False {last_output.shape}")
np.testing.assert_allclose(every_step_outputs[:, -1], last_output, atol=1e-6)
print("the last-only output equals step T of the full sequence; steps < T dropped")

classifier = zoo.build_classifier("tiny")
token_ids = np.random.default_rng(4).integers(1, 100, size=(B, T)).astype("int32")
class_logits = classifier(token_ids)
print(f"zoo.build_classifier: ids {token_ids.shape} -> logits {class_logits.shape}")
assert tuple(class_logits.shape) == (B, classifier.num_classes)

# %% [markdown]
# `build_classifier` is many-to-one too, but reads every position: it
# averages the encoder's outputs over the real tokens (the pooling of
# Section 3) instead of keeping the last one, since a Transformer encoder
# has no last state that has seen the whole sentence.
#
# ### (c) and (d) Many-to-many
#
# Aligned (Fig. 7.2 (d)): one output per input, as in the look-ahead task
# where $\hat y^{(t)}$ predicts $x^{(t+1)}$. Not aligned (Fig. 7.2 (c)):
# an encoder reads $S$ source tokens and a decoder writes $T$ target
# tokens, $S \ne T$ in general, as in translation.

# %%
rnn_language_model = zoo.build_rnn_language_model("tiny")
aligned = rnn_language_model(token_ids)  # (B, T, V)
print(f"(d) build_rnn_language_model: {token_ids.shape} -> {tuple(aligned.shape)}")
assert tuple(aligned.shape) == (B, T, rnn_language_model.vocabulary_size)

S, T_TARGET = 9, 4
source = np.random.default_rng(5).integers(1, 100, size=(B, S)).astype("int32")
target = np.random.default_rng(6).integers(1, 100, size=(B, T_TARGET)).astype("int32")
for build in (zoo.build_translator, zoo.build_rnn_seq2seq):
    translator = build("tiny")
    logits = translator({"encoder_token_ids": source, "decoder_token_ids": target})
    print(
        f"(c) {build.__name__}: source {source.shape}, target {target.shape} "
        f"-> {tuple(logits.shape)}"
    )
    assert tuple(logits.shape) == (B, T_TARGET, translator.target_vocabulary_size)
translation = zoo.build_translator("tiny").generate(source, max_new_tokens=5)
print(f"(c) generate: source {source.shape} -> output {tuple(translation.shape)}")
assert tuple(translation.shape) == (B, 5)

# %% [markdown]
# The output length of a not-aligned model is set by the decoder (the
# target given for training, or `max_new_tokens` and the stop token when
# generating), never by the source length $S$. The chapter's Fig. 7.1 (d),
# image captioning, is the one-to-many case with a code vector in place of
# $x^{(1)}$: `zoo.build_rnn_seq2seq` hands its encoder's final state, the
# code $z^*$, to a decoder in the same way (Fig. 7.9, notebook 03).
#
# **References.** Mikolov, Chen, Corrado and Dean, "Efficient Estimation of
# Word Representations in Vector Space", 2013. Chapter 7, Sec. 7.1, of
# Liquet, Moka and Nazarathy, *Mathematical Engineering of Deep Learning*.
