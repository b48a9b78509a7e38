"""Training recipes for the encoder- and decoder-only models.

Each recipe trains a WordPiece vocabulary on the training split, builds the
model from a preset, fits it on a `tf.data` pipeline with a progress bar
and a wall-clock budget, and returns the model, the tokenizer and its test
figures:

- `train_classifier`: sentiment (or any labelled text), test accuracy.
- `train_language_model`: a causal Transformer, validation and test
  perplexity, and a sampled continuation.
- `train_masked_language_model`: BERT-style fill-in, masked-token accuracy.
"""

import math
import os

import keras
import numpy as np

from keras_seq import text
from keras_seq.callbacks import ShuffleEpoch, TimeBudget, checkpoint_callbacks
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy
from zoo.recipes import runtime


def _vocabulary(texts, vocabulary_size, output_dir):
    vocabulary = text.train_wordpiece_vocabulary(texts, vocabulary_size)
    text.save_vocabulary(vocabulary, os.path.join(output_dir, "vocabulary.txt"))
    return vocabulary, text.make_tokenizer(vocabulary)


def _callbacks(output_dir, minutes, shuffle_epoch, monitor="val_loss"):
    return [
        TimeBudget(minutes),
        shuffle_epoch,
        *checkpoint_callbacks(output_dir, monitor),
    ]


def _fit(model, train_data, validation_data, epochs, callbacks, verbose, strategy):
    train_data = runtime.for_workers(train_data, strategy)
    validation_data = runtime.for_workers(validation_data, strategy, shard=False)
    runtime.build_for_strategy(model, strategy, train_data)
    # The datasets shuffle themselves; `shuffle=False` says so to Keras.
    return model.fit(
        train_data,
        validation_data=validation_data,
        epochs=epochs,
        callbacks=callbacks,
        verbose=verbose,
        shuffle=False,
    ).history


def train_classifier(
    corpus,
    output_dir,
    preset="small",
    epochs=10,
    minutes=None,
    seed=0,
    vocabulary_size=8000,
    batch_size=64,
    learning_rate=5e-4,
    max_length=64,
    verbose=1,
    strategy=None,
    **overrides,
):
    """Train `zoo.build_classifier` on `(text, label)` splits.

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            `(text, label)` pairs, such as a `SentimentCorpus`.
        max_length: int, batches are padded (texts truncated) to
            `min(max_length, the model's max_length)` tokens; the
            movie-review snippets fit in 64.

    Returns:
        A dict with `model`, `tokenizer`, `history` and `test_accuracy`.
    """
    from zoo import build_classifier

    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    vocabulary, tokenizer = _vocabulary(
        [t for t, _ in corpus.train], vocabulary_size, output_dir
    )
    num_classes = int(max(label for _, label in corpus.train)) + 1
    with runtime.scope(strategy):
        model = build_classifier(
            preset,
            vocabulary_size=len(vocabulary),
            num_classes=num_classes,
            **overrides,
        )
    max_length = min(max_length, model.get_config()["max_length"])

    shuffle_epoch = ShuffleEpoch()

    def dataset(pairs, shuffle=False):
        return text.make_classification_dataset(
            [t for t, _ in pairs],
            [label for _, label in pairs],
            tokenizer,
            max_length,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            epoch=shuffle_epoch.epoch,
        )

    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    callbacks = _callbacks(output_dir, minutes, shuffle_epoch, monitor="val_accuracy")
    history = _fit(
        model,
        dataset(corpus.train, shuffle=True),
        dataset(corpus.validation),
        epochs,
        callbacks,
        verbose,
        strategy,
    )
    # Small sentiment sets overfit within a few epochs: keep the epoch with
    # the best validation accuracy.
    model.load_weights(os.path.join(output_dir, "best.weights.h5"))
    _, accuracy = model.evaluate(dataset(corpus.test), verbose=0)
    return {
        "model": model,
        "tokenizer": tokenizer,
        "history": history,
        "test_accuracy": float(accuracy),
        "max_length": max_length,
    }


def classify_texts(model, tokenizer, texts, max_length, batch_size=64):
    """Class probabilities (N, C) for Python strings."""
    data = text.make_classification_dataset(
        list(texts), np.zeros(len(texts), "int32"), tokenizer, max_length, batch_size
    )
    logits = model.predict(data.map(lambda x, y: x), verbose=0)
    return keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))


def train_language_model(
    corpus,
    output_dir,
    preset="small",
    epochs=10,
    minutes=None,
    seed=0,
    vocabulary_size=8000,
    sequence_length=128,
    batch_size=32,
    warmup_steps=400,
    learning_rate_scale=1.0,
    verbose=1,
    strategy=None,
    **overrides,
):
    """Train `zoo.build_language_model` on a `TextCorpus` (lines of text).

    Returns:
        A dict with `model`, `tokenizer`, `history`, `validation_perplexity`
        and `test_perplexity` (per WordPiece token).
    """
    from keras_seq.schedules import InverseSquareRootWarmup
    from zoo import build_language_model

    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    vocabulary, tokenizer = _vocabulary(corpus.train, vocabulary_size, output_dir)
    with runtime.scope(strategy):
        model = build_language_model(
            preset, vocabulary_size=len(vocabulary), **overrides
        )
    sequence_length = min(sequence_length, model.get_config()["max_length"])

    shuffle_epoch = ShuffleEpoch()

    def dataset(lines, shuffle=False):
        return text.make_language_model_dataset(
            lines,
            tokenizer,
            sequence_length,
            batch_size,
            shuffle=shuffle,
            seed=seed,
            epoch=shuffle_epoch.epoch,
        )

    schedule = InverseSquareRootWarmup(
        model.get_config()["model_dim"], warmup_steps, scale=learning_rate_scale
    )
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, 0.9, 0.98, 1e-9),
        loss=MaskedSparseCategoricalCrossentropy(),
        metrics=[MaskedAccuracy()],
    )
    history = _fit(
        model,
        dataset(corpus.train, shuffle=True),
        dataset(corpus.validation),
        epochs,
        _callbacks(output_dir, minutes, shuffle_epoch),
        verbose,
        strategy,
    )
    validation_loss = model.evaluate(dataset(corpus.validation), verbose=0)[0]
    test_loss = model.evaluate(dataset(corpus.test), verbose=0)[0]
    return {
        "model": model,
        "tokenizer": tokenizer,
        "history": history,
        "validation_perplexity": math.exp(validation_loss),
        "test_perplexity": math.exp(test_loss),
        "sequence_length": sequence_length,
    }


def train_masked_language_model(
    corpus_texts,
    output_dir,
    preset="small",
    epochs=10,
    minutes=None,
    seed=0,
    vocabulary_size=8000,
    batch_size=64,
    learning_rate=5e-4,
    verbose=1,
    strategy=None,
    **overrides,
):
    """Train `zoo.build_masked_language_model` on `(train, validation)` texts.

    Args:
        corpus_texts: a pair of lists of strings, training and validation.

    Returns:
        A dict with `model`, `tokenizer`, `history` and
        `validation_masked_accuracy`.
    """
    from zoo import build_masked_language_model

    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    train, validation = corpus_texts
    vocabulary, tokenizer = _vocabulary(train, vocabulary_size, output_dir)
    with runtime.scope(strategy):
        model = build_masked_language_model(
            preset, vocabulary_size=len(vocabulary), **overrides
        )
    max_length = model.get_config()["max_length"]

    shuffle_epoch = ShuffleEpoch()

    def dataset(texts, shuffle=False):
        return text.make_masked_language_model_dataset(
            texts,
            tokenizer,
            max_length,
            batch_size,
            seed=seed,
            shuffle=shuffle,
            epoch=shuffle_epoch.epoch,
        )

    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate, weight_decay=0.01),
        loss=MaskedSparseCategoricalCrossentropy(),
        metrics=[MaskedAccuracy()],
    )
    history = _fit(
        model,
        dataset(train, shuffle=True),
        dataset(validation),
        epochs,
        _callbacks(output_dir, minutes, shuffle_epoch),
        verbose,
        strategy,
    )
    _, accuracy = model.evaluate(dataset(validation), verbose=0)
    return {
        "model": model,
        "tokenizer": tokenizer,
        "history": history,
        "validation_masked_accuracy": float(accuracy),
        "max_length": max_length,
    }
