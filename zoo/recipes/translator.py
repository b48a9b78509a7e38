"""The Transformer translator's family (Fig. 7.16): sentence pairs in, a
translator and its `TranslationPreprocessor` out, scored by BLEU.

The recipe of DESIGN.md "Training": WordPiece vocabularies trained on the
corpus, length-bucketed `tf.data` batches, teacher forcing, label-smoothed
padding-masked cross-entropy, Adam(0.9, 0.98, 1e-9) on the warm-up
schedule, validation BLEU, weight averaging, and beam search on the test
split, scored with sacreBLEU (`zoo.recipes.bleu`). The RNN translator's
family (`zoo.recipes.rnn_translator`) is this one with its own builder and
optimizer.

Keras and TensorFlow are imported inside the functions that use them, so
that the family table loads without them.
"""

import dataclasses

from keras_seq import defaults
from keras_seq.validation import check_positive_int
from zoo.recipes import said
from zoo.recipes.bleu import bleu_scores, corpus_bleu, decoding_name
from zoo.recipes.inference import tokenize_to_lists, translate_texts
from zoo.recipes.recipe import Execution, Recipe
from zoo.recipes.settings import TranslatorSettings

# The RNN translator's sequences are unbounded (its builder has no
# `max_length`); its batches are cut to this many tokens.
RNN_MAX_LENGTH = defaults.UNBOUNDED_LENGTH

__all__ = [
    "RECIPE", "TranslatorRecipe", "TranslatorResult", "ScoringCost",
    "build_vocabularies", "compile_translator", "train_translator",
    "evaluate_translator", "score_translator", "translate_texts", "tokenize_to_lists",
    "corpus_bleu", "bleu_scores", "decoding_name", "RNN_MAX_LENGTH",
    "SCORING_BATCH",
]  # fmt: skip


class TranslatorRecipe(Recipe):
    """`keras-seq train translator`: Adam with warm-up, length buckets,
    validation BLEU, beam search on the test split."""

    name = "translator"
    builder_name = "build_translator"
    presets_name = "TRANSLATOR_PRESETS"
    settings = TranslatorSettings
    vocabularies = ("source", "target")
    commands = frozenset({"translate", "export", "ctranslate2"})
    data_help = "source<TAB>target"

    def default_settings(self, recipe=None):
        from zoo.recipes import settings

        return settings.TRANSLATOR_RECIPES[recipe or self.settings.recipe]

    def preprocessor(self, config, run):
        from keras_seq import text

        return text.TranslationPreprocessor, {"max_length": config.get("max_length")}

    def read_corpus(self, data, chosen):
        from zoo.recipes import corpora

        return corpora.translation_corpus(
            data, chosen.variants, chosen.phrases, chosen.train_pairs, chosen.seed
        )

    # Training.

    def check(self, corpus, settings):
        check_positive_int(settings.average_last_epochs, "average_last_epochs")
        check_positive_int(
            settings.early_stopping_patience, "early_stopping_patience", True
        )
        check_positive_int(settings.bleu_every, "bleu_every")
        check_positive_int(settings.bleu_sample, "bleu_sample")

    def _config(self, settings):
        """The preset's builder arguments with `--set`'s over them."""
        preset = self.presets.get(settings.preset, {}).get("config", {})
        return {**preset, **dict(settings.overrides)}

    def _max_length(self, settings):
        config = self._config(settings)
        return settings.max_length or config.get("max_length", RNN_MAX_LENGTH)

    def learning_words(self, corpus, settings):
        kind = "SentencePiece" if settings.tokenizer == "sentencepiece" else "WordPiece"
        return f"{kind} vocabularies on {len(corpus.train):,} pairs"

    def learn_vocabularies(self, corpus, settings):
        # One embedding table serves both sides only if both sides share one
        # vocabulary (Press & Wolf, 2017; Vaswani et al., 2017, Sec. 3.4).
        shared = settings.shared_vocabulary or bool(
            self._config(settings).get("tie_embeddings")
        )
        if settings.tokenizer == "sentencepiece":
            return build_sentencepiece(
                corpus.train, settings.vocabulary_size, shared,
                settings.sentencepiece_model, settings.seed,
            )  # fmt: skip
        # Case is kept unless the settings ask otherwise: the vocabularies
        # learn the words as the tokenizers will read them.
        return build_vocabularies(
            corpus.train, settings.vocabulary_size, shared=shared,
            lowercase=settings.lowercase, min_frequency=settings.min_frequency,
        )  # fmt: skip

    def tokenizers(self, vocabularies, settings):
        from keras_seq import text

        if settings.tokenizer == "sentencepiece":
            # Each vocabulary carries its model (`ModelVocabulary`), learned
            # or read back from the resumed run.
            return tuple(text.SentencePieceTokenizer(v.proto, v) for v in vocabularies)
        return tuple(
            text.make_tokenizer(v, lowercase=settings.lowercase) for v in vocabularies
        )

    def build_model(self, vocabularies, corpus, settings):
        overrides = dict(settings.overrides)
        if "max_length" in self._config(settings):
            overrides["max_length"] = self._max_length(settings)
        return self.builder(
            settings.preset,
            source_vocabulary_size=len(vocabularies[0]),
            target_vocabulary_size=len(vocabularies[1]),
            **overrides,
        )

    def optimizer(self, model, settings):
        """Adam(0.9, 0.98, 1e-9) on the inverse-square-root warm-up of
        Vaswani et al. (2017), Eq. (3), at the model's width; with
        `ema_momentum`, it keeps an exponential moving average of the
        weights (Polyak averaging; `keras_seq.callbacks.EmaWeights`)."""
        import keras

        from keras_seq.schedules import InverseSquareRootWarmup

        schedule = InverseSquareRootWarmup(
            model.get_config()["model_dim"],
            warmup_steps=settings.warmup_steps,
            scale=settings.learning_rate_scale,
        )
        return keras.optimizers.Adam(
            schedule, beta_1=0.9, beta_2=0.98, epsilon=1e-9, **_ema(settings)
        )

    def compile_options(self, settings):
        from keras_seq.losses import MaskedSparseCategoricalCrossentropy
        from keras_seq.metrics import MaskedAccuracy

        return {
            "loss": MaskedSparseCategoricalCrossentropy(
                label_smoothing=settings.label_smoothing
            ),
            "metrics": [MaskedAccuracy()],
            "jit_compile": settings.jit_compile,
        }

    def make_preprocessor(self, model, tokenizers, corpus, settings):
        from keras_seq import text

        # The RNN translator has no `max_length`; its batches are cut to the
        # last bucket, `max_length`.
        return text.TranslationPreprocessor(
            *tokenizers,
            max_length=getattr(model, "max_length", None),
            bucket_boundaries=text.default_bucket_boundaries(
                self._max_length(settings)
            ),
        )

    def dataset(self, fitted, items, settings, shuffle=False):
        """Length-bucketed batches of `batch_tokens` tokens; the training
        split's (`shuffle`) reshuffled each epoch, with token dropout."""
        training = {
            "shuffle": True, "seed": settings.seed, "training": True,
            "epoch": fitted.shuffle_epoch.epoch,
            "token_dropout": settings.token_dropout,
            "subword_sampling": settings.subword_sampling,
        }  # fmt: skip
        return fitted.preprocessor.dataset(
            items, batch_tokens=settings.batch_tokens, **(training if shuffle else {})
        )

    def fit(self, fitted, corpus, settings, runtime):
        """`model.fit` with the recipe's callbacks: the budget (which keeps
        time for the scoring after it), validation BLEU, weight averaging,
        early stopping, the epoch's shuffle and the checkpoints."""
        import keras

        from keras_seq.callbacks import BleuHistory, EmaWeights, TimeBudget
        from zoo.recipes import runtime as runtimes
        from zoo.recipes.recipe import checkpoint_callbacks

        model, preprocessor, strategy = (
            fitted.model,
            fitted.preprocessor,
            runtime.strategy,
        )
        shuffle_epoch = fitted.shuffle_epoch
        train_data = self.dataset(fitted, corpus.train, settings, shuffle=True)
        validation_data = self.dataset(fitted, corpus.validation, settings)
        averages = settings.average_last_epochs > 1
        cost = ScoringCost(_sentences_after_training(settings, corpus), int(averages))
        validation_bleu = _validation_bleu(model, preprocessor, corpus, settings, cost)
        # `--minutes` is the whole run's: what came before `fit` counts, and
        # the scoring after it is kept out of the training time.
        budget = TimeBudget(
            settings.minutes,
            since=fitted.started,
            reserve=cost.minutes,
            announce=said.compiling(runtime.verbose),
        )
        bleu_history = BleuHistory(validation_bleu, every=settings.bleu_every)
        averaging = _averaging(settings, fitted.run, validation_bleu)
        patience = settings.early_stopping_patience
        callbacks = [
            budget,
            # The averaged weights, when kept, are the ones scored and saved.
            *([EmaWeights()] if settings.ema_momentum else []),
            bleu_history,
            *([averaging] if averaging else []),
            *(
                [
                    keras.callbacks.EarlyStopping(
                        "val_bleu", patience=patience, mode="max"
                    )
                ]
                if patience
                else []
            ),
            shuffle_epoch,
            *checkpoint_callbacks(fitted.run),
        ]
        train_data = runtimes.for_workers(train_data, strategy)
        validation_data = runtimes.for_workers(validation_data, strategy, shard=False)
        runtimes.build_for_strategy(model, strategy, train_data)
        history = model.fit(
            train_data,
            validation_data=validation_data,
            epochs=settings.epochs,
            callbacks=callbacks,
            verbose=runtime.verbose,
            shuffle=False,  # The dataset shuffles itself.
        )
        chosen = _averaging_record(averaging)
        if chosen and runtime.verbose:
            print(_averaging_line(chosen), flush=True)
        fitted.history = history.history
        fitted.extra = {
            "bleu_history": bleu_history.points,
            "train_minutes": budget.elapsed_minutes(),
            "averaged_epochs": averaging.kept_epochs if averaging else 1,
            "averaging": chosen,
        }

    def score(self, fitted, corpus, settings, runtime):
        """The learning curves drawn (`learning_curves.png`) and the test
        split translated with `settings.beam_width` beams, and greedily too
        when `settings.greedy_bleu`."""
        from zoo.recipes import plots

        result = _result(fitted)
        plots.plot_learning_curves(
            result.history, result.bleu_history, fitted.run.curves_path
        )
        bleu, hypotheses = {}, {}
        for width, _ in _sentences_after_training(settings, corpus):
            scores, outputs = score_translator(
                result.model, result.preprocessor, corpus.test, width
            )
            bleu.update(scores)
            hypotheses["greedy" if width == 1 else f"beam{width}"] = outputs
        return dataclasses.replace(result, test_bleu=bleu, test_hypotheses=hypotheses)

    # Evaluation and export.

    def evaluate(self, trained, corpus, chosen):
        """Test BLEU of a loaded run on `corpus.test`, decoding with
        `chosen.beam_width` beams."""
        return score_translator(
            trained.model, trained.preprocessor, corpus.test, chosen.beam_width
        )[0]

    def export(self, trained, export_dir, version):
        from keras_seq import export

        return export.export_translator(
            trained.model, trained.preprocessor, export_dir, version=version
        )


RECIPE = TranslatorRecipe()


def _ema(settings):
    """The optimizer's moving-average options of `settings.ema_momentum`."""
    momentum = settings.ema_momentum
    return {"use_ema": True, "ema_momentum": momentum} if momentum else {}


def build_sentencepiece(pairs, vocabulary_size, shared, model_type, seed=0):
    """Trains a SentencePiece model per side (one on both when `shared`).

    Returns:
        A `(source, target)` pair of `ModelVocabulary`s (the same twice when
        `shared`): the tokens, each with its model.
    """
    from keras_seq.text import sentencepiece_tokenizer as pieces

    def learn(texts):
        proto, tokens = pieces.train_sentencepiece(
            texts, vocabulary_size, model_type=model_type, seed=seed
        )
        return pieces.ModelVocabulary(tokens, proto)

    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    if shared:
        source = learn(sources + targets)
        return source, source
    return learn(sources), learn(targets)


def build_vocabularies(
    pairs, vocabulary_size, output_dir=None, shared=False, lowercase=False,
    min_frequency=None,
):  # fmt: skip
    """Trains source and target WordPiece vocabularies.

    German and English share names, numbers and many word pieces, so with
    `shared=True` one table learns them once (needed for `tie_embeddings`).

    Args:
        pairs: list of `(source, target)` strings.
        vocabulary_size: int, the largest size of each vocabulary.
        output_dir: str or None. Where to save the vocabularies
            (`run_dir.write_vocabularies`); nothing is saved when None.
        shared: bool, train one vocabulary on both sides.
        lowercase: bool, learn lowercased words; the tokenizers must agree
            (`text.make_tokenizer(..., lowercase=...)`, whose default this is).
        min_frequency: int or None, the fewest occurrences of a word piece
            learned (None: `keras_seq.text.train_wordpiece_vocabulary`'s).

    Returns:
        A `(source, target)` pair of token lists (the same list twice when
        `shared`).
    """

    from keras_seq import text

    def learn(texts):
        floor = {} if min_frequency is None else {"min_frequency": min_frequency}
        return text.train_wordpiece_vocabulary(
            texts, vocabulary_size, lowercase, **floor
        )

    if shared:
        source = learn([s for s, _ in pairs] + [t for _, t in pairs])
        target = source
    else:
        source = learn([s for s, _ in pairs])
        target = learn([t for _, t in pairs])
    if output_dir:
        from zoo.recipes import run_dir

        run_dir.RunDir(output_dir).write_vocabularies(
            {"source": source, "target": target}
        )
    return source, target


def compile_translator(
    model,
    warmup_steps=TranslatorSettings.warmup_steps,
    learning_rate_scale=TranslatorSettings.learning_rate_scale,
    label_smoothing=TranslatorSettings.label_smoothing,
    jit_compile="auto",
    ema_momentum=None,
    recipe=RECIPE,
):
    """Compiles a translator with its family's loss, optimizer and metric
    (`recipe.optimizer`, `recipe.compile_options`), as training does.

    Args:
        model: a model of the recipe's builder.
        warmup_steps: int, steps of linear warm-up of the schedule.
        learning_rate_scale: float, multiplies the learning rate.
        label_smoothing: float in [0, 1), of the masked cross-entropy.
        jit_compile: bool or `"auto"`, passed to `model.compile`.
        ema_momentum: float or None. When set (e.g. 0.999), the optimizer
            keeps an exponential moving average of the weights.
        recipe: the family (`RECIPE`, the Transformer's; the RNN
            translator's is `zoo.recipes.rnn_translator.RECIPE`).

    Returns:
        `model`, compiled.
    """
    settings = TranslatorSettings(
        warmup_steps=warmup_steps, learning_rate_scale=learning_rate_scale,
        label_smoothing=label_smoothing, jit_compile=jit_compile,
        ema_momentum=ema_momentum,
    )  # fmt: skip
    model.compile(
        optimizer=recipe.optimizer(model, settings), **recipe.compile_options(settings)
    )
    return model


@dataclasses.dataclass(frozen=True)
class TranslatorResult:
    """A trained translator and its figures.

    Attributes:
        model: the trained `keras.Model`.
        preprocessor: its `keras_seq.text.TranslationPreprocessor`.
        history: Keras' dict of per-epoch figures.
        bleu_history: list of `(minutes, epoch, BLEU)` validation points.
        train_minutes: float, of `model.fit`.
        vocabulary_minutes: float, of the WordPiece training.
        averaged_epochs: int, the epochs whose mean weights the model holds
            (1: the last epoch's weights).
        averaging: dict, empty without averaging; else `epochs` averaged,
            which weights were `kept` (the mean, `average`, or the `last`) and the
            validation BLEU of each (`bleu_average`, `bleu_last`).
        test_bleu: dict, test BLEU keyed by decoding, cased first
            (`bleu_scores`); empty until `run_translator` scores the test
            split.
        test_hypotheses: dict of decoding (`"beam4"`, `"greedy"`) -> the
            test translations; empty until scored.
    """

    model: object
    preprocessor: object
    history: dict
    bleu_history: list
    train_minutes: float
    vocabulary_minutes: float
    averaged_epochs: int
    averaging: dict = dataclasses.field(default_factory=dict)
    test_bleu: dict = dataclasses.field(default_factory=dict)
    test_hypotheses: dict = dataclasses.field(default_factory=dict)

    notes = ()  # Lines printed after the summary.

    @property
    def source_tokenizer(self):
        return self.preprocessor.source_tokenizer

    @property
    def target_tokenizer(self):
        return self.preprocessor.target_tokenizer

    @property
    def tokenizers(self):
        """`{"source": ..., "target": ...}`, as a model directory keys them."""
        return {"source": self.source_tokenizer, "target": self.target_tokenizer}

    def record(self):
        """The figures `run.json` keeps."""
        return {
            **self.test_bleu,
            "train_minutes": self.train_minutes,
            "averaged_epochs": self.averaged_epochs,
            **({"averaging": self.averaging} if self.averaging else {}),
        }

    def summary(self, settings):
        """The test figures in words."""
        names = list(self.test_bleu)
        if not names:
            return "not scored"
        bleu, lowercased = self.test_bleu[names[0]], self.test_bleu[names[1]]
        how = decoding_name(settings.beam_width)
        words = f"test BLEU {bleu:.2f} (lowercased {lowercased:.2f}), {how}"
        if settings.greedy_bleu and settings.beam_width != 1:
            greedy = self.test_bleu["bleu_greedy"]
            greedy_lowercased = self.test_bleu["bleu_greedy_lowercase"]
            words += f"; {greedy:.2f} (lowercased {greedy_lowercased:.2f}) greedy"
        return words


def train_translator(
    corpus, output_dir, settings=None, *, recipe=RECIPE, verbose=1,
    strategy=None, **changes,
):  # fmt: skip
    """Trains a translator on a `TranslationCorpus` (`Recipe.fit_model`),
    without scoring the test split.

    Vocabularies, checkpoints (a killed run resumes) and `history.csv` are
    written to `output_dir`. The validation BLEU is recorded on the first
    `settings.bleu_sample` validation pairs every `settings.bleu_every`
    epochs. `settings.minutes` bounds the run from this call until the test
    split is scored (`Recipe.train`): training stops early enough for that
    scoring (`ScoringCost`). Averaged weights are kept only if they score
    at least the last weights on the validation pairs.

    Args:
        corpus: a `keras_seq.data.TranslationCorpus`.
        output_dir: str or `RunDir`, created if missing.
        settings: a `TranslatorSettings`, or None for its defaults.
        recipe: the family (`RECIPE`, or the RNN translator's).
        verbose: int, Keras' progress display.
        strategy: a `tf.distribute` strategy or None (`runtime.make_strategy`).
        **changes: settings over `settings` (`epochs=3`), and builder
            arguments over the preset (`dropout=0.2`).

    Returns:
        A `TranslatorResult` (not yet scored on the test split).
    """
    settings = (settings or TranslatorSettings()).replace(**changes)
    fitted = recipe.fit_model(
        corpus, output_dir, settings, Execution(verbose, strategy)
    )
    return _result(fitted)


def _result(fitted):
    return TranslatorResult(
        model=fitted.model,
        preprocessor=fitted.preprocessor,
        history=fitted.history,
        vocabulary_minutes=fitted.vocabulary_minutes,
        **fitted.extra,
    )


def _validation_bleu(model, preprocessor, corpus, settings, cost):
    """The validation sample's BLEU as a function of no argument, each call
    timed into `cost`; with a time budget, its loop compiled and timed now."""
    import time

    sample = corpus.validation[: settings.bleu_sample]

    def decode_sample():
        # One batch, so one compiled decoding loop: each new batch shape
        # compiles a loop of its own, which costs far more than decoding
        # the sample (benchmarks/history.md, "Validation BLEU").
        began = time.time()
        hypotheses = translate_texts(
            model, preprocessor, [s for s, _ in sample], batch_size=len(sample)
        )
        cost.measured(time.time() - began, len(sample))
        return hypotheses

    if settings.minutes is not None and sample:
        # The budget needs the scoring's cost before the first epoch ends:
        # the loop compiled now (the validations reuse it), then timed.
        decode_sample()
        decode_sample()
    # Cased, as the test scores are, unless the model writes lowercase.
    lowercase = bool(preprocessor.target_tokenizer.lowercase)
    references = [t for _, t in sample]
    return lambda: corpus_bleu(decode_sample(), references, lowercase=lowercase)


def _averaging_record(averaging):
    """What `run.json` keeps of the averaging: empty when none took place."""
    if averaging is None or averaging.kept is None:
        return {}
    return {
        "epochs": averaging.averaged_epochs,
        "kept": averaging.kept,
        **{f"bleu_{k}": round(v, 2) for k, v in averaging.scores.items()},
    }


def _averaging_line(chosen):
    """The one line that says which weights the run kept."""
    scores = (
        f" (validation BLEU {chosen['bleu_average']:.2f} averaged, "
        f"{chosen['bleu_last']:.2f} last)"
        if "bleu_last" in chosen
        else ""
    )
    if chosen["kept"] != "last":
        return f"kept the mean of the last {chosen['epochs']} epochs' weights{scores}"
    return (
        f"kept the last epoch's weights: the mean of the last {chosen['epochs']} "
        f"epochs scored lower{scores}"
    )


def _averaging(settings, run, validation_bleu):
    """`AverageLastEpochs` when the settings average, else None.

    Its copies live beside the backup, so a resumed run averages the same
    epochs; the average is kept only if it scores as well as the last
    weights on the validation sample.
    """
    if settings.average_last_epochs <= 1:
        return None
    from keras_seq.callbacks import AverageLastEpochs

    return AverageLastEpochs(
        settings.average_last_epochs,
        run.average_dir,
        score_fn=validation_bleu,
        monitor="val_bleu",
    )


def _sentences_after_training(settings, corpus):
    """The decodings scored after training: `(beam width, sentences)`."""
    widths = [settings.beam_width]
    if settings.greedy_bleu and settings.beam_width != 1:
        widths.append(1)
    return [(width, len(corpus.test)) for width in widths]


class ScoringCost:
    """The minutes that scoring after training will take (`TimeBudget`'s
    reserve), from what scoring the validation sample cost.

    Decoding the validation sample (one batch) costs a compiled loop the
    first time and decoding alone afterwards; the test split is decoded the
    same way (`SCORING_BATCH`), each decoding compiling a loop of its own.
    So a decoding of `n` sentences with `w` beams is estimated as
    `1 + COMPILE_PER_BEAM * (w - 1)` compilations and `n` sentences at
    `1 + STEP_PER_BEAM * (w - 1)` times the latest validation decoding's
    cost per sentence. The latest, not the cheapest: how long a decoding
    runs depends on when the model learns to end its sentences, and the
    weights that will be scored are the latest. The compilation is what
    the first decoding cost beyond the second (both before training, on
    the same weights); until a second decoding shows it, the first
    decoding's whole time stands for each.

    Args:
        decodings: list of `(beam width, sentences)` scored after training.
        rescorings: int, validation scorings after training (averaging).
    """

    # Beam search against greedy decoding of the same sentences, as a
    # multiple of greedy's cost: compiling the loop, and decoding (measured
    # with the `small` translator on CPU, benchmarks/README.md).
    COMPILE_PER_BEAM = 0.1
    STEP_PER_BEAM = 1.5

    def __init__(self, decodings, rescorings=0):
        self.decodings = decodings
        self.rescorings = rescorings
        self.seconds = []
        self.sentences = 0

    def measured(self, seconds, count):
        """Records a decoding of the `count` validation sentences in
        `seconds`."""
        if count:
            self.seconds.append(seconds)
            self.sentences = count

    def minutes(self):
        """The estimate; 0 until a validation scoring was measured."""
        if not self.seconds:
            return 0.0
        latest = self.seconds[-1]
        compiling = latest
        if len(self.seconds) > 1:
            compiling = max(self.seconds[0] - self.seconds[1], 0.0)
        per_sentence = latest / self.sentences
        total = self.rescorings * latest
        for width, count in self.decodings:
            total += compiling * (1 + self.COMPILE_PER_BEAM * (width - 1))
            total += per_sentence * count * (1 + self.STEP_PER_BEAM * (width - 1))
        return total / 60


def evaluate_translator(model, preprocessor, pairs, **generate_kwargs):
    """Scores a translator's translations of `pairs` with corpus BLEU.

    Args:
        model: a translator with `generate`.
        preprocessor: the model's `keras_seq.text.TranslationPreprocessor`.
        pairs: list of `(source, reference)` strings.
        **generate_kwargs: passed to `model.generate` (default greedy).

    Returns:
        A dict with `bleu` (cased, sacreBLEU's default), `bleu_lowercase`
        and `hypotheses`.
    """
    hypotheses = translate_texts(
        model, preprocessor, [s for s, _ in pairs], **generate_kwargs
    )
    references = [t for _, t in pairs]
    return {
        "bleu": corpus_bleu(hypotheses, references, lowercase=False),
        "bleu_lowercase": corpus_bleu(hypotheses, references, lowercase=True),
        "hypotheses": hypotheses,
    }


# Sentences a scoring decodes together: as few batch shapes as possible, each
# a compiled loop of its own, within the memory of beams x batch caches.
SCORING_BATCH = 1024


def score_translator(model, preprocessor, pairs, beam_width):
    """Test BLEU of a translator, decoding with `beam_width` beams.

    Args:
        model: a translator with `generate`.
        preprocessor: the model's `keras_seq.text.TranslationPreprocessor`.
        pairs: list of `(source, reference)` strings.
        beam_width: int, 1 decodes greedily.

    Returns:
        `(bleu_scores, hypotheses)`.
    """
    how = decoding_name(beam_width)
    print(f"translating the {len(pairs):,} test sentences, {how}...", flush=True)
    options = {} if beam_width == 1 else {"strategy": "beam", "beam_width": beam_width}
    scores = evaluate_translator(
        model, preprocessor, pairs, batch_size=SCORING_BATCH, **options
    )
    return bleu_scores(scores, beam_width), scores["hypotheses"]
