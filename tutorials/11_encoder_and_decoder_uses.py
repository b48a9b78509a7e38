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
# with a causal language model (`zoo.build_language_model`). Between them,
# it reuses the masked language model's encoder for sentiment, frozen or
# fine-tuned, against a classifier trained from scratch. Each model trains
# for a few epochs, minutes on a CPU, so the results are honest but modest;
# we compare each with a simple baseline to say what was learned.

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

import zoo
from keras_seq import text
from keras_seq.data import (
    load_movie_review_snippets,
    load_shakespeare,
    load_trans_de_en,
)
from zoo.recipes.classifier import train_classifier
from zoo.recipes.inference import classify_texts, tokenize_to_lists
from zoo.recipes.language_model import train_language_model
from zoo.recipes.masked_language_model import train_masked_language_model

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
    MLM_SENTENCES, LM_LINES, LM_SEQUENCE = 1000, 2000, 32
    FINE_TUNE_LABELS, FINE_TUNE_EPOCHS = 256, 1
else:
    # Fixed epochs, so that the numbers do not depend on the machine's load;
    # the minutes only guard against a much slower machine: each budget is
    # several times what its run needs on a 2-core CPU shared with other work.
    CLASSIFIER = {"preset": "small", "epochs": 4, "minutes": 30.0}
    # Both token models predict over the whole vocabulary at every position,
    # so a 4,000-token vocabulary and short sequences buy many more steps
    # per CPU minute than the presets' 8,000 tokens and 128 positions.
    MASKED_LM = {
        "preset": "small",
        "epochs": 2,
        "minutes": 60.0,
        "vocabulary_size": 4000,
        "max_length": 48,
        "learning_rate": 1e-3,
    }
    LANGUAGE_MODEL = {
        "preset": "small",
        "epochs": 3,
        "minutes": 45.0,
        "vocabulary_size": 4000,
        "warmup_steps": 100,
        "num_layers": 2,  # the small preset narrowed to 2 blocks of width 128
        "model_dim": 128,
        "ff_dim": 512,
    }
    MLM_SENTENCES, LM_LINES, LM_SEQUENCE = None, 40000, 64
    FINE_TUNE_LABELS, FINE_TUNE_EPOCHS = 1000, 6


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
# `zoo.recipes.classifier.train_classifier` trains it with `model.fit` and
# keeps the epoch with the best validation accuracy.

# %%
reviews = load_movie_review_snippets()
print(
    f"{len(reviews.train):,} / {len(reviews.validation):,} / {len(reviews.test):,} "
    f"snippets ({reviews.neutral_dropped} neutral ones left out)"
)
started = time.perf_counter()
sentiment = train_classifier(
    reviews, os.path.join(RUNS, "classifier"), seed=SEED, verbose=2, **CLASSIFIER
)
classifier, review_tokenizer = sentiment.model, sentiment.tokenizer
positive_share = np.mean([label for _, label in reviews.test])
majority = max(positive_share, 1 - positive_share)
print(
    f"{len(sentiment.history['loss'])} epochs in "
    f"{(time.perf_counter() - started) / 60:.1f} minutes; "
    f"test accuracy {sentiment.test_accuracy:.1%} "
    f"({classifier.count_params():,} parameters); "
    f"always answering the majority class gives {majority:.1%}"
)
assert len(sentiment.history["loss"]) == CLASSIFIER["epochs"]
if not QUICK:  # the closing note reads this comparison
    assert sentiment.test_accuracy > majority + 0.2

# %%
own_sentences = [
    "A moving, beautifully acted story that stays with you.",
    "The plot is thin and the jokes fall flat.",
    "Not as bad as I feared, but not good either.",
    "I laughed from start to finish.",
]
probabilities = classify_texts(classifier, sentiment.preprocessor, own_sentences)
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
filler = train_masked_language_model(
    (mlm_train, mlm_validation),
    os.path.join(RUNS, "masked_lm"),
    seed=SEED,
    verbose=2,
    **MASKED_LM,
)
masked_lm, mlm_tokenizer = filler.model, filler.tokenizer
mlm_vocabulary = mlm_tokenizer.get_vocabulary()
print(
    f"{len(mlm_train):,} training sentences, {len(filler.history['loss'])} "
    f"epochs in {(time.perf_counter() - started) / 60:.1f} minutes; "
    f"validation masked-token accuracy "
    f"{filler.validation_masked_accuracy:.1%}"
)
assert len(filler.history["loss"]) == MASKED_LM["epochs"]

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
rows, found = [], {}
for sentence, word in probes:
    if word not in mlm_vocabulary:  # a word split into pieces: skip it
        continue
    shown = re.sub(rf"\b{word}\b", f"[{word}]", sentence, count=1)
    fills = fill_in(sentence, word)
    found[word] = word in [token for token, _ in fills]
    rows.append((shown, ", ".join(f"{token} ({p:.2f})" for token, p in fills)))
show_table(["sentence (hidden word)", "top-5 fills (probability)"], rows)
print("hidden word among the top-5 fills:", [w for w, hit in found.items() if hit])

# %% [markdown]
# ### What the fill-in model has learned, measured
#
# A handful of sentences proves little, so we score the model on the
# validation sentences with one fixed draw of the masks, the way it was
# trained: how often is the hidden token its first guess (top-1), or among
# its five first guesses (top-5)? The yardstick ignores context: always
# answer the most common token of the training text (top-1), or its five
# most common tokens (top-5). We also split the hidden tokens into the 20
# most common ones (punctuation, articles, prepositions, pronouns) and the
# rest.

# %%
counts = np.zeros(len(mlm_vocabulary), "int64")
for row in tokenize_to_lists(mlm_tokenizer, mlm_train):
    counts += np.bincount(row, minlength=len(mlm_vocabulary))
counts[[text.PAD_ID, text.UNK_ID, text.START_ID, text.END_ID, text.MASK_ID]] = 0
by_frequency = np.argsort(counts)[::-1]  # token ids, most common first
common = by_frequency[:20]
print("20 most common training tokens:", " ".join(mlm_vocabulary[i] for i in common))
print(f"training text: {counts.sum():,} tokens")

# The validation masks are drawn from the dataset's seed (0): the same on every pass.
answers, guesses, entropies = [], [], []
for inputs, labels in text.make_masked_language_model_dataset(
    mlm_validation, mlm_tokenizer, masked_lm.get_config()["max_length"], 128
):
    labels = labels.numpy()  # (B, T): the hidden id where masked, else 0
    logits = keras.ops.convert_to_numpy(masked_lm(inputs))[labels != 0]  # (M, V)
    log_p = logits - logits.max(-1, keepdims=True)
    log_p -= np.log(np.exp(log_p).sum(-1, keepdims=True))
    answers.append(labels[labels != 0])
    guesses.append(np.argsort(-logits, axis=-1)[:, :5])  # (M, 5), best first
    entropies.append(-(np.exp(log_p) * log_p).sum(-1))
answers, guesses = np.concatenate(answers), np.concatenate(guesses)
is_common = np.isin(answers, common)
right = guesses[:, 0] == answers
scores = {
    "model, top-1": right.mean(),
    "model, top-5": (guesses == answers[:, None]).any(-1).mean(),
    "most common token, top-1": np.mean(answers == by_frequency[0]),
    "five most common tokens, top-5": np.isin(answers, by_frequency[:5]).mean(),
}
show_table(
    [f"guess ({len(answers):,} hidden validation tokens)", "accuracy"],
    [(name, f"{value:.1%}") for name, value in scores.items()],
)
frequency = counts / counts.sum()
unigram_entropy = -(frequency[frequency > 0] * np.log(frequency[frequency > 0])).sum()
guessed_common = np.isin(guesses[:, 0], common).mean()
model_entropy = np.concatenate(entropies).mean()
print(
    f"hidden tokens among the 20 most common: {is_common.mean():.1%}; top-1 "
    f"accuracy on them {right[is_common].mean():.1%}, on the rest "
    f"{right[~is_common].mean():.1%}\n"
    f"first guesses among the 20 most common: {guessed_common:.1%}\n"
    f"entropy of the model's distribution {model_entropy:.2f} "
    f"nats, of the token frequencies {unigram_entropy:.2f}, of a uniform guess "
    f"{np.log(len(mlm_vocabulary)):.2f}"
)
if not QUICK:  # the sentences below read these numbers
    assert scores["model, top-1"] > 2 * scores["most common token, top-1"]
    assert scores["model, top-5"] > scores["five most common tokens, top-5"]
    assert guessed_common > 0.8 and 0.6 < 1 - is_common.mean() < 0.8
    assert right[~is_common].mean() < 0.1 and right[is_common].mean() > 0.3
    assert model_entropy < unigram_entropy < np.log(len(mlm_vocabulary)) - 1
    assert sum(found.values()) <= len(found) / 2
    assert 1e5 < counts.sum() < 1e6 and model_entropy > 3

# %% [markdown]
# What the full run shows, then. Context helps: the model's first guess is
# right more than twice as often as always answering the most common token,
# and its top-5 beats the five most common tokens. But more than 80% of its
# first guesses are one of the 20 most common tokens. On those tokens it is
# right more than 30% of the time; on the other hidden tokens, between 60%
# and 80% of them, fewer than one time in ten. So after a few CPU minutes it
# has learned mostly which *frequent* token a context calls for, and only
# now and then the rarer word (the "on the rest" figure printed above): its
# top five in the table above hold at most half of the hidden words (the
# list under the table). Its
# distribution is a little sharper than the token frequencies (a lower
# entropy, printed above) and far from uniform, yet far from sure (more
# than 3 nats). BERT was pretrained on about 3.3 billion words,
# BooksCorpus and English Wikipedia (Devlin, Chang, Lee and Toutanova,
# 2019, *BERT: Pre-training of Deep Bidirectional Transformers for Language
# Understanding*, NAACL, Sec. 3.1); this
# model's training text holds a few hundred thousand tokens (printed above).

# %% [markdown]
# ## 3 · Fine-tuning: the pretrained encoder under a new head, frozen or not
#
# The point of pretraining an encoder on unlabelled text is to reuse it: put
# a small head on top and train on a labelled task. Either the pretrained
# part is *frozen* (`layer.trainable = False`: its weights get no gradient
# and only the head learns) or it is *fine-tuned* with the head (every
# weight learns, starting from the pretrained values). We build
# `zoo.build_classifier` with the masked language model's sizes, so its
# embedding and encoder blocks have exactly the shapes of the fill-in
# model's, copy their weights over, and compare four ways of training on
# the same small labelled task: sentiment, from 1,000 of the training
# snippets of section 1 in the full run (about a tenth of them):
#
# * the pretrained encoder frozen, a new head trained;
# * the pretrained encoder fine-tuned with the head;
# * the same classifier from random weights, everything trained (scratch);
# * a random encoder frozen, a head trained: the control that says how much
#   of the frozen result the pretraining, rather than the head, provides.
#
# All four use the masked language model's tokenizer, the same optimizer
# (AdamW, learning rate $10^{-3}$), the same epochs and the same seed.

# %%
mlm_config = masked_lm.get_config()
SIZES = (
    "vocabulary_size", "num_layers", "model_dim", "num_heads", "key_dim",
    "value_dim", "ff_dim", "dropout", "max_length", "positional",
    "norm_first", "attention_bias", "layer_norm_epsilon",
)  # fmt: skip
sizes = {name: mlm_config[name] for name in SIZES}
labelled = [
    reviews.train[i]
    for i in np.random.default_rng(SEED).permutation(len(reviews.train))
][:FINE_TUNE_LABELS]


def token_ids_and_labels(pairs):
    """(N, max_length) token ids and (N,) labels of `(text, label)` pairs."""
    rows = tokenize_to_lists(mlm_tokenizer, [t for t, _ in pairs])
    return pad(rows, sizes["max_length"]), np.array([y for _, y in pairs], "int32")


x_labelled, y_labelled = token_ids_and_labels(labelled)
x_test, y_test = token_ids_and_labels(reviews.test)


def train_head(pretrained, frozen):
    """A classifier on the fill-in model's encoder; its figures."""
    keras.utils.set_random_seed(SEED)  # same initial head, same batches
    model = zoo.build_classifier(num_classes=2, **sizes)
    body = [layer for layer in model.layers if layer.weights and layer.name != "logits"]
    for layer in body:
        if pretrained:
            layer.set_weights(masked_lm.get_layer(layer.name).get_weights())
        layer.trainable = not frozen
    model.compile(
        optimizer=keras.optimizers.AdamW(1e-3, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    started = time.perf_counter()
    model.fit(x_labelled, y_labelled, batch_size=32, epochs=FINE_TUNE_EPOCHS, verbose=0)
    seconds = time.perf_counter() - started
    predicted = keras.ops.convert_to_numpy(model(x_test)).argmax(-1)
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    return {
        "model": model,
        "trainable": trainable,
        "accuracy": float(np.mean(predicted == y_test)),
        "seconds": seconds,
    }


variants = {
    "pretrained encoder, frozen": train_head(pretrained=True, frozen=True),
    "pretrained encoder, fine-tuned": train_head(pretrained=True, frozen=False),
    "from scratch": train_head(pretrained=False, frozen=False),
    "random encoder, frozen (control)": train_head(pretrained=False, frozen=True),
}
total = variants["from scratch"]["model"].count_params()
show_table(
    [
        f"sentiment, {len(labelled):,} labelled snippets",
        "trainable weights",
        f"test accuracy ({len(reviews.test):,})",
        "training seconds",
    ],
    [
        (
            name,
            f"{v['trainable']:,} of {total:,}",
            f"{v['accuracy']:.1%}",
            f"{v['seconds']:.0f}",
        )
        for name, v in variants.items()
    ],
)

# %% [markdown]
# The counts are exact. A frozen encoder leaves only the head's $W$ and $b$
# of $\hat p = \mathrm{softmax}(W\bar h + b)$ to train, $2p + 2$ weights for
# width $p$ and two classes; the classifier as a whole is the fill-in model
# without its masked-token head (a $p \times p$ dense layer with its bias and
# a layer norm's $2p$; the output layer is the tied token table) plus that
# new head.

# %%
width = sizes["model_dim"]  # p
mlm_head = width * width + width + 2 * width  # dense kernel and bias, norm
frozen_head = variants["pretrained encoder, frozen"]["trainable"]
print(
    f"p = {width}: new head {frozen_head:,} = 2p + 2; fill-in model "
    f"{masked_lm.count_params():,} - its head {mlm_head:,} + {frozen_head:,} "
    f"= classifier {total:,}"
)
assert frozen_head == variants["random encoder, frozen (control)"]["trainable"]
assert frozen_head == 2 * width + 2
assert variants["pretrained encoder, fine-tuned"]["trainable"] == total
assert total == masked_lm.count_params() - mlm_head + frozen_head
accuracy = {name: v["accuracy"] for name, v in variants.items()}
if not QUICK:  # the sentences below read these numbers
    frozen = ["pretrained encoder, frozen", "random encoder, frozen (control)"]
    trained = ["pretrained encoder, fine-tuned", "from scratch"]
    assert len(labelled) == 1000 and frozen_head < 1000 and 8e5 < total < 1e6
    assert max(accuracy[name] for name in frozen) < 0.65
    best_frozen = max(accuracy[name] for name in frozen)
    assert min(accuracy[name] for name in trained) > best_frozen
    assert abs(accuracy[trained[0]] - accuracy[trained[1]]) < 0.05
    assert abs(accuracy[frozen[0]] - accuracy[frozen[1]]) < 0.15

# %% [markdown]
# In the full run freezing keeps its promise on cost, a few hundred
# trainable weights instead of almost a million, but not on accuracy: both
# frozen heads stay below 65%, not far from the 50% of a coin, and the
# pretrained encoder's head ends within 15 points of the control's, the
# head on a random encoder. Training every weight on the same 1,000
# snippets does better than either frozen head, and starting it from the
# pretrained weights ends within 5 points of starting from random ones.
# This fits section 2, where the fill-in model's first guesses were mostly
# the frequent tokens: what its encoder learned in a few CPU minutes, frozen,
# leaves a sentiment head below the classifiers that train every weight,
# and the table shows how much it adds to a random encoder's. With far
# more pretraining, frozen features do work: Devlin et al. (2019, Sec. 5.3)
# report that on named-entity recognition (CoNLL-2003), the top four layers
# of a frozen BERT-base, concatenated, come within 0.3 F1 of fine-tuning the
# whole model. A decoder
# is reused the same way: freeze the blocks of a trained language model
# and train a new head on their outputs, or fine-tune everything on the
# new text.

# %% [markdown]
# ## 4 · Semantic search with sentence embeddings
#
# Averaging the encoder's output vectors over the real tokens gives one
# vector per sentence, a *sentence embedding*; normalised to unit length,
# the cosine similarity of two sentences is the dot product of their
# vectors, $\cos(u, v) = u^\top v$. Search ranks a collection by similarity
# to a query. `MaskedLanguageModel.embed_sentences` returns these vectors.
# The vectors of a briefly trained encoder share one large common
# direction, so any two sentences look alike (the mean raw cosine of two
# different snippets is printed below); subtracting the collection's mean
# vector before comparing, a standard remedy, removes it (the mean cosine
# after centring is printed too).

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
centred_cosines = collection_centred @ collection_centred.T
centred_mean = centred_cosines[~np.eye(len(raw), dtype=bool)].mean()
print(f"centred embeddings: mean cosine of two different snippets {centred_mean:.2f}")
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
    pooled(pad(review_rows, sentiment.max_length))
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
if not QUICK:  # the sentences around this table read these numbers
    assert off_diagonal.mean() > 0.5 and abs(centred_mean) < 0.05
    chance = agreement["chance, p² + (1 − p)²"]
    assert abs(agreement["masked language model (self-supervised)"] - chance) < 0.05
    assert abs(agreement["sentiment classifier's pooled vectors"] - 0.7) < 0.08

# %%
history = sentiment.history
epochs = np.arange(1, len(history["accuracy"]) + 1)
kept = int(np.argmax(history["val_accuracy"])) + 1
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
left.plot(epochs, history["accuracy"], "-o", label="training")
left.plot(epochs, history["val_accuracy"], "-s", label="validation")
left.plot(
    [kept], [sentiment.test_accuracy], "k*", markersize=12, label="test (kept epoch)"
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
# random snippet would (within a few points of 50%). The classifier's
# pooled vectors, trained on the labels, agree in about 70% of cases.
# Sentence embeddings made for search are trained on far more text, often
# with a contrastive objective on top (for example SimCSE, Gao, Yao and
# Chen, 2021).
#
# ## 5 · Generation: a decoder-only language model
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
poet = train_language_model(
    subset,
    os.path.join(RUNS, "language_model"),
    seed=SEED,
    sequence_length=LM_SEQUENCE,
    verbose=2,
    **LANGUAGE_MODEL,
)
language_model, lm_tokenizer = poet.model, poet.tokenizer
vocabulary_size = lm_tokenizer.vocabulary_size()
print(
    f"{len(subset.train):,} training lines, {len(poet.history['loss'])} epochs "
    f"in {(time.perf_counter() - started) / 60:.1f} minutes; "
    f"perplexity per token: validation "
    f"{poet.validation_perplexity:.1f}, test {poet.test_perplexity:.1f} "
    f"(a uniform guess over the {vocabulary_size:,} tokens: {vocabulary_size:,})"
)
assert poet.test_perplexity < vocabulary_size

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
continuations = {name: continue_text(prompt, **opts) for name, opts in settings.items()}
show_table(["decoding", f"continuation of “{prompt}”"], list(continuations.items()))
greedy_lines = continuations["greedy"].split(" / ")
loop = max(set(greedy_lines), key=greedy_lines.count)
print(f"greedy repeats “{loop}” {greedy_lines.count(loop)} times")
if not QUICK:  # the sentences below read these numbers
    assert greedy_lines.count(loop) >= 3
    for name in list(settings)[1:]:  # no sampled line comes back three times
        sampled = continuations[name].split(" / ")
        assert max(sampled.count(line) for line in sampled) < 3
    assert 80 < poet.test_perplexity < 125 and vocabulary_size == 3056

# %% [markdown]
# Greedy decoding, always taking the most likely token, soon falls into a
# loop (in the full run it repeats one line at least three times, printed
# above), a well-known failure of maximising probability step by step
# (Holtzman et al., 2020, *The Curious Case of Neural Text Degeneration*).
# The three samples avoid it: none repeats a line three times. The test
# perplexity, about 100 per token against 3,056
# for a uniform guess, says the model has learned much about the next
# token, but far from enough to write sense.

# %% [markdown]
# **What to take away.** The same blocks serve both families: without a
# causal mask they read a whole sentence (classification, fill-in,
# embeddings), with one they write (generation). After a few CPU minutes
# per model the classifier beats the majority baseline by more than 20
# points; the fill-in model beats a context-free guess, mostly by placing
# frequent tokens (more than 80% of its first guesses) and rarely the other
# words; its encoder, under a sentiment head, ends within 5 points of
# training from scratch when fine-tuned and below it when frozen, and its
# embeddings do not yet separate sentiment; and the Shakespeare samples
# above imitate the look of verse without its sense. Each of these gets
# better with more data and more compute, which is the trade the lecture
# notes describe.
