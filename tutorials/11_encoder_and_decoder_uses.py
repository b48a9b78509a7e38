# %% [markdown]
# # 11 · What encoders and decoders are used for
#
# An encoder attends in both directions, so each output vector describes a
# token in the context of the whole sentence: the right tool for
# understanding tasks. A decoder attends only to the past, so it can
# continue a text one token at a time: the right tool for generation. This
# notebook trains small models from the zoo on real corpora for four uses
# named in the lecture notes: sentiment classification of movie-review
# snippets (`zoo.build_classifier`), filling in a masked word and searching
# sentences by meaning with the encoder of a masked language model
# (`zoo.build_masked_language_model`), and generating Shakespeare-like text
# with a causal language model (`zoo.build_language_model`). Each model
# trains for a few epochs, minutes on a CPU, so the results are honest but
# modest; we compare each with a simple baseline to say what was learned.

# %%
import dataclasses
import os
import re
import tempfile
import time
import warnings

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # keep C++ logs out of outputs

import keras
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from keras_seq import text
from keras_seq.data import (
    load_movie_review_snippets,
    load_shakespeare,
    load_trans_de_en,
)
from zoo.recipes import tasks
from zoo.recipes.translation import tokenize_to_lists

# Keras notes the end of every first pass over a dataset of unknown length.
warnings.filterwarnings("ignore", message="Your input ran out of data")
QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"
SEED = 0
keras.utils.set_random_seed(SEED)
IMAGES = os.path.join(os.pardir, "docs", "images")
RUNS = tempfile.mkdtemp()  # the recipes write checkpoints and vocabularies here

if QUICK:
    TINY = {"preset": "tiny", "vocabulary_size": 2000}
    CLASSIFIER = {**TINY, "epochs": 2}
    MASKED_LM = {**TINY, "epochs": 1, "max_length": 64}
    LANGUAGE_MODEL = {**TINY, "epochs": 1, "max_length": 64}
    MLM_SENTENCES, LM_LINES, LM_SEQUENCE = 3000, 4000, 32
else:
    # Fixed epochs, so that the numbers do not depend on the machine's load;
    # the minutes only guard against a much slower machine.
    CLASSIFIER = {"preset": "small", "epochs": 4, "minutes": 8.0}
    # Both token models predict over the whole vocabulary at every position,
    # so a 4,000-token vocabulary and short sequences buy many more steps
    # per CPU minute than the presets' 8,000 tokens and 128 positions.
    MASKED_LM = {
        "preset": "small",
        "epochs": 2,
        "minutes": 10.0,
        "vocabulary_size": 4000,
        "max_length": 48,
        "learning_rate": 1e-3,
    }
    LANGUAGE_MODEL = {
        "preset": "small",
        "epochs": 3,
        "minutes": 8.0,
        "vocabulary_size": 4000,
        "warmup_steps": 100,
        "num_layers": 2,  # the small preset narrowed to 2 blocks of width 128
        "model_dim": 128,
        "ff_dim": 512,
    }
    MLM_SENTENCES, LM_LINES, LM_SEQUENCE = None, 40000, 64


def show_table(headers, rows):
    """Render rows as a Markdown table in the notebook."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    display(Markdown("\n".join(lines)))


def pad(rows, length=None):
    """Lists of token ids -> (B, L) int32, 0-padded."""
    length = length or max(len(row) for row in rows)
    batch = np.zeros((len(rows), length), "int32")
    for i, row in enumerate(rows):
        batch[i, : len(row[:length])] = row[:length]
    return batch


# %% [markdown]
# ## 1 · Sentiment: an encoder, a pooled sentence vector, a classifier
#
# The movie-review snippets of Hutto and Gilbert (2014) carry a mean human
# rating between −4 and +4; positive ratings are label 1, negative ones 0.
# `zoo.build_classifier` embeds the tokens, runs encoder blocks without a
# causal mask, averages the output vectors of the real tokens (masked mean
# pooling) and maps that sentence vector $\bar h$ to class probabilities,
# $\hat p = \mathrm{softmax}(W \bar h + b)$. The recipe
# `zoo.recipes.tasks.train_classifier` trains it with `model.fit` and
# keeps the epoch with the best validation accuracy.

# %%
reviews = load_movie_review_snippets()
print(
    f"{len(reviews.train):,} / {len(reviews.validation):,} / {len(reviews.test):,} "
    f"snippets ({reviews.neutral_dropped} neutral ones left out)"
)
started = time.perf_counter()
sentiment = tasks.train_classifier(
    reviews, os.path.join(RUNS, "classifier"), seed=SEED, verbose=2, **CLASSIFIER
)
classifier, review_tokenizer = sentiment["model"], sentiment["tokenizer"]
positive_share = np.mean([label for _, label in reviews.test])
majority = max(positive_share, 1 - positive_share)
print(
    f"{len(sentiment['history']['loss'])} epochs in "
    f"{(time.perf_counter() - started) / 60:.1f} minutes; "
    f"test accuracy {sentiment['test_accuracy']:.1%} "
    f"({classifier.count_params():,} parameters); "
    f"always answering the majority class gives {majority:.1%}"
)

# %%
own_sentences = [
    "A moving, beautifully acted story that stays with you.",
    "The plot is thin and the jokes fall flat.",
    "Not as bad as I feared, but not good either.",
    "I laughed from start to finish.",
]
probabilities = tasks.classify_texts(
    classifier, review_tokenizer, own_sentences, sentiment["max_length"]
)
show_table(
    ["sentence", "P(positive)"],
    [(s, f"{p[1]:.2f}") for s, p in zip(own_sentences, probabilities)],
)

# %% [markdown]
# ## 2 · Fill in the blank: a masked language model
#
# A masked language model hides about 15% of the tokens of each sentence
# (80% of them become `[MASK]`, 10% a random token, 10% stay) and learns to
# predict the originals from both sides of the context:
#
# $$\hat p(x_i \mid x_{\setminus i}) = \mathrm{softmax}\big(E\,g(h_i)\big),$$
#
# where $h_i$ is the encoder's output at position $i$, $g$ a small dense
# head and $E$ the token embedding table (tied to the input embedding). We
# train it on sentences of the same register: the movie-review snippets and
# the English side of the `trans-de-en` example sentences.

# %%
translations = load_trans_de_en()
mlm_train = [t for t, _ in reviews.train] + [e for _, e in translations.train]
mlm_train = mlm_train[:MLM_SENTENCES]
mlm_validation = [t for t, _ in reviews.validation] + [
    e for _, e in translations.validation
]
started = time.perf_counter()
filler = tasks.train_masked_language_model(
    (mlm_train, mlm_validation),
    os.path.join(RUNS, "masked_lm"),
    seed=SEED,
    verbose=2,
    **MASKED_LM,
)
masked_lm, mlm_tokenizer = filler["model"], filler["tokenizer"]
mlm_vocabulary = mlm_tokenizer.get_vocabulary()
print(
    f"{len(mlm_train):,} training sentences, {len(filler['history']['loss'])} "
    f"epochs in {(time.perf_counter() - started) / 60:.1f} minutes; "
    f"validation masked-token accuracy "
    f"{filler['validation_masked_accuracy']:.1%}"
)

# %% [markdown]
# To ask for a fill-in, we tokenize a sentence, replace the token of one
# word by `[MASK]` and read the model's distribution at that position. The
# word in brackets is the one we hid.


# %%
def fill_in(sentence, hidden_word, k=5):
    """Top-k predictions for `hidden_word`'s (first) token in `sentence`."""
    ids = tokenize_to_lists(mlm_tokenizer, [sentence])[0]
    position = ids.index(mlm_vocabulary.index(hidden_word))
    ids[position] = text.MASK_ID
    logits = keras.ops.convert_to_numpy(masked_lm(pad([ids])))[0, position]
    probabilities = np.exp(logits - logits.max())
    probabilities /= probabilities.sum()
    best = np.argsort(probabilities)[::-1][:k]
    return [(mlm_vocabulary[i], float(probabilities[i])) for i in best]


probes = [
    ("this movie is a waste of time.", "waste"),
    ("she lives in a small house near the river.", "in"),
    ("it is one of the best films of the year.", "best"),
    ("i don't know what to do.", "know"),
    ("the story is very funny.", "funny"),
    ("we have to leave now.", "to"),
]
rows = []
for sentence, word in probes:
    if word not in mlm_vocabulary:  # a word split into pieces: skip it
        continue
    shown = re.sub(rf"\b{word}\b", f"[{word}]", sentence, count=1)
    fills = ", ".join(f"{token} ({p:.2f})" for token, p in fill_in(sentence, word))
    rows.append((shown, fills))
show_table(["sentence (hidden word)", "top-5 fills (probability)"], rows)

# %% [markdown]
# In the full run (two epochs, about 15% of masked tokens right on
# validation sentences) the model has learned which *kind* of token fits a
# slot: it offers pronouns and articles where a noun phrase starts, verbs
# right after a subject (even in "she lives [in] a small house", where it
# proposes "is", "has", "was"), and "to" among its first three guesses in
# "we have [to] leave". Content words such as "waste" or "funny" need much
# more training; BERT saw billions of words.

# %% [markdown]
# ## 3 · Semantic search with sentence embeddings
#
# Averaging the encoder's output vectors over the real tokens gives one
# vector per sentence, a *sentence embedding*; normalised to unit length,
# the cosine similarity of two sentences is the dot product of their
# vectors, $\cos(u, v) = u^\top v$. Search ranks a collection by similarity
# to a query. `MaskedLanguageModel.embed_sentences` returns these vectors.
# The vectors of a briefly trained encoder share one large common
# direction, so any two sentences look alike (the mean raw cosine of two
# different snippets is printed below); subtracting the collection's mean
# vector before comparing, a standard remedy, removes it.

# %%
collection = [t for t, _ in reviews.validation + reviews.test]
collection_labels = np.array([label for _, label in reviews.validation + reviews.test])


def embed(texts, batch_size=256):
    rows = tokenize_to_lists(mlm_tokenizer, texts)
    length = masked_lm.get_config()["max_length"]
    vectors = [
        keras.ops.convert_to_numpy(
            masked_lm.embed_sentences(pad(rows[i : i + batch_size], length))
        )
        for i in range(0, len(rows), batch_size)
    ]
    return np.concatenate(vectors)  # (N, D), unit rows


collection_vectors = embed(collection)
np.testing.assert_allclose(np.linalg.norm(collection_vectors, axis=1), 1.0, atol=1e-5)
raw = collection_vectors @ collection_vectors.T
off_diagonal = raw[~np.eye(len(raw), dtype=bool)]
print(
    f"raw embeddings: mean cosine of two different snippets {off_diagonal.mean():.2f}"
)
center = collection_vectors.mean(axis=0)


def centred(vectors):
    """Subtract the collection's mean vector and renormalise."""
    vectors = vectors - center
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


collection_centred = centred(collection_vectors)
queries = [
    "a very funny comedy",
    "the actors are terrible",
    "too long and boring",
    "a film about war",
]
similarity = centred(embed(queries)) @ collection_centred.T  # (Q, N) cosines
rows = []
for q, query in enumerate(queries):
    for rank, n in enumerate(np.argsort(similarity[q])[::-1][:3]):
        rows.append(
            (query if rank == 0 else "", f"{similarity[q, n]:.2f}", collection[n])
        )
show_table(["query", "cosine", f"nearest of {len(collection):,} snippets"], rows)

# %% [markdown]
# What do these vectors capture? One measurable answer: for each snippet,
# does its nearest neighbour (other than itself) have the same sentiment
# label? Random pairs agree with probability $p^2 + (1-p)^2$. We compare
# the masked language model's embeddings with the pooled vectors of the
# sentiment classifier of part 1, which were trained to separate exactly
# these labels.


# %%
def neighbour_agreement(vectors):
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = vectors @ vectors.T
    np.fill_diagonal(cosines, -np.inf)
    nearest = cosines.argmax(axis=1)
    return float(np.mean(collection_labels[nearest] == collection_labels))


pooled = keras.Model(classifier.input, classifier.get_layer("pooling").output)
review_rows = tokenize_to_lists(review_tokenizer, collection)
classifier_vectors = keras.ops.convert_to_numpy(
    pooled(pad(review_rows, sentiment["max_length"]))
)
p = collection_labels.mean()
agreement = {
    "chance, p² + (1 − p)²": p**2 + (1 - p) ** 2,
    "masked language model (self-supervised)": neighbour_agreement(collection_centred),
    "sentiment classifier's pooled vectors": neighbour_agreement(
        classifier_vectors - classifier_vectors.mean(axis=0)
    ),
}
show_table(
    ["sentence vectors", "nearest neighbour has the same label"],
    [(name, f"{value:.1%}") for name, value in agreement.items()],
)

# %%
history = sentiment["history"]
epochs = np.arange(1, len(history["accuracy"]) + 1)
kept = int(np.argmax(history["val_accuracy"])) + 1
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
left.plot(epochs, history["accuracy"], "-o", label="training")
left.plot(epochs, history["val_accuracy"], "-s", label="validation")
left.plot(
    [kept], [sentiment["test_accuracy"]], "k*", markersize=12, label="test (kept epoch)"
)
left.axhline(majority, color="gray", linestyle="--", label="majority class")
left.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
left.set_xlabel("epoch")
left.set_ylabel("accuracy")
left.set_title("Sentiment classifier on movie-review snippets")
left.legend(fontsize=8)
names = list(agreement)[::-1]
right.barh(
    names, [agreement[n] for n in names], color=["tab:orange", "tab:blue", "gray"]
)
for i, name in enumerate(names):
    right.text(agreement[name], i, f" {agreement[name]:.1%}", va="center")
right.set_xlim(0, 1)
right.set_xlabel("share of snippets whose nearest neighbour has the same label")
right.set_title("What the sentence vectors capture")
fig.tight_layout()
if not QUICK:
    fig.savefig(os.path.join(IMAGES, "tutorial_11_encoder_uses.png"), dpi=110)
plt.show()

# %% [markdown]
# The self-supervised vectors do not separate opinions: in the full run a
# snippet's nearest neighbour shares its sentiment hardly more often than a
# random snippet would (within a few points of 50%), and most search
# results above have little to do with their queries. The classifier's
# pooled vectors, trained on the labels, agree in about 70% of cases.
# Sentence embeddings that rank by meaning need far more text and training
# than a few CPU minutes, and usually a contrastive objective on top.
#
# ## 4 · Generation: a decoder-only language model
#
# A causal language model factorises the probability of a text as
#
# $$p(x_1, \dots, x_T) = \prod_{t=1}^{T} p(x_t \mid x_1, \dots, x_{t-1}),$$
#
# one output per position with the causal mask of Eq. (7.27); training
# minimises the mean of $-\log \hat p(x_t \mid x_{<t})$, and
# $\exp(\text{that mean})$ is the perplexity. We train `zoo.build_language_model`
# with the recipe `train_language_model` on lines of Shakespeare's works
# (whole works are held out for validation and testing), each line followed
# by `[END]`.

# %%
shakespeare = load_shakespeare()
subset = dataclasses.replace(
    shakespeare,
    train=shakespeare.train[:LM_LINES],
    validation=shakespeare.validation[: LM_LINES // 10],
    test=shakespeare.test[: LM_LINES // 10],
)
started = time.perf_counter()
poet = tasks.train_language_model(
    subset,
    os.path.join(RUNS, "language_model"),
    seed=SEED,
    sequence_length=LM_SEQUENCE,
    verbose=2,
    **LANGUAGE_MODEL,
)
language_model, lm_tokenizer = poet["model"], poet["tokenizer"]
vocabulary_size = lm_tokenizer.vocabulary_size()
print(
    f"{len(subset.train):,} training lines, {len(poet['history']['loss'])} epochs "
    f"in {(time.perf_counter() - started) / 60:.1f} minutes; "
    f"perplexity per token: validation "
    f"{poet['validation_perplexity']:.1f}, test {poet['test_perplexity']:.1f} "
    f"(a uniform guess over the {vocabulary_size:,} tokens: {vocabulary_size:,})"
)
assert poet["test_perplexity"] < vocabulary_size

# %% [markdown]
# Sampling continues a prompt token by token with the cached loop of
# `model.generate`. Temperature $\tau$ sharpens ($\tau < 1$) or flattens the
# next-token distribution $\mathrm{softmax}(\text{logits}/\tau)$; top-p keeps
# the smallest set of tokens whose probabilities add up to $p$. We let the
# model run past `[END]` and print its lines joined by " / ".


# %%
def continue_text(prompt, tokens=48, **options):
    ids = np.asarray(tokenize_to_lists(lm_tokenizer, [prompt]), "int32")
    tokens = min(tokens, language_model.get_config()["max_length"] - ids.shape[1])
    new = language_model.generate(ids, tokens, end_token_id=None, **options)
    stream = np.concatenate([ids[0], keras.ops.convert_to_numpy(new)[0]])
    lines = np.split(stream, np.flatnonzero(stream == text.END_ID))
    decoded = [
        text.detokenize(lm_tokenizer, line[line != text.END_ID]) for line in lines
    ]
    return " / ".join(line for line in decoded if line)


prompt = "Now is the winter of"
settings = {
    "greedy": {"strategy": "greedy"},
    "τ = 1.0": {"strategy": "sample", "seed": SEED},
    "τ = 0.7": {"strategy": "sample", "temperature": 0.7, "seed": SEED},
    "top-p 0.9, τ = 0.8": {
        "strategy": "sample",
        "top_p": 0.9,
        "temperature": 0.8,
        "seed": SEED,
    },
}
show_table(
    ["decoding", f"continuation of “{prompt}”"],
    [(name, continue_text(prompt, **options)) for name, options in settings.items()],
)

# %% [markdown]
# Greedy decoding, always taking the most likely token, soon falls into a
# loop ("and i am not," again and again in the full run), a well-known
# failure of maximising probability step by step. Sampling avoids it; at
# $\tau = 1$ the rarer word pieces make the text ragged, and a lower
# temperature or a top-p cut keeps it closer to plausible lines. The
# perplexity, about 100 per token against 3,056 for a uniform guess, says
# the model has learned much about the next token, but far from enough to
# write sense.

# %% [markdown]
# **What to take away.** The same blocks serve both families: without a
# causal mask they read a whole sentence (classification, fill-in,
# embeddings), with one they write (generation). After a few CPU minutes
# per model the classifier clearly beats the majority baseline, the
# fill-in model has learned which kind of word fits a slot rather than
# which word, the self-supervised embeddings do not yet carry meaning,
# and the Shakespeare samples have the look of verse (short lines, archaic
# words, names of lords) without its sense. Each of these gets better with
# more data and more compute, which is the trade the lecture notes
# describe.
