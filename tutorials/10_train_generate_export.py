# %% [markdown]
# # 10 · Train, decode and serve the German→English translator
#
# The whole life of `zoo.build_translator` on the `trans-de-en` sentences:
# training with `model.fit`, where teacher forcing lets one forward pass
# compute every target position at once (Sec. 7.5); decoding with Eq. (7.34)
# by greedy search, beam search and sampling (temperature, top-k, top-p),
# each scored with BLEU on the same test sentences; and serving, by
# exporting a SavedModel whose `serving_default` signature maps German
# strings to English strings and checking that, reloaded, it returns
# exactly the in-process greedy translations. Last, a copy of the trained
# model is fine-tuned on new text with the encoder, or the encoder and the
# decoder, frozen (Sec. 7.4). The quick mode trains the `tiny` preset on a
# subset for three epochs at most (a half-minute budget may stop it
# sooner), so its translations are poor; the full mode trains the `small`
# preset for ten epochs. How long that takes depends on the machine: the
# training cell prints the minutes, and a 20-minute budget stops a much
# slower machine early.

# %%
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # keep C++ logs out of outputs

import keras
import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf
from IPython.display import Markdown, display

import zoo
from keras_seq import export, text
from keras_seq.callbacks import TimeBudget
from keras_seq.data import load_trans_de_en
from zoo.recipes import translator as recipe

# Quiet TensorFlow's notes on retracing: each decoding setting compiles its
# own loop, on purpose.
tf.get_logger().setLevel("ERROR")

QUICK = os.environ.get("KERAS_SEQ_QUICK", "0") == "1"
SEED = 0
keras.utils.set_random_seed(SEED)
IMAGES = os.path.join(os.pardir, "docs", "images")

if QUICK:
    PRESET, TRAIN_PAIRS, VOCABULARY, MAX_LENGTH = "tiny", 2000, 1000, 48
    EPOCHS, MINUTES, WARMUP, LR_SCALE = 2, 0.5, 100, 1.0
    TEST_PAIRS = 80
else:
    # Fixed epochs, so that the numbers do not depend on the machine's load;
    # the time budget only guards against a much slower machine.
    PRESET, TRAIN_PAIRS, VOCABULARY, MAX_LENGTH = "small", None, 8000, 64
    EPOCHS, MINUTES, WARMUP, LR_SCALE = 10, 20.0, 300, 0.7
    TEST_PAIRS = None  # the whole test split


def show_table(headers, rows):
    """Render rows as a Markdown table in the notebook."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    display(Markdown("\n".join(lines)))


# %% [markdown]
# ## Data and vocabularies
#
# `load_trans_de_en` reads the Debian `trans-de-en` dictionary's example
# sentences and splits them deterministically (pair index modulo 20: 0 test,
# 1 validation, the rest training). WordPiece vocabularies are learned on
# the training side only.

# %%
corpus = load_trans_de_en()
train_pairs = corpus.train[:TRAIN_PAIRS]
test_pairs = corpus.test[:TEST_PAIRS]
print(
    f"{len(corpus.train):,} / {len(corpus.validation):,} / {len(corpus.test):,} "
    f"pairs; training on {len(train_pairs):,}, testing on {len(test_pairs):,}"
)
source_vocabulary, target_vocabulary = recipe.build_vocabularies(
    train_pairs, VOCABULARY, lowercase=True
)
source_tokenizer = text.make_tokenizer(source_vocabulary, lowercase=True)
target_tokenizer = text.make_tokenizer(target_vocabulary, lowercase=True)
# Tokenizers, length limit and buckets as one object, which decoding and the
# export below share.
preprocessor = text.TranslationPreprocessor(
    source_tokenizer, target_tokenizer, max_length=MAX_LENGTH
)
sizes = f"{len(source_vocabulary):,} German, {len(target_vocabulary):,} English"
print(f"vocabularies: {sizes}")
show_table(["German", "English"], corpus.test[5:9])

# %% [markdown]
# ## Teacher forcing: all target positions in one pass
#
# At training time the decoder reads the *reference* prefix instead of its
# own outputs, so the predictions of Eq. (7.34) for every position can be
# computed together (Sec. 7.5):
#
# $$
# \hat y^{(2)} = f_{\text{decoder}}\big(z^*, (\tilde y^{(1)})\big),\quad
# \hat y^{(3)} = f_{\text{decoder}}\big(z^*, (\tilde y^{(1)}, \tilde y^{(2)})\big),
# \quad \dots,\quad
# \hat y^{(T)} = f_{\text{decoder}}\big(z^*, (\tilde y^{(1)}, \dots,
# \tilde y^{(T-1)})\big).
# $$
#
# The pipeline packs each target as `[START] tokens [END]`; the decoder
# input is that sequence without its last token and the labels are the
# same sequence without its first, that is, the input shifted right by one.

# %%
short = [(s, t) for s, t in test_pairs if len(s.split()) + len(t.split()) <= 12]
examples = text.make_translation_dataset(
    short[:4],
    source_tokenizer,
    target_tokenizer,
    MAX_LENGTH,
    batch_size=4,
    bucket_boundaries=[16],  # one bucket: a batch of four, padded to 16
)
features, labels = next(iter(examples))
decoder_input = features["decoder_token_ids"].numpy()  # (B, T)
labels = labels.numpy()  # (B, T)
real = labels != 0
# Shifted right: the label at t is the decoder input at t + 1 (the last
# label, [END], is never an input).
follows = decoder_input[:, 1:] != 0
np.testing.assert_array_equal(decoder_input[:, 1:][follows], labels[:, :-1][follows])
length = int(real[0].sum())
show_table(
    ["position t"] + [str(t) for t in range(length)],
    [
        ["decoder input"] + [target_vocabulary[i] for i in decoder_input[0, :length]],
        ["label"] + [target_vocabulary[i] for i in labels[0, :length]],
    ],
)

# %% [markdown]
# The decoder's self attention is causal (Eq. 7.27), so the logits at
# position $t$ of one full pass equal those of a pass over the prefix
# $\tilde y^{(1)}, \dots, \tilde y^{(t)}$ alone. We check this on the freshly
# built model (the property holds for any weights) and time one pass against
# the $T$ prefix passes that decoding without teacher forcing would need.

# %%
model = zoo.build_translator(
    PRESET,
    source_vocabulary_size=len(source_vocabulary),
    target_vocabulary_size=len(target_vocabulary),
    max_length=MAX_LENGTH,
)
source_ids = features["encoder_token_ids"]
target_ids = features["decoder_token_ids"]
T = target_ids.shape[1]

model({"encoder_token_ids": source_ids, "decoder_token_ids": target_ids})  # warm-up
start = time.perf_counter()
full = keras.ops.convert_to_numpy(
    model({"encoder_token_ids": source_ids, "decoder_token_ids": target_ids})
)  # (B, T, V)
one_pass = time.perf_counter() - start
start = time.perf_counter()
for t in range(T):
    prefix = model(
        {"encoder_token_ids": source_ids, "decoder_token_ids": target_ids[:, : t + 1]}
    )
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(prefix)[:, t], full[:, t], atol=1e-4
    )
prefix_passes = time.perf_counter() - start
print(f"logits {full.shape}: every position equals its prefix-only pass (atol 1e-4)")
print(
    f"one teacher-forced pass {1e3 * one_pass:.0f} ms; "
    f"{T} prefix passes {1e3 * prefix_passes:.0f} ms"
)

# %% [markdown]
# ## Training with `model.fit`
#
# The recipe of `zoo.recipes.translator`: padding-masked cross-entropy
# with label smoothing 0.1, Adam(0.9, 0.98, 1e-9) on the inverse-square-root
# warm-up schedule, and length-bucketed batches of about 2,048 tokens. A
# `TimeBudget` callback would stop training early on a machine far slower
# than expected.

# %%
recipe.compile_translator(model, warmup_steps=WARMUP, learning_rate_scale=LR_SCALE)
train_data = text.make_translation_dataset(
    train_pairs,
    source_tokenizer,
    target_tokenizer,
    MAX_LENGTH,
    batch_tokens=2048,
    shuffle=True,
    seed=SEED,
    training=True,
)
validation_data = text.make_translation_dataset(
    corpus.validation, source_tokenizer, target_tokenizer, MAX_LENGTH
)
budget = TimeBudget(MINUTES)
history = model.fit(
    train_data,
    validation_data=validation_data,
    epochs=EPOCHS,
    callbacks=[budget],
    verbose=2,
    shuffle=False,  # the dataset shuffles itself
).history
print(
    f"{model.count_params():,} parameters; {len(history['loss'])} epochs in "
    f"{budget.elapsed_minutes():.1f} minutes"
)
if not QUICK:
    assert len(history["loss"]) == EPOCHS == 10  # not cut short by the budget

# %%
epochs = np.arange(1, len(history["loss"]) + 1)
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
left.plot(epochs, history["loss"], "-o", label="training")
left.plot(epochs, history["val_loss"], "-s", label="validation")
left.set_xlabel("epoch")
left.set_ylabel("smoothed cross-entropy per token")
left.set_title("Loss")
left.legend()
right.plot(epochs, history["masked_accuracy"], "-o", label="training")
right.plot(epochs, history["val_masked_accuracy"], "-s", label="validation")
right.set_xlabel("epoch")
right.set_ylabel("next-token accuracy (teacher forced)")
right.set_title("Accuracy")
right.legend()
for ax in (left, right):
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
fig.suptitle(f"{PRESET} translator, {len(train_pairs):,} training pairs")
fig.tight_layout()
if not QUICK:
    fig.savefig(os.path.join(IMAGES, "tutorial_10_learning_curves.png"), dpi=110)
plt.show()

if not QUICK:  # the sentences below read these numbers
    loss, val_loss = np.array(history["loss"]), np.array(history["val_loss"])
    assert np.all(np.diff(loss) < 0) and loss[7] - loss[-1] > 0.15
    assert val_loss[7] - val_loss[-1] < 0.5 * (loss[7] - loss[-1])
    assert len(train_pairs) == 16_162
    assert round(model.count_params() / 1e6, 1) == 1.8

# %% [markdown]
# In the full run the training loss falls at every epoch, by more than
# 0.15 over the last two, while the validation loss falls by less than
# half as much over the same two epochs (both asserted): 16,162 sentence
# pairs are few for 1.8 million parameters, and the model starts to fit
# the training pairs more than it learns what carries over.
#
# ## Decoding: greedy, beam search and sampling
#
# At inference there is no reference: Eq. (7.34) runs auto-regressively,
#
# $$\hat y^{(t)} = f_{\text{decoder}}\big(z^*, (\tilde y^{(1)}, \dots,
# \tilde y^{(t-1)})\big),$$
#
# feeding each chosen token back until `[END]`. `model.generate` runs this
# loop compiled, over a key/value cache (the encoder once, one decoder step
# per token). What differs is how a token is chosen from $\hat y^{(t)}$:
#
# * **greedy**: the argmax at every step;
# * **beam search**: keep the $k$ best prefixes by total log-probability,
#   ranked at the end with the length penalty $((5 + n)/6)^{\alpha}$,
#   $\alpha = 0.6$;
# * **sampling**: draw from $\mathrm{softmax}(\text{logits}/\tau)$ with
#   temperature $\tau$, optionally restricted to the $k$ most likely tokens
#   (top-k) or to the smallest set whose probability reaches $p$ (top-p).
#
# We decode the same test sentences with each (one batch, so each setting
# compiles once) and score corpus BLEU (sacrebleu, lowercased).

# %%
sources = [s for s, _ in test_pairs]
references = [r for _, r in test_pairs]
strategies = {
    "greedy": {},
    "beam search, 4 beams": {"strategy": "beam", "beam_width": 4},
    "sampling, τ = 1.0": {"strategy": "sample", "seed": SEED},
    "sampling, τ = 0.7": {"strategy": "sample", "temperature": 0.7, "seed": SEED},
    "top-k, k = 10, τ = 0.7": {
        "strategy": "sample",
        "top_k": 10,
        "temperature": 0.7,
        "seed": SEED,
    },
    "top-p, p = 0.9, τ = 0.7": {
        "strategy": "sample",
        "top_p": 0.9,
        "temperature": 0.7,
        "seed": SEED,
    },
}
results = {}
for name, options in strategies.items():
    start = time.perf_counter()
    hypotheses = recipe.translate_texts(
        model, preprocessor, sources, batch_size=len(sources), **options
    )
    seconds = time.perf_counter() - start
    results[name] = {
        "hypotheses": hypotheses,
        "bleu": recipe.corpus_bleu(hypotheses, references, lowercase=True),
        "seconds": seconds,
    }
show_table(
    ["strategy", f"test BLEU ({len(sources)} sentences)", "seconds (incl. compiling)"],
    [(n, f"{r['bleu']:.2f}", f"{r['seconds']:.1f}") for n, r in results.items()],
)

# %%
fig, ax = plt.subplots(figsize=(7, 3.6))
names = list(results)
ax.barh(names[::-1], [results[n]["bleu"] for n in names[::-1]], color="tab:blue")
for i, name in enumerate(names[::-1]):
    ax.text(results[name]["bleu"], i, f" {results[name]['bleu']:.2f}", va="center")
ax.set_xlabel("corpus BLEU, lowercased (sacrebleu)")
ax.set_title(f"Decoding strategies, {PRESET} translator, {len(sources)} test pairs")
ax.set_xlim(0, 1.2 * max(r["bleu"] for r in results.values()) + 0.1)
fig.tight_layout()
if not QUICK:
    fig.savefig(os.path.join(IMAGES, "tutorial_10_decoding_bleu.png"), dpi=110)
plt.show()

if not QUICK:  # the comparison after the next table reads these numbers
    bleu = {name: result["bleu"] for name, result in results.items()}
    sampled = [name for name in bleu if name not in ("greedy", "beam search, 4 beams")]
    assert max(bleu, key=bleu.get) == "beam search, 4 beams"
    assert results["greedy"]["seconds"] < results["beam search, 4 beams"]["seconds"]
    assert min(bleu, key=bleu.get) == "sampling, τ = 1.0"
    assert all(bleu[name] < bleu["beam search, 4 beams"] for name in sampled)
    assert max(bleu.values()) < 10  # "rough", in the closing paragraph

# %% [markdown]
# One sentence through every strategy, and the four hypotheses that beam
# search keeps, with their length-normalised log-probabilities.

# %%
pick = min(range(len(sources)), key=lambda i: abs(len(sources[i].split()) - 7))
print("German:   ", sources[pick])
print("reference:", references[pick])
show_table(
    ["strategy", "translation"],
    [(n, r["hypotheses"][pick]) for n, r in results.items()],
)

ids = preprocessor.generate_preprocess(tf.constant([sources[pick]]))  # (1, S)
n_best, scores = model.beam_search(ids, MAX_LENGTH - 1, beam_width=4, num_return=4)
n_best = keras.ops.convert_to_numpy(n_best)[0]  # (4, L)
scores = keras.ops.convert_to_numpy(scores)[0]  # (4,)
assert np.all(np.diff(scores) <= 1e-6)  # best first
show_table(
    ["rank", "beam hypothesis", "score"],
    [
        (k + 1, text.detokenize(target_tokenizer, n_best[k]), f"{scores[k]:.3f}")
        for k in range(len(scores))
    ],
)

# %% [markdown]
# In the full run beam search, which looks further than one token, scores
# best, and greedy takes less time than beam search. Sampling trades
# accuracy for variety: at $\tau = 1$, drawing from the whole
# distribution, it scores lowest, and lowering the temperature or cutting
# the tail (top-k, top-p) brings it back towards greedy, below beam
# search. For translation, where one faithful output is wanted, the
# deterministic strategies are the right choice; sampling suits open-ended
# generation (notebook 11).
#
# ## Serving: a SavedModel with a string signature
#
# `keras_seq.export.export_translator` writes a SavedModel in the TF Serving
# layout (`<dir>/<version>/`). Its `serving_default` signature takes a batch
# of `tf.string` sentences and returns `tf.string` translations:
# tokenization, the cached greedy loop and detokenization are all inside
# the graph. We reload it with `tf.saved_model.load` and check that it
# returns exactly the in-process greedy translations.

# %%
export_root = tempfile.mkdtemp()
start = time.perf_counter()
path = export.export_translator(model, preprocessor, export_root)
print(
    f"exported to {path} in {time.perf_counter() - start:.0f} s:",
    sorted(os.listdir(path)),
)

served = tf.saved_model.load(path)
serving_default = served.signatures["serving_default"]
print("inputs: ", serving_default.structured_input_signature[1])
print("outputs:", serving_default.structured_outputs)

batch = sources[:16]
start = time.perf_counter()
outputs = serving_default(sentences=tf.constant(batch))["translations"].numpy()
served_seconds = time.perf_counter() - start
served_translations = [t.decode("utf-8") for t in outputs]
in_process = recipe.translate_texts(model, preprocessor, batch)
same = sum(a == b for a, b in zip(served_translations, in_process))
print(f"{same} of {len(batch)} served translations identical to in-process greedy")
print(f"first served call (includes loading the graph): {served_seconds:.1f} s")
assert served_translations == in_process
show_table(
    ["German", "served translation"], list(zip(batch[:4], served_translations[:4]))
)

# %% [markdown]
# The artifact does not need this project: a fresh Python process that
# imports only TensorFlow and TensorFlow Text (for the WordPiece ops) loads
# it and gets the same strings.

# %%
client = """
import json, sys
import tensorflow as tf, tensorflow_text  # noqa: F401, registers WordPiece ops
served = tf.saved_model.load(sys.argv[1])
sentences = tf.constant(json.load(sys.stdin))
out = served.signatures["serving_default"](sentences=sentences)["translations"]
print(json.dumps({
    "translations": [t.decode("utf-8") for t in out.numpy()],
    "imported_keras_seq": "keras_seq" in sys.modules,
}))
"""
completed = subprocess.run(
    [sys.executable, "-c", client, path],
    input=json.dumps(batch),
    capture_output=True,
    text=True,
    check=True,
    env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
)
reply = json.loads(completed.stdout.strip().splitlines()[-1])
assert not reply["imported_keras_seq"]
assert reply["translations"] == in_process
print(f"fresh process, keras_seq not imported: {len(batch)} translations identical")

# %% [markdown]
# ## Fine-tuning a trained translator: what to freeze (Sec. 7.4)
#
# Once an encoder-decoder is trained, Sec. 7.4 notes three ways to adapt
# it to new data: freeze the encoder and train the decoder, freeze the
# decoder and train the encoder, or freeze both and train only the output
# layer on top of the decoder. We compare the first and the last against
# training every weight, on a new kind of text: the dictionary's word and
# phrase entries (`load_trans_de_en(include_phrases=True)`, every 40th,
# none overlapping a validation or test sentence), where the translator
# saw only whole sentences. Each variant starts from a copy of the trained
# model's weights, sets `trainable = False` on the frozen layers before
# compiling, and trains for the same steps with the same recipe; the
# copies leave the model above, and the exported SavedModel, untouched.

# %%
TUNE_PAIRS, TUNE_EPOCHS, SCORED_SENTENCES = (300, 2, 100) if QUICK else (4000, 5, None)
# One padded length, so that each copy traces one training graph and one
# scoring graph: tracing, not arithmetic, is most of the time at this size.
ONE_BUCKET = [MAX_LENGTH]
phrase_corpus = load_trans_de_en(include_phrases=True)
phrases = phrase_corpus.train[-phrase_corpus.phrases_added :][::40]
tune_pairs, held_out_phrases = phrases[:TUNE_PAIRS], phrases[-500:]
print(
    f"{phrase_corpus.phrases_added:,} phrase pairs, {len(phrases):,} kept; "
    f"fine-tuning on {len(tune_pairs):,}, scoring on {len(held_out_phrases)} others"
)
show_table(["German", "English"], tune_pairs[:4])


def tune_batches():
    """The fine-tuning pairs; a fresh dataset per fit, so every copy sees the
    same batches (the pipeline counts its passes to reshuffle)."""
    return text.make_translation_dataset(
        tune_pairs,
        source_tokenizer,
        target_tokenizer,
        MAX_LENGTH,
        batch_size=64,
        shuffle=True,
        seed=SEED,
        training=True,
        bucket_boundaries=ONE_BUCKET,
    )


phrase_data = text.make_translation_dataset(
    held_out_phrases,
    source_tokenizer,
    target_tokenizer,
    MAX_LENGTH,
    bucket_boundaries=ONE_BUCKET,
)
sentence_data = text.make_translation_dataset(
    corpus.validation[:SCORED_SENTENCES],
    source_tokenizer,
    target_tokenizer,
    MAX_LENGTH,
    bucket_boundaries=ONE_BUCKET,
)


def parts(translator):
    """The translator's layers that hold weights, by the part of Fig. 7.16."""
    return {
        "encoder": [
            translator.source_embedding,
            *translator.encoder_blocks,
            translator.encoder_norm,
        ],
        "decoder": [
            translator.target_embedding,
            *translator.decoder_blocks,
            translator.decoder_norm,
        ],
        "output layer": [translator.output_dense],
    }


def count(layers):
    return sum(layer.count_params() for layer in layers)


sizes = {name: count(layers) for name, layers in parts(model).items()}
assert sum(sizes.values()) == model.count_params()  # the parts hold every weight
print(", ".join(f"{name} {size:,}" for name, size in sizes.items()), "weights")


def score(translator):
    """Smoothed cross-entropy on held-out phrases and on validation sentences."""
    return [
        translator.evaluate(dataset, verbose=0, return_dict=True)["loss"]
        for dataset in (phrase_data, sentence_data)
    ]


def weights_of(layers, translator):
    """The weights of `layers`, read by layer name from `translator`."""
    return [
        keras.ops.convert_to_numpy(w)
        for layer in layers
        for w in translator.get_layer(layer.name).weights
    ]


def fine_tune(frozen):
    """A copy of the trained model, `frozen` parts fixed, trained on phrases."""
    tuned = zoo.build_translator(
        PRESET,
        source_vocabulary_size=len(source_vocabulary),
        target_vocabulary_size=len(target_vocabulary),
        max_length=MAX_LENGTH,
    )
    tuned.set_weights(model.get_weights())
    for name, layers in parts(tuned).items():
        for layer in layers:
            layer.trainable = name not in frozen
    # No XLA: each copy would compile its graphs anew, which on a few
    # hundred steps costs more time than it saves.
    recipe.compile_translator(
        tuned, warmup_steps=WARMUP, learning_rate_scale=LR_SCALE, jit_compile=False
    )
    trainable = sum(int(np.prod(w.shape)) for w in tuned.trainable_weights)
    keras.utils.set_random_seed(SEED)
    tuned.fit(tune_batches(), epochs=TUNE_EPOCHS, verbose=0, shuffle=False)
    for name, layers in parts(tuned).items():
        moved = any(
            not np.array_equal(after, before)
            for after, before in zip(
                weights_of(layers, tuned), weights_of(layers, model)
            )
        )
        assert moved == (name not in frozen), (frozen, name)  # frozen: unchanged
    return trainable, score(tuned)


tuning = {"not fine-tuned": (0, score(model))}
REGIMES = {
    "all weights": set(),
    "encoder frozen": {"encoder"},
    "encoder and decoder frozen": {"encoder", "decoder"},
}
for regime, frozen in REGIMES.items():
    tuning[regime] = fine_tune(frozen)
expected = {
    "all weights": model.count_params(),
    "encoder frozen": sizes["decoder"] + sizes["output layer"],
    "encoder and decoder frozen": sizes["output layer"],
}
for regime, count_expected in expected.items():
    assert tuning[regime][0] == count_expected, regime
assert sizes["output layer"] == (model.model_dim + 1) * len(target_vocabulary)
show_table(
    ["trained", "trainable weights", "loss, held-out phrases", "loss, sentences"],
    [(n, f"{t:,}", f"{p:.3f}", f"{v:.3f}") for n, (t, (p, v)) in tuning.items()],
)
phrase_loss = {name: losses[0] for name, (_, losses) in tuning.items()}
sentence_loss = {name: losses[1] for name, (_, losses) in tuning.items()}
assert all(phrase_loss[r] < phrase_loss["not fine-tuned"] for r in REGIMES)
fits_best = min(REGIMES, key=phrase_loss.get)
print(
    f"lowest loss on the held-out phrases: {fits_best} ({phrase_loss[fits_best]:.3f})"
)
kept_best = min(REGIMES, key=sentence_loss.get)
print(
    f"lowest loss on the sentences after fine-tuning: {kept_best} "
    f"({sentence_loss[kept_best]:.3f}; {sentence_loss['not fine-tuned']:.3f} before)"
)

# %% [markdown]
# The trainable counts are the parts of Fig. 7.16: every weight; the
# decoder and the output layer; the output layer alone, $(p + 1) \times
# d_V$ for model width $p$ and target vocabulary $d_V$ (asserted, as is
# that a frozen part ends fine-tuning unchanged). Every copy fits the
# phrases better than the model it started from (asserted); the cell's
# last two lines name the copy that fits them best and the one that kept
# the sentences, the task the model was trained for, best. A frozen part
# cannot forget, and training fewer weights leaves less of the old task to
# change; how much each choice gains and costs is in the table.
#
# **What to take away.** Teacher forcing makes training a single parallel
# pass per batch, while decoding remains a loop of one step per token;
# greedy and beam search are the sensible defaults for translation; and the
# exported SavedModel carries the whole string-to-string path. At this scale
# (16,162 sentence pairs, ten epochs) the translations are rough (a test
# BLEU below 10 with every strategy); the README's `make demo` trains the
# same `small` model for 15 minutes and reports its test BLEU. Fine-tuning
# adapts a trained translator to new text, and what to freeze decides how
# many weights move and how much of the old task can change.
