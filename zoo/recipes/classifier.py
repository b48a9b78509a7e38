"""The classifier's family: labelled texts in (the movie-review snippets,
or `text<TAB>label` lines), an encoder-only classifier out, scored by
accuracy on the test split with the weights of its best validation epoch
(small sentiment sets overfit within a few epochs)."""

import dataclasses

import numpy as np

from zoo.recipes.inputs import UsageError
from zoo.recipes.recipe import Execution, OneVocabularyResult, Recipe
from zoo.recipes.settings import ClassifierSettings


class ClassifierRecipe(Recipe):
    """`keras-seq train classifier`: AdamW, fixed-size batches."""

    name = "classifier"
    builder_name = "build_classifier"
    presets_name = "CLASSIFIER_PRESETS"
    settings = ClassifierSettings
    commands = frozenset({"classify", "export"})
    data_help = "text<TAB>label"
    monitor = "val_accuracy"

    def preprocessor(self, config, run):
        from keras_seq import text

        max_length = config["max_length"]
        max_length = min(run.get("max_length", max_length), max_length)
        return text.ClassificationPreprocessor, {"max_length": max_length}

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.sentiment_corpus(data)

    # Training.

    def check(self, corpus, settings):
        check_class_labels(corpus)

    def training_texts(self, corpus):
        return [t for t, _ in corpus.train]

    def build_model(self, vocabularies, corpus, settings):
        (vocabulary,) = vocabularies
        return self.builder(
            settings.preset, vocabulary_size=len(vocabulary),
            num_classes=check_class_labels(corpus), **settings.overrides,
        )  # fmt: skip

    def optimizer(self, model, settings):
        """AdamW at `settings.learning_rate`, weight decay 0.01."""
        import keras

        return keras.optimizers.AdamW(settings.learning_rate, weight_decay=0.01)

    def compile_options(self, settings):
        import keras

        return {
            "loss": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }

    def make_preprocessor(self, model, tokenizers, corpus, settings):
        from keras_seq import text

        max_length = min(settings.max_length, model.get_config()["max_length"])
        return text.ClassificationPreprocessor(
            *tokenizers, max_length, class_names=getattr(corpus, "class_names", None)
        )

    def dataset(self, fitted, items, settings, shuffle=False):
        return fitted.preprocessor.dataset(
            [t for t, _ in items], [label for _, label in items],
            settings.batch_size, shuffle=shuffle, seed=settings.seed,
            epoch=fitted.shuffle_epoch.epoch,
        )  # fmt: skip

    def score(self, fitted, corpus, settings, runtime):
        """Test accuracy with the best validation epoch's weights."""
        model = fitted.model
        model.load_weights(fitted.run.best_weights_path)
        _, accuracy = model.evaluate(
            self.dataset(fitted, corpus.test, settings), verbose=0
        )
        return ClassifierResult(
            model, fitted.preprocessor, fitted.history, float(accuracy),
            min(settings.max_length, model.get_config()["max_length"]),
        )  # fmt: skip

    # Evaluation and export.

    def evaluate(self, trained, corpus, chosen):
        """Test accuracy of a loaded run."""
        print(f"classifying the {len(corpus.test):,} test texts...", flush=True)
        probabilities = trained.probabilities([t for t, _ in corpus.test])
        labels = [label for _, label in corpus.test]
        if getattr(corpus, "class_names", None):
            labels = _as_run_ids(labels, corpus.class_names, trained.class_names)
        return {"test_accuracy": float((probabilities.argmax(-1) == labels).mean())}

    def export(self, trained, export_dir, version):
        from keras_seq import export

        return export.export_classifier(
            trained.model, trained.preprocessor, export_dir, version=version
        )


RECIPE = ClassifierRecipe()


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
    """Trains the classifier on `(text, label)` splits (`Recipe.train`).

    Args:
        corpus: an object with `train`, `validation` and `test` lists of
            `(text, label)` pairs, such as a `SentimentCorpus`.
        output_dir: str or `RunDir`, for the vocabulary and checkpoints.
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
    return RECIPE.train(corpus, output_dir, settings, Execution(verbose, strategy))


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
