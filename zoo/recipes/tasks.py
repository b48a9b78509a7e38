"""Training recipes for the encoder- and decoder-only models.

Each recipe trains a WordPiece vocabulary on the training split, builds the
model from a preset, makes its preprocessor (`keras_seq.text`: the one
place its text becomes ids, saved with the run), fits the model on the
preprocessor's `tf.data` pipeline with a wall-clock budget and resumable
checkpoints, and returns a typed result (the model, the preprocessor and
its figures); `run_*` is what `keras-seq train` runs, `evaluate_*` what
`keras-seq evaluate` runs:

- `train_classifier`: sentiment (or any labelled text), test accuracy.
- `train_language_model`: a causal Transformer, validation and test
  perplexity.
- `train_masked_language_model`: BERT-style fill-in, masked-token accuracy.
"""

import dataclasses
import math
import os

import keras
import numpy as np

from keras_seq import text
from keras_seq.callbacks import ShuffleEpoch, TimeBudget
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from keras_seq.metrics import MaskedAccuracy
from keras_seq.schedules import InverseSquareRootWarmup
from zoo import build_classifier, build_language_model, build_masked_language_model
from zoo import presets as zoo_presets
from zoo.recipes import run_dir, runtime, said
from zoo.recipes.inputs import UsageError, check_text_list
from zoo.recipes.settings import (
    ClassifierSettings,
    GenerateSettings,
    LanguageModelSettings,
    MaskedLanguageModelSettings,
)

# The sampler's k when none is named: `generate`'s, and the sample printed
# after training a language model.
SAMPLE_TOP_K = GenerateSettings.top_k


def _start(texts, output_dir, seed, vocabulary_size, verbose):
    """Seeds the run and trains the vocabulary (or keeps that of the run it
    resumes, whose weights belong to it); its tokenizer.

    The preprocessor made from it saves it (`Preprocessor.save`).
    """
    os.makedirs(output_dir, exist_ok=True)
    keras.utils.set_random_seed(seed)
    kept = run_dir.RunDir(output_dir).resumed_vocabularies(("text",))
    if verbose and not kept:
        print(
            f"training the WordPiece vocabulary on {len(texts):,} texts...",
            flush=True,
        )
    (vocabulary,) = kept or (text.train_wordpiece_vocabulary(texts, vocabulary_size),)
    if verbose:
        said.announce_vocabularies(
            {"text": vocabulary}, vocabulary_size, kept=bool(kept)
        )
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
        *run_dir.RunDir(output_dir).checkpoint_callbacks(
            options.get("monitor", "val_loss")
        ),
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


@dataclasses.dataclass(frozen=True)
class OneVocabularyResult:
    """What the result of every one-vocabulary recipe holds.

    Attributes:
        model: the `keras.Model`.
        preprocessor: its `keras_seq.text` preprocessor.
        history: Keras' dict of per-epoch figures.
    """

    model: keras.Model
    preprocessor: object
    history: dict

    notes = ()  # Lines printed after the summary.

    @property
    def tokenizer(self):
        """The tokenizer of its vocabulary."""
        return self.preprocessor.tokenizer

    @property
    def tokenizers(self):
        """The vocabularies by `run_dir.vocabulary_file` key."""
        return {"text": self.tokenizer}


@dataclasses.dataclass(frozen=True)
class ClassifierResult(OneVocabularyResult):
    """A trained classifier and its figures (`model` has the best validation
    epoch's weights).

    Attributes:
        test_accuracy: float in [0, 1].
        max_length: int, the tokens a text is cut to.
    """

    test_accuracy: float
    max_length: int

    def record(self):
        """The figures `run.json` keeps (`max_length` cuts `classify`'s texts)."""
        return {"test_accuracy": self.test_accuracy, "max_length": self.max_length}

    def summary(self, settings):
        return f"test accuracy {self.test_accuracy:.1%}"


def train_classifier(
    corpus, output_dir, settings=None, *, verbose=1, strategy=None, **changes
):
    """Trains `zoo.build_classifier` on `(text, label)` splits.

    The weights of the epoch with the best validation accuracy are the
    ones returned: small sentiment sets overfit within a few epochs.

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            `(text, label)` pairs, such as a `SentimentCorpus`.
        output_dir: str, for the vocabulary and checkpoints.
        settings: a `ClassifierSettings`, or None for its defaults.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **changes: settings over `settings`, and builder arguments over the
            preset.

    Returns:
        A `ClassifierResult`.

    Raises:
        ValueError: from `check_class_labels`, before anything is written.
    """
    settings = (settings or ClassifierSettings()).replace(**changes)
    seed, batch_size = settings.seed, settings.batch_size
    num_classes = check_class_labels(corpus)
    texts = [t for t, _ in corpus.train]
    vocabulary, tokenizer = _start(
        texts, output_dir, seed, settings.vocabulary_size, verbose
    )
    with runtime.scope(strategy):
        model = build_classifier(
            settings.preset, vocabulary_size=len(vocabulary),
            num_classes=num_classes, **settings.overrides,
        )  # fmt: skip
    if verbose:
        said.announce_model(
            model, settings.preset, zoo_presets.CLASSIFIER_PRESETS, settings.overrides
        )
    max_length = min(settings.max_length, model.get_config()["max_length"])
    preprocessor = text.ClassificationPreprocessor(
        tokenizer, max_length, class_names=getattr(corpus, "class_names", None)
    )
    run_dir.RunDir(output_dir).save_preprocessor(preprocessor)
    shuffle_epoch = ShuffleEpoch()

    def dataset(pairs, shuffle=False):
        return preprocessor.dataset(
            [t for t, _ in pairs], [label for _, label in pairs], batch_size,
            shuffle=shuffle, seed=seed, epoch=shuffle_epoch.epoch,
        )  # fmt: skip

    model.compile(
        optimizer=keras.optimizers.AdamW(settings.learning_rate, weight_decay=0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
    )
    datasets = (dataset(corpus.train, shuffle=True), dataset(corpus.validation))
    history = _fit(
        model, datasets, settings.epochs, output_dir, settings.minutes,
        shuffle_epoch, verbose=verbose, strategy=strategy, monitor="val_accuracy",
    )  # fmt: skip
    model.load_weights(run_dir.RunDir(output_dir).best_weights_path)
    _, accuracy = model.evaluate(dataset(corpus.test), verbose=0)
    return ClassifierResult(model, preprocessor, history, float(accuracy), max_length)


def evaluate_classifier(trained, corpus, settings):
    """Test accuracy of a trained model directory's classifier."""
    print(f"classifying the {len(corpus.test):,} test texts...", flush=True)
    probabilities = trained.classify([t for t, _ in corpus.test])
    labels = [label for _, label in corpus.test]
    if getattr(corpus, "class_names", None):
        labels = _as_run_ids(labels, corpus.class_names, trained.class_names)
    return {"test_accuracy": float((probabilities.argmax(-1) == labels).mean())}


def _as_run_ids(labels, names, run_names):
    """Label ids of an evaluation file's names -> the run's ids of them."""
    unknown = sorted(set(names) - set(run_names))
    if unknown:
        raise UsageError(
            f"--data: the labels {unknown} are no class of the model "
            f"({', '.join(run_names)})."
        )
    ids = [run_names.index(name) for name in names]
    return [ids[label] for label in labels]


def classify_texts(model, preprocessor, texts, batch_size=64):
    """Class probabilities of Python strings.

    The texts become ids by `preprocessor.batches` (cut and padded to its
    `max_length`; a `TruncationWarning` says how many were cut), as in
    training and in the exported graph.

    Args:
        model: a model of `zoo.build_classifier`.
        preprocessor: its `keras_seq.text.ClassificationPreprocessor`.
        texts: list of str.
        batch_size: int.

    Returns:
        A float numpy array (N, C) whose rows sum to 1.

    Raises:
        TypeError: when `texts` is one str, not a list of str.
    """
    texts = check_text_list(texts)
    logits = model.predict(preprocessor.batches(texts, batch_size), verbose=0)
    return keras.ops.convert_to_numpy(keras.ops.softmax(logits, axis=-1))


@dataclasses.dataclass(frozen=True)
class LanguageModelResult(OneVocabularyResult):
    """A trained language model and its figures.

    Attributes:
        validation_perplexity: float, per WordPiece token.
        test_perplexity: float, per WordPiece token.
        sequence_length: int, tokens of a training window.
        sample: str, a continuation of a validation line ("" until
            `run_language_model` draws it).
    """

    validation_perplexity: float
    test_perplexity: float
    sequence_length: int
    sample: str = ""

    def record(self):
        """The figures `run.json` keeps (`evaluate` reads `sequence_length`)."""
        return {
            "validation_perplexity": self.validation_perplexity,
            "test_perplexity": self.test_perplexity,
            "sequence_length": self.sequence_length,
        }

    def summary(self, settings):
        return (
            f"validation perplexity {self.validation_perplexity:.1f}, "
            f"test perplexity {self.test_perplexity:.1f} (per token)"
        )

    @property
    def notes(self):
        """Lines printed after the summary."""
        return (f"sample: {self.sample}",)


def warmup_adam(model, settings):
    """The Transformer's optimizer: Adam(0.9, 0.98, 1e-9) on the
    inverse-square-root warm-up of Vaswani et al. (2017), Eq. (3)."""
    schedule = InverseSquareRootWarmup(
        model.get_config()["model_dim"],
        settings.warmup_steps,
        scale=settings.learning_rate_scale,
    )
    return keras.optimizers.Adam(schedule, 0.9, 0.98, 1e-9)


def train_language_model(
    corpus, output_dir, settings=None, *, verbose=1, strategy=None,
    builder=build_language_model, optimizer=warmup_adam,
    presets=zoo_presets.LANGUAGE_MODEL_PRESETS, **changes,
):  # fmt: skip
    """Trains a language model on a `TextCorpus` (lines of text).

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            str, such as a `keras_seq.data.TextCorpus`.
        output_dir: str, for the vocabulary and checkpoints.
        settings: a `LanguageModelSettings`, or None for its defaults.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        builder: the builder, `zoo.build_language_model` or another causal
            model's taking a preset and `vocabulary_size`.
        optimizer: `(model, settings) -> keras.optimizers.Optimizer`.
        presets: the builder's presets, whose counts the model is told
            against.
        **changes: settings over `settings`, and builder arguments over the
            preset.

    Returns:
        A `LanguageModelResult`.
    """
    settings = (settings or LanguageModelSettings()).replace(**changes)
    seed, batch_size = settings.seed, settings.batch_size
    vocabulary, tokenizer = _start(
        corpus.train, output_dir, seed, settings.vocabulary_size, verbose
    )
    with runtime.scope(strategy):
        model = builder(
            settings.preset, vocabulary_size=len(vocabulary), **settings.overrides
        )
    if verbose:
        said.announce_model(model, settings.preset, presets, settings.overrides)
    # A model without a length limit of its own (a recurrent one) takes
    # the recipe's `max_length` for its texts.
    max_length = model.get_config().get("max_length") or settings.max_length
    sequence_length = min(settings.sequence_length, max_length)
    preprocessor = text.LanguageModelPreprocessor(
        tokenizer, max_length, sequence_length
    )
    run_dir.RunDir(output_dir).save_preprocessor(preprocessor)
    shuffle_epoch = ShuffleEpoch()

    def dataset(lines, shuffle=False):
        return preprocessor.dataset(
            lines, batch_size, shuffle=shuffle, seed=seed, epoch=shuffle_epoch.epoch
        )

    model.compile(
        optimizer=optimizer(model, settings),
        loss=MaskedSparseCategoricalCrossentropy(),
        metrics=[MaskedAccuracy()],
    )
    datasets = (dataset(corpus.train, shuffle=True), dataset(corpus.validation))
    history = _fit(
        model, datasets, settings.epochs, output_dir, settings.minutes,
        shuffle_epoch, verbose=verbose, strategy=strategy,
    )  # fmt: skip
    validation_loss = model.evaluate(dataset(corpus.validation), verbose=0)[0]
    test_loss = model.evaluate(dataset(corpus.test), verbose=0)[0]
    return LanguageModelResult(
        model, preprocessor, history, math.exp(validation_loss),
        math.exp(test_loss), sequence_length,
    )  # fmt: skip


def generate_text(model, preprocessor, prompt, max_new_tokens, top_k, top_p, seed):
    """Samples a continuation of one `prompt` (top-k, or top-p).

    The prompt becomes ids by `preprocessor.prompt_ids`, the rule of the
    exported graph too: it keeps its last `max_length - max_new_tokens`
    tokens (a `TruncationWarning` says so) and a blank prompt starts from
    `[START]`. Training lines end with [END]; sampling runs past it, so the
    text may span several lines, joined by " / ".

    Args:
        model: a model of `zoo.build_language_model`.
        preprocessor: its `keras_seq.text.LanguageModelPreprocessor`.
        prompt: str.
        max_new_tokens: int, or None for all the room the prompt leaves.
        top_k, top_p, seed: of the sampler.

    Returns:
        str, the prompt and its continuation.
    """
    ids = preprocessor.prompt_ids([prompt], max_new_tokens)[0].tolist()
    room = preprocessor.max_length - len(ids)
    new = model.generate(
        np.asarray([ids], "int32"),
        max_new_tokens=max_new_tokens or room,
        strategy="sample",
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        end_token_id=None,
    )
    stream = ids + np.asarray(new)[0].tolist()
    lines, line = [], []
    for token in stream + [text.END_ID]:
        if token == text.END_ID:
            lines.append(line)
            line = []
        elif token != text.START_ID:
            line.append(token)
    decoded = preprocessor.detokenize([row or [0] for row in lines])
    return " / ".join(line for line in decoded if line)


def _masked_loss(model, dataset):
    model.compile(loss=MaskedSparseCategoricalCrossentropy())
    return float(model.evaluate(dataset, verbose=0, return_dict=True)["loss"])


def evaluate_language_model(trained, corpus, settings):
    """Test perplexity of a trained model directory's language model, on
    windows of the length it was trained on (its preprocessor's)."""
    dataset = trained.preprocessor.dataset(corpus.test, settings.batch_size)
    return {"test_perplexity": math.exp(_masked_loss(trained.model, dataset))}


@dataclasses.dataclass(frozen=True)
class MaskedLanguageModelResult(OneVocabularyResult):
    """A trained masked language model and its figures.

    Attributes:
        validation_masked_accuracy: float in [0, 1].
        max_length: int, the model's.
    """

    validation_masked_accuracy: float
    max_length: int

    def record(self):
        """The figures `run.json` keeps."""
        return {"validation_masked_accuracy": self.validation_masked_accuracy}

    def summary(self, settings):
        accuracy = self.validation_masked_accuracy
        return f"validation masked-token accuracy {accuracy:.1%}"


def train_masked_language_model(
    corpus_texts, output_dir, settings=None, *, verbose=1, strategy=None, **changes
):
    """Trains `zoo.build_masked_language_model` on `(train, validation)` texts.

    Args:
        corpus_texts: a pair of lists of str, training and validation.
        output_dir: str, for the vocabulary and checkpoints.
        settings: a `MaskedLanguageModelSettings`, or None for its defaults.
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None.
        **changes: settings over `settings`, and builder arguments over the
            preset.

    Returns:
        A `MaskedLanguageModelResult`.
    """
    settings = (settings or MaskedLanguageModelSettings()).replace(**changes)
    seed, batch_size = settings.seed, settings.batch_size
    train, validation = corpus_texts
    vocabulary, tokenizer = _start(
        train, output_dir, seed, settings.vocabulary_size, verbose
    )
    with runtime.scope(strategy):
        model = build_masked_language_model(
            settings.preset, vocabulary_size=len(vocabulary), **settings.overrides
        )
    if verbose:
        said.announce_model(
            model, settings.preset, zoo_presets.ENCODER_PRESETS, settings.overrides
        )
    max_length = model.get_config()["max_length"]
    preprocessor = text.MaskedLanguageModelPreprocessor(tokenizer, max_length)
    run_dir.RunDir(output_dir).save_preprocessor(preprocessor)
    shuffle_epoch = ShuffleEpoch()

    def dataset(texts, shuffle=False):
        return preprocessor.dataset(
            texts, batch_size, seed=seed, shuffle=shuffle, epoch=shuffle_epoch.epoch
        )

    model.compile(
        optimizer=keras.optimizers.AdamW(settings.learning_rate, weight_decay=0.01),
        loss=MaskedSparseCategoricalCrossentropy(),
        metrics=[MaskedAccuracy()],
    )
    datasets = (dataset(train, shuffle=True), dataset(validation))
    history = _fit(
        model, datasets, settings.epochs, output_dir, settings.minutes,
        shuffle_epoch, verbose=verbose, strategy=strategy,
    )  # fmt: skip
    _, accuracy = model.evaluate(dataset(validation), verbose=0)
    return MaskedLanguageModelResult(
        model, preprocessor, history, float(accuracy), max_length
    )


def evaluate_masked_language_model(trained, corpus, settings):
    """Test masked-token loss of a trained model directory's masked
    language model."""
    dataset = trained.preprocessor.dataset(corpus.test, settings.batch_size)
    return {"test_masked_loss": _masked_loss(trained.model, dataset)}
