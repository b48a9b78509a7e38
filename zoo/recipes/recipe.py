"""`Recipe`: what the application knows of one model family, and the
skeleton of its training.

Each family is one module of `zoo.recipes` holding one `Recipe` subclass
and its own application code: training hooks, result type, evaluation and
export (`translator`, `rnn_translator`, `classifier`, `language_model`,
`masked_language_model`, `rnn_language_model`); `zoo.recipes.families` is the
table of them. Commands and loaders never name a family: they ask the table
for one that `supports` a command, or for its `vocabularies`.

`Recipe.train` is the one skeleton of every family's training (a template
method): the seed, the vocabularies (those of the run it resumes, or
learned), the model built from the recipe's own builder and presets, the
optimizer and compile options the family declares, the preprocessor (saved
with the run), the datasets and `fit`, and the scoring of the test split.
A family overrides the hooks it needs.

A recipe module imports only light modules at its top (settings, presets as
data); its hooks import Keras and TensorFlow when they run, so that
`keras-seq --help` builds every command's flags without starting TensorFlow.
"""

import dataclasses
import time

import zoo
from zoo.recipes import said

# The commands every family supports; a recipe adds those its models serve
# ("translate", "classify", "generate", "export", and "ctranslate2" for
# `export --format ctranslate2`).
COMMON_COMMANDS = frozenset({"train", "evaluate"})


class Recipe:
    """One model family: its builder, settings and the hooks of its recipe.

    Attributes:
        name: str, as `keras-seq train NAME` and `run.json` spell it.
        builder_name: str, the `zoo` builder (`zoo.<builder_name>`).
        presets_name: str, the `zoo` preset table (`zoo.presets.<...>`).
        settings: the recipe's settings dataclass (its defaults).
        vocabularies: the keys of its vocabularies: `("source", "target")`
            for translators, `("text",)` otherwise.
        commands: frozenset of the commands it supports beyond
            `COMMON_COMMANDS`.
        data_help: str, what `--data` holds for it.
    """

    name = None
    builder_name = None
    presets_name = None
    settings = None
    vocabularies = ("text",)
    commands = frozenset()
    data_help = "one text per line"

    @property
    def builder(self):
        """The `zoo.build_<family>` function."""
        return getattr(zoo, self.builder_name)

    @property
    def presets(self):
        """The builder's presets, by name (plain data)."""
        from zoo import presets

        return getattr(presets, self.presets_name)

    def supports(self, command):
        """Whether the command `command` takes a run of this family."""
        return command in COMMON_COMMANDS or command in self.commands

    @property
    def translates(self):
        """Whether the family has a source side (`translate` takes it)."""
        return "source" in self.vocabularies

    def default_settings(self, recipe=None):
        """The settings `train` starts from (a named variant, or the class's
        defaults)."""
        del recipe
        return self.settings()

    def preprocessor(self, config, run):
        """The family's `keras_seq.text` preprocessor class, and the settings
        a run directory written before `preprocessor.json` existed loads
        with (what its model's `config` and its `run.json` say).

        Returns:
            `(class, dict of keyword arguments)`.
        """
        raise NotImplementedError

    def read_corpus(self, data, chosen):
        """The corpus `--data` names, read and checked before anything is
        written. `data` is None for the family's own corpus."""
        raise NotImplementedError

    # Training: the template and its hooks.

    def train(self, corpus, run, settings, runtime=None):
        """Trains on `corpus` into the run directory `run`, scores the test
        split and draws the family's figures.

        Args:
            corpus: what `read_corpus` returned (`train`, `validation`,
                `test` splits).
            run: the claimed `zoo.recipes.run_dir.RunDir` (or its path).
            settings: the family's settings (`Recipe.settings`).
            runtime: an `Execution` (Keras' `verbose`, the strategy), or
                None for its defaults.

        Returns:
            The recipe's typed result (`record()`, `summary()`, `notes`,
            `model`, `history`).
        """
        runtime = runtime or Execution()
        fitted = self.fit_model(corpus, run, settings, runtime)
        return self.score(fitted, corpus, settings, runtime)

    def fit_model(self, corpus, run, settings, runtime=None):
        """`train` up to the fitted model, before the test split is scored.

        Returns:
            A `Fitted`.
        """
        import keras

        from zoo.recipes import run_dir
        from zoo.recipes import runtime as runtimes

        run = run_dir.RunDir(run)
        runtime = runtime or Execution()
        verbose = runtime.verbose
        self.check(corpus, settings)
        run.make()
        keras.utils.set_random_seed(settings.seed)
        started = time.time()
        vocabularies = self.run_vocabularies(corpus, run, settings, verbose)
        tokenizers = self.tokenizers(vocabularies, settings)
        vocabulary_minutes = (time.time() - started) / 60
        with runtimes.scope(runtime.strategy):
            model = self.build_model(vocabularies, corpus, settings)
            model.compile(
                optimizer=self.optimizer(model, settings),
                **self.compile_options(settings),
            )
        if verbose:
            said.announce_model(
                model, settings.preset, self.presets, settings.overrides
            )
        preprocessor = self.make_preprocessor(model, tokenizers, corpus, settings)
        run.save_preprocessor(preprocessor)
        fitted = Fitted(
            model, preprocessor, run, started=runtime.began or started,
            vocabulary_minutes=vocabulary_minutes,
        )  # fmt: skip
        self.fit(fitted, corpus, settings, runtime)
        return fitted

    def run_vocabularies(self, corpus, run, settings, verbose):
        """The run's vocabularies, said: those of the run it resumes, or
        learned (`learn_vocabularies`)."""
        # A resumed run's weights belong to the vocabularies it began with.
        kept = run.resumed_vocabularies(self.vocabularies)
        if verbose and not kept:
            print(
                f"training the {self.learning_words(corpus, settings)}...", flush=True
            )
        vocabularies = kept or self.learn_vocabularies(corpus, settings)
        if verbose:
            said.announce_vocabularies(
                dict(zip(self.vocabularies, vocabularies)),
                settings.vocabulary_size,
                kept=bool(kept),
                min_frequency=settings.min_frequency,
            )
        return vocabularies

    def check(self, corpus, settings):
        """Refuses settings or data the family cannot train on, before
        anything is written."""

    def learning_words(self, corpus, settings):
        """What `train` says it learns: the tokenizer and what it reads."""
        del settings  # every family but the translator's learns WordPiece
        return f"WordPiece vocabulary on {len(corpus.train):,} texts"

    def learn_vocabularies(self, corpus, settings):
        """The vocabularies learned on the training split: a tuple of token
        lists, one per key of `vocabularies`."""
        from keras_seq import text

        texts = self.training_texts(corpus)
        return (
            text.train_wordpiece_vocabulary(
                texts, settings.vocabulary_size,
                min_frequency=settings.min_frequency,
            ),
        )  # fmt: skip

    def training_texts(self, corpus):
        """The texts the one vocabulary learns."""
        return corpus.train

    def tokenizers(self, vocabularies, settings):
        """One tokenizer per vocabulary."""
        from keras_seq import text

        return tuple(text.make_tokenizer(v) for v in vocabularies)

    def build_model(self, vocabularies, corpus, settings):
        """The model of the recipe's builder (`builder_name`) at the
        preset, its vocabulary sizes and `--set`'s changes."""
        (vocabulary,) = vocabularies
        return self.builder(
            settings.preset, vocabulary_size=len(vocabulary), **settings.overrides
        )

    def optimizer(self, model, settings):
        """The family's optimizer for `model` (declared by the family)."""
        raise NotImplementedError

    def compile_options(self, settings):
        """`model.compile`'s loss and metrics (and options) of the family."""
        raise NotImplementedError

    def make_preprocessor(self, model, tokenizers, corpus, settings):
        """The run's `keras_seq.text` preprocessor."""
        raise NotImplementedError

    def dataset(self, fitted, items, settings, shuffle=False):
        """The preprocessor's `tf.data` batches of one split."""
        return fitted.preprocessor.dataset(
            items, settings.batch_size, shuffle=shuffle, seed=settings.seed,
            epoch=fitted.shuffle_epoch.epoch,
        )  # fmt: skip

    # The checkpoints' monitor: the best epoch's weights are kept by it.
    monitor = "val_loss"

    def fit(self, fitted, corpus, settings, runtime):
        """`model.fit` on the training split, with the time budget, the
        epoch's shuffle and the run's checkpoints; Keras' history goes into
        `fitted.history`."""
        from keras_seq.callbacks import TimeBudget
        from zoo.recipes import runtime as runtimes

        strategy = runtime.strategy
        train_data = self.dataset(fitted, corpus.train, settings, shuffle=True)
        validation_data = self.dataset(fitted, corpus.validation, settings)
        train_data = runtimes.for_workers(train_data, strategy)
        validation_data = runtimes.for_workers(validation_data, strategy, shard=False)
        runtimes.build_for_strategy(fitted.model, strategy, train_data)
        callbacks = [
            TimeBudget(
                settings.minutes,
                since=fitted.started,
                announce=said.compiling(runtime.verbose),
            ),
            fitted.shuffle_epoch,
            *checkpoint_callbacks(fitted.run, self.monitor),
        ]
        # The datasets shuffle themselves; `shuffle=False` says so to Keras.
        fitted.history = fitted.model.fit(
            train_data,
            validation_data=validation_data,
            epochs=settings.epochs,
            callbacks=callbacks,
            verbose=runtime.verbose,
            shuffle=False,
        ).history

    def score(self, fitted, corpus, settings, runtime):
        """The family's typed result: the fitted model scored."""
        raise NotImplementedError

    def evaluate(self, trained, corpus, chosen):
        """The test figures (a dict) of a loaded run on `corpus`."""
        raise NotImplementedError

    def export(self, trained, export_dir, version):
        """Writes `<export_dir>/<version>/` from a loaded run; the path.

        Only families whose `commands` hold "export" implement it. Each
        export takes the run's own preprocessor (its saved lengths and
        buckets), so the served graph cuts and pads as training and the
        in-process API did.
        """
        raise NotImplementedError(f"{self.name} has no serving signature")

    def __repr__(self):
        return f"<Recipe {self.name}>"


@dataclasses.dataclass(frozen=True)
class Execution:
    """How `Recipe.train` runs: Keras' progress display, the
    `tf.distribute` strategy (`runtime.make_strategy`; None: the default
    device) and the `time.time()` the time budget counts from (None: when
    `Recipe.train` starts)."""

    verbose: int = 1
    strategy: object = None
    began: float | None = None


class Fitted:
    """What `Recipe.fit_model` hands to the scoring: the model, its
    preprocessor, the run directory, and what `fit` recorded.

    Attributes:
        model: the fitted `keras.Model`.
        preprocessor: its `keras_seq.text` preprocessor.
        run: the `RunDir`.
        started: float, the `time.time()` the run's time budget counts
            from (`Execution.began`, or when `Recipe.train` started).
        vocabulary_minutes: float, of the vocabularies.
        shuffle_epoch: the `keras_seq.callbacks.ShuffleEpoch` of the datasets.
        history: Keras' dict of per-epoch figures.
        extra: dict, what the family's `fit` kept for its scoring.
    """

    def __init__(self, model, preprocessor, run, *, started, vocabulary_minutes):
        from keras_seq.callbacks import ShuffleEpoch

        self.model = model
        self.preprocessor = preprocessor
        self.run = run
        self.started = started
        self.vocabulary_minutes = vocabulary_minutes
        self.shuffle_epoch = ShuffleEpoch()
        self.history = {}
        self.extra = {}


def checkpoint_callbacks(run, monitor="val_loss"):
    """`keras_seq.callbacks.checkpoint_callbacks` writing the run
    directory's history, backup and best weights (`RunDir`'s paths)."""
    from keras_seq import callbacks

    return callbacks.checkpoint_callbacks(
        run.path,
        monitor,
        history_path=run.history_path,
        backup_dir=run.backup_dir,
        best_weights_path=run.best_weights_path,
    )


@dataclasses.dataclass(frozen=True)
class OneVocabularyResult:
    """What the result of every one-vocabulary recipe holds.

    Attributes:
        model: the `keras.Model`.
        preprocessor: its `keras_seq.text` preprocessor.
        history: Keras' dict of per-epoch figures.
    """

    model: object
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


def masked_loss(model, dataset):
    """The padding-masked cross-entropy of `model` on `dataset`."""
    from keras_seq.losses import MaskedSparseCategoricalCrossentropy

    model.compile(loss=MaskedSparseCategoricalCrossentropy())
    return float(model.evaluate(dataset, verbose=0, return_dict=True)["loss"])
