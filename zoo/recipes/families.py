"""The model families: one table, read by every command and recipe.

`FAMILIES` maps a family's name (as `keras-seq train FAMILY` and `run.json`
spell it) to a `Family`: its builder and presets, its settings, its
vocabularies, and the recipe functions that read its data, train, score and
serve it. `train`, `evaluate` and `export` are what the commands call.
"""

import dataclasses
import functools
import sys
from collections.abc import Callable

import zoo
from zoo.recipes import corpora, run_dir, runtime, settings, tasks, translation
from zoo.recipes.inputs import UsageError, reported_as_usage


@dataclasses.dataclass(frozen=True)
class Family:
    """What the application needs of one model family.

    Attributes:
        builder: the `zoo.build_<family>` function.
        presets: the builder's presets, by name.
        settings: the recipe's settings dataclass (its defaults).
        vocabularies: the keys of its vocabularies, `("source", "target")`
            for translators, `("text",)` otherwise (`run_dir.vocabulary_file`).
        read_corpus: `(data, settings) -> corpus`, the data `--data` names,
            read and checked before anything is written.
        train: `(corpus, output_dir, settings, *, verbose, strategy)` ->
            the recipe's typed result, scored on the test split.
        evaluate: `(trained, corpus, settings) -> dict` of test figures,
            where `trained` is a `model_dir.TrainedModel`.
        export: `(trained, export_dir, version) -> path`, where `trained`
            has the `model`, `tokenizers` and `run` of a
            `model_dir.TrainedModel` (and a translator's `preprocessor`), or
            None where the family has no serving signature.
    """

    builder: Callable
    presets: dict
    settings: type
    vocabularies: tuple
    read_corpus: Callable
    train: Callable
    evaluate: Callable
    export: Callable | None = None

    @property
    def translates(self):
        """Whether `translate` takes the family (it has a source side)."""
        return "source" in self.vocabularies


def _exporter():
    """`keras_seq.export`, imported on first use.

    It loads keras-hub for its tokenizers, which takes seconds; importing it
    here, not at the top, spares `--help` and a mistyped command line.
    """
    from keras_seq import export

    return export


def _read_translation(data, chosen):
    return corpora.translation_corpus(
        data, chosen.variants, chosen.phrases, chosen.train_pairs, chosen.seed
    )


# Each export takes the run's own preprocessor (its saved lengths and
# buckets), so the served graph cuts and pads as training and the
# in-process API did.


def _export_translator(trained, export_dir, version):
    return _exporter().export_translator(
        trained.model, trained.preprocessor, export_dir, version=version
    )


def _export_classifier(trained, export_dir, version):
    return _exporter().export_classifier(
        trained.model, trained.preprocessor, export_dir, version=version
    )


def _export_language_model(trained, export_dir, version):
    return _exporter().export_language_model(
        trained.model, trained.preprocessor, export_dir, version=version
    )


def _run_classifier(corpus, output_dir, chosen, *, verbose, strategy):
    return tasks.train_classifier(
        corpus, output_dir, chosen, verbose=verbose, strategy=strategy
    )


def _run_language_model(corpus, output_dir, chosen, *, verbose, strategy):
    result = tasks.train_language_model(
        corpus, output_dir, chosen, verbose=verbose, strategy=strategy
    )
    prompt = " ".join(corpus.validation[0].split()[:4])
    sample = tasks.generate_text(
        result.model,
        result.preprocessor,
        prompt,
        None,
        tasks.SAMPLE_TOP_K,
        None,
        chosen.seed,
    )
    return dataclasses.replace(result, sample=sample)


def _run_masked_language_model(corpus, output_dir, chosen, *, verbose, strategy):
    return tasks.train_masked_language_model(
        (corpus.train, corpus.validation), output_dir, chosen,
        verbose=verbose, strategy=strategy,
    )  # fmt: skip


def _translator(builder, presets, **served):
    return Family(
        builder=builder,
        presets=presets,
        settings=settings.TranslatorSettings,
        vocabularies=("source", "target"),
        read_corpus=_read_translation,
        train=functools.partial(
            translation.run_translator, builder=builder, presets=presets
        ),
        evaluate=translation.evaluate,
        **served,
    )


def _text_corpus(data, chosen):
    return corpora.text_corpus(data)


FAMILIES = {
    "translator": _translator(
        zoo.build_translator, zoo.TRANSLATOR_PRESETS, export=_export_translator
    ),
    "classifier": Family(
        builder=zoo.build_classifier,
        presets=zoo.CLASSIFIER_PRESETS,
        settings=settings.ClassifierSettings,
        vocabularies=("text",),
        read_corpus=lambda data, chosen: corpora.sentiment_corpus(data),
        train=_run_classifier,
        evaluate=tasks.evaluate_classifier,
        export=_export_classifier,
    ),
    "masked-language-model": Family(
        builder=zoo.build_masked_language_model,
        presets=zoo.ENCODER_PRESETS,
        settings=settings.MaskedLanguageModelSettings,
        vocabularies=("text",),
        read_corpus=_text_corpus,
        train=_run_masked_language_model,
        evaluate=tasks.evaluate_masked_language_model,
    ),
    "language-model": Family(
        builder=zoo.build_language_model,
        presets=zoo.LANGUAGE_MODEL_PRESETS,
        settings=settings.LanguageModelSettings,
        vocabularies=("text",),
        read_corpus=_text_corpus,
        train=_run_language_model,
        evaluate=tasks.evaluate_language_model,
        export=_export_language_model,
    ),
    "rnn-translator": _translator(
        zoo.build_rnn_translator,
        zoo.RNN_TRANSLATOR_PRESETS,
        export=_export_translator,
    ),
}
TRANSLATORS = tuple(name for name, family in FAMILIES.items() if family.translates)
SERVED = tuple(name for name, family in FAMILIES.items() if family.export)


def verbose():
    """Keras' `verbose`: a progress bar on a terminal, one line per epoch in a log."""
    return 1 if sys.stdout.isatty() else 2


def announce_resume(output_dir, resumed, epochs):
    """Says that training picks up an interrupted run, and where.

    Raises:
        UsageError: when the interrupted run already finished `epochs`.
    """
    if resumed >= epochs:
        raise UsageError(
            f"--epochs {epochs}: the interrupted run in {output_dir} already "
            f"finished {resumed} epochs; pass a larger --epochs to go on."
        )
    if resumed:
        print(
            f"resuming the interrupted run in {output_dir} after epoch "
            f"{resumed} (of at most {epochs})",
            flush=True,
        )


@dataclasses.dataclass(frozen=True)
class Runtime:
    """How a run uses the machine; none of it changes what the run is but
    `precision`.

    Attributes:
        strategy: str, one of `runtime.STRATEGIES`.
        precision: str, one of `runtime.PRECISIONS`.
        deterministic: bool, TensorFlow op determinism.
    """

    strategy: str = "none"
    precision: str = "float32"
    deterministic: bool = False


def train(name, data, output_dir, chosen, *, overwrite=False, machine=None,
          corpus=None):  # fmt: skip
    """Trains family `name` on `data` and writes its run directory.

    The data is read and checked, and `output_dir` claimed
    (`run_dir.claim`), before anything is written; no other run may use the
    directory until this one ends. The recipe trains, scores the test split
    and draws its figures; `run_dir.save` then writes the model and
    `run.json`.

    Args:
        name: str, a key of `FAMILIES`.
        data: str or None, what `--data` names (None: the family's corpus).
        output_dir: str.
        chosen: the family's settings (`Family.settings`).
        overwrite: bool, replace a finished run or another run's backup.
        machine: a `Runtime`, or None for its defaults.
        corpus: the corpus already read, or None to read `data`.

    Returns:
        The recipe's typed result.

    Raises:
        UsageError: for data, a directory or a strategy the user must fix.
    """
    family = FAMILIES[name]
    machine = machine or Runtime()
    corpus = corpus or family.read_corpus(data, chosen)
    identity = {
        "family": name, "data": data, "precision": machine.precision,
        **chosen.identity(),
    }  # fmt: skip
    resumed = run_dir.claim(output_dir, identity, overwrite)
    try:
        # A strategy the backend cannot run (mirrored on JAX) is the user's
        # to fix; it is made before any other op.
        with reported_as_usage(ValueError):
            strategy = runtime.make_strategy(machine.strategy)
        if machine.deterministic:
            runtime.make_deterministic(chosen.seed)
        runtime.set_precision(machine.precision)
        announce_resume(output_dir, resumed, chosen.epochs)
        result = family.train(
            corpus, output_dir, chosen, verbose=verbose(), strategy=strategy
        )
        record = {
            k: round(v, 4) if isinstance(v, float) else v
            for k, v in result.record().items()
        }
        record["params"] = int(result.model.count_params())
        record["epochs"] = resumed + len(result.history.get("loss", ()))
        run = {"data": data, "preset": chosen.preset, "seed": chosen.seed}
        if chosen.overrides:
            run["overrides"] = chosen.overrides
        run_dir.save(
            output_dir, name, result.model, {**run, **record}, family.vocabularies
        )
        return result
    finally:
        run_dir.release(output_dir)


def evaluate(trained, data, chosen):
    """The test figures of a loaded model directory on `data`'s test split
    (None: the data it was trained on), rounded to 4 places."""
    family = FAMILIES[trained.family]
    corpus = family.read_corpus(data or trained.run.get("data"), chosen)
    figures = family.evaluate(trained, corpus, chosen)
    return {k: round(v, 4) for k, v in figures.items()}


def export(trained, export_dir, version):
    """Writes `<export_dir>/<version>/` from a loaded model directory.

    Returns:
        The version's path.

    Raises:
        ValueError: when the family is not served, or the version exists.
    """
    family = FAMILIES[trained.family]
    if family.export is None:
        raise ValueError(
            f"`export` serves {', '.join(SERVED)} directories; "
            f"{trained.path} holds a {trained.family}."
        )
    return family.export(trained, export_dir, version)
