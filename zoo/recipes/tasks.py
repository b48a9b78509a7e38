"""Training recipes for the encoder- and decoder-only models.

Each recipe trains a WordPiece vocabulary on the training split, builds the
model from a preset, fits it on a `tf.data` pipeline with a wall-clock
budget and resumable checkpoints, and returns the model, the tokenizer and
its figures:

- `train_classifier`: sentiment (or any labelled text), test accuracy.
- `train_language_model`: a causal Transformer, validation and test
  perplexity.
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
from keras_seq.schedules import InverseSquareRootWarmup
from zoo import build_classifier, build_language_model, build_masked_language_model
from zoo.recipes import runtime
from zoo.recipes.inputs import check_text_list


def _start(texts, output_dir, seed, vocabulary_size, verbose):
    """Seeds the run; trains and saves `vocabulary.txt`; its tokenizer."""
    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    if verbose:
        print(
            f"training the WordPiece vocabulary on {len(texts):,} texts...",
            flush=True,
        )
    vocabulary = text.train_wordpiece_vocabulary(texts, vocabulary_size)
    text.save_vocabulary(vocabulary, os.path.join(output_dir, "vocabulary.txt"))
    return vocabulary, text.make_tokenizer(vocabulary)


def _fit(model, datasets, epochs, output_dir, minutes, shuffle_epoch, **options):
    """`model.fit` on `(train, validation)` datasets; Keras' history dict.

    `options` are `verbose`, `strategy` and, optionally, the checkpoints'
    `monitor`.
    """
    strategy = options["strategy"]
    train_data = runtime.for_workers(datasets[0], strategy)
    validation_data = runtime.for_workers(datasets[1], strategy, shard=False)
    runtime.build_for_strategy(model, strategy, train_data)
    callbacks = [
        TimeBudget(minutes),
        shuffle_epoch,
        *checkpoint_callbacks(output_dir, options.get("monitor", "val_loss")),
    ]
    # The datasets shuffle themselves; `shuffle=False` says so to Keras.
    return model.fit(
        train_data,
        validation_data=validation_data,
        epochs=epochs,
        callbacks=callbacks,
        verbose=options["verbose"],
        shuffle=False,
    ).history


def check_class_labels(corpus):
    """The number of classes K of a labelled corpus, whose labels are 0..K-1.

    The classifier has one logit per id up to the largest label, so labels
    {0, 5} would make six classes, four of which never occur; such labels
    are refused rather than renumbered, since the ids name the classes.

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            `(text, label)` pairs.

    Returns:
        K, an int.

    Raises:
        ValueError: when a label is not an integer, when the training labels
            are not exactly 0..K-1 with K >= 2, or when the validation or
            test labels hold an id the training labels lack.
    """
    found = {}
    for split in ("train", "validation", "test"):
        labels = set()
        for _, label in getattr(corpus, split):
            if isinstance(label, (bool, np.bool_)) or not isinstance(
                label, (int, np.integer)
            ):
                raise ValueError(
                    f"The labels of `corpus.{split}` must be integer class ids "
                    f"0..K-1; received {label!r} ({type(label).__name__})."
                )
            labels.add(int(label))
        found[split] = labels
    num_classes = len(found["train"])
    if num_classes < 2:
        raise ValueError(
            f"The labels of `corpus.train` must hold at least two classes, "
            f"0 and 1; received {_show(found['train'])}."
        )
    if found["train"] != set(range(num_classes)):
        raise ValueError(
            f"The labels of `corpus.train` must be 0..K-1 with every class "
            f"present (here 0..{num_classes - 1} for its {num_classes} distinct "
            f"labels); received {_show(found['train'])}."
        )
    for split in ("validation", "test"):
        if not found[split] <= found["train"]:
            raise ValueError(
                f"The labels of `corpus.{split}` must lie in 0..{num_classes - 1}, "
                f"the classes of `corpus.train`; received {_show(found[split])}."
            )
    return num_classes


def _show(labels, limit=10):
    """A sorted set of labels, cut after `limit` of them."""
    shown = sorted(labels)
    text = ", ".join(str(label) for label in shown[:limit])
    return "{" + text + (", ...}" if len(shown) > limit else "}")


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
    """Trains `zoo.build_classifier` on `(text, label)` splits.

    The weights of the epoch with the best validation accuracy are the
    ones returned: small sentiment sets overfit within a few epochs.

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            `(text, label)` pairs, such as a `SentimentCorpus`.
        output_dir: str, for the vocabulary and checkpoints.
        preset: str, a name in `zoo.CLASSIFIER_PRESETS`.
        epochs: int, the most epochs to train.
        minutes: float or None, a wall-clock budget.
        seed: int, seeds the weights and the shuffling.
        vocabulary_size: int, of the WordPiece vocabulary.
        batch_size: int.
        learning_rate: float, of AdamW.
        max_length: int, batches are padded (texts truncated) to
            `min(max_length, the model's max_length)` tokens; the
            movie-review snippets fit in 64.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **overrides: builder arguments that override the preset.

    Returns:
        A dict with `model`, `tokenizer`, `history`, `test_accuracy` and
        `max_length`.

    Raises:
        ValueError: from `check_class_labels`, before anything is written.
    """
    num_classes = check_class_labels(corpus)
    texts = [t for t, _ in corpus.train]
    vocabulary, tokenizer = _start(texts, output_dir, seed, vocabulary_size, verbose)
    with runtime.scope(strategy):
        model = build_classifier(
            preset, vocabulary_size=len(vocabulary), num_classes=num_classes,
            **overrides,
        )  # fmt: skip
    max_length = min(max_length, model.get_config()["max_length"])
    shuffle_epoch = ShuffleEpoch()

    def dataset(pairs, shuffle=False):
        return text.make_classification_dataset(
            [t for t, _ in pairs], [label for _, label in pairs], tokenizer,
            max_length, batch_size, shuffle=shuffle, seed=seed,
            epoch=shuffle_epoch.epoch,
        )  # fmt: skip

    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    datasets = (dataset(corpus.train, shuffle=True), dataset(corpus.validation))
    history = _fit(
        model, datasets, epochs, output_dir, minutes, shuffle_epoch,
        verbose=verbose, strategy=strategy, monitor="val_accuracy",
    )  # fmt: skip
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
    """Class probabilities of Python strings.

    Args:
        model: a model of `zoo.build_classifier`.
        tokenizer: the tokenizer of its vocabulary.
        texts: list of str.
        max_length: int, texts are truncated to this many tokens.
        batch_size: int.

    Returns:
        A float numpy array (N, C) whose rows sum to 1.

    Raises:
        TypeError: when `texts` is one str, not a list of str.
    """
    texts = check_text_list(texts)
    data = text.make_classification_dataset(
        texts, np.zeros(len(texts), "int32"), tokenizer, max_length, batch_size
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
    """Trains `zoo.build_language_model` on a `TextCorpus` (lines of text).

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            str, such as a `keras_seq.data.TextCorpus`.
        output_dir: str, for the vocabulary and checkpoints.
        preset: str, a name in `zoo.LANGUAGE_MODEL_PRESETS`.
        epochs: int, the most epochs to train.
        minutes: float or None, a wall-clock budget.
        seed: int, seeds the weights and the shuffling.
        vocabulary_size: int, of the WordPiece vocabulary.
        sequence_length: int, tokens in a training window, at most the
            model's `max_length`.
        batch_size: int.
        warmup_steps: int, of the inverse-square-root schedule.
        learning_rate_scale: float, multiplies the learning rate.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **overrides: builder arguments that override the preset.

    Returns:
        A dict with `model`, `tokenizer`, `history`, `validation_perplexity`
        and `test_perplexity` (per WordPiece token) and `sequence_length`.
    """
    vocabulary, tokenizer = _start(
        corpus.train, output_dir, seed, vocabulary_size, verbose
    )
    with runtime.scope(strategy):
        model = build_language_model(
            preset, vocabulary_size=len(vocabulary), **overrides
        )
    config = model.get_config()
    sequence_length = min(sequence_length, config["max_length"])
    shuffle_epoch = ShuffleEpoch()

    def dataset(lines, shuffle=False):
        return text.make_language_model_dataset(
            lines, tokenizer, sequence_length, batch_size, shuffle=shuffle,
            seed=seed, epoch=shuffle_epoch.epoch,
        )  # fmt: skip

    schedule = InverseSquareRootWarmup(
        config["model_dim"], warmup_steps, scale=learning_rate_scale
    )
    model.compile(
        optimizer=keras.optimizers.Adam(schedule, 0.9, 0.98, 1e-9),
        loss=MaskedSparseCategoricalCrossentropy(),
        metrics=[MaskedAccuracy()],
    )
    datasets = (dataset(corpus.train, shuffle=True), dataset(corpus.validation))
    history = _fit(
        model, datasets, epochs, output_dir, minutes, shuffle_epoch,
        verbose=verbose, strategy=strategy,
    )  # fmt: skip
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
    """Trains `zoo.build_masked_language_model` on `(train, validation)` texts.

    Args:
        corpus_texts: a pair of lists of str, training and validation.
        output_dir: str, for the vocabulary and checkpoints.
        preset: str, a name in `zoo.ENCODER_PRESETS`.
        epochs: int, the most epochs to train.
        minutes: float or None, a wall-clock budget.
        seed: int, seeds the weights, the masking and the shuffling.
        vocabulary_size: int, of the WordPiece vocabulary.
        batch_size: int.
        learning_rate: float, of AdamW.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **overrides: builder arguments that override the preset.

    Returns:
        A dict with `model`, `tokenizer`, `history`,
        `validation_masked_accuracy` and `max_length`.
    """
    train, validation = corpus_texts
    vocabulary, tokenizer = _start(train, output_dir, seed, vocabulary_size, verbose)
    with runtime.scope(strategy):
        model = build_masked_language_model(
            preset, vocabulary_size=len(vocabulary), **overrides
        )
    max_length = model.get_config()["max_length"]
    shuffle_epoch = ShuffleEpoch()

    def dataset(texts, shuffle=False):
        return text.make_masked_language_model_dataset(
            texts, tokenizer, max_length, batch_size, seed=seed, shuffle=shuffle,
            epoch=shuffle_epoch.epoch,
        )  # fmt: skip

    model.compile(
        optimizer=keras.optimizers.AdamW(learning_rate, weight_decay=0.01),
        loss=MaskedSparseCategoricalCrossentropy(),
        metrics=[MaskedAccuracy()],
    )
    datasets = (dataset(train, shuffle=True), dataset(validation))
    history = _fit(
        model, datasets, epochs, output_dir, minutes, shuffle_epoch,
        verbose=verbose, strategy=strategy,
    )  # fmt: skip
    _, accuracy = model.evaluate(dataset(validation), verbose=0)
    return {
        "model": model,
        "tokenizer": tokenizer,
        "history": history,
        "validation_masked_accuracy": float(accuracy),
        "max_length": max_length,
    }
