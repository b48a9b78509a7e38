"""The model families of `keras-seq`: one table, read by every command.

`FAMILIES` maps a family's name (as `keras-seq train FAMILY` and `run.json`
spell it) to a `Family`: its presets, how `train` trains it on `--data`,
how `evaluate` scores it, how `export` serves it, and whether `translate`
takes it.
"""

import dataclasses
import functools
import math
import os
from collections.abc import Callable

import zoo
from keras_seq import text
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from zoo.cli import corpora
from zoo.recipes import model_dir, plots, tasks, translation


@dataclasses.dataclass(frozen=True)
class Trained:
    """What `train` reports and saves of a trained model.

    Attributes:
        result: the recipe's dict (with `model` and `history`).
        metrics: dict of test figures, saved in `run.json`.
        run: dict of settings the model directory needs (e.g. `max_length`).
        summary: str, the figures in words.
        notes: tuple of str, lines printed after the summary.
    """

    result: dict
    metrics: dict
    run: dict
    summary: str
    notes: tuple = ()


@dataclasses.dataclass(frozen=True)
class Family:
    """What the commands need of one model family.

    Attributes:
        presets: the builder's presets, by name.
        builder: the `zoo.build_<family>` function.
        corpus: `(args) -> corpus`, the data `--data` names, read and
            checked before anything is written.
        train: `(args, corpus, output_dir, common) -> Trained`; `common`
            holds the recipe arguments every family takes.
        evaluate: `(trained, data, args) -> dict` of test figures, where
            `trained` is a `model_dir.TrainedModel` and `data` the corpus.
        export: `(trained, export_dir, version) -> path`, or None where the
            family has no serving signature.
        translates: bool, whether `translate` takes the family.
    """

    presets: dict
    builder: Callable
    corpus: Callable
    train: Callable
    evaluate: Callable
    export: Callable | None = None
    translates: bool = False


def _exporter():
    """`keras_seq.export`, imported on first use.

    It loads keras-hub for its tokenizers, which takes seconds; importing it
    here, not at the top, spares `--help` and a mistyped command line.
    """
    from keras_seq import export

    return export


def bleu_scores(scores, beam_width):
    """`evaluate_translator`'s BLEU under keys that name the decoding.

    Returns:
        `{"bleu_beam4": ..., "bleu_beam4_cased": ...}` for 4 beams,
        `{"bleu_greedy": ..., "bleu_greedy_cased": ...}` for 1.
    """
    name = "bleu_greedy" if beam_width == 1 else f"bleu_beam{beam_width}"
    return {name: scores["bleu"], f"{name}_cased": scores["bleu_cased"]}


def score_translator(model, preprocessor, pairs, beam_width):
    """Test BLEU of a translator, decoding with `beam_width` beams.

    Returns:
        The dict of `bleu_scores`.
    """
    how = "greedily" if beam_width == 1 else f"with {beam_width} beams"
    print(f"translating the {len(pairs):,} test sentences {how}...", flush=True)
    options = {} if beam_width == 1 else {"strategy": "beam", "beam_width": beam_width}
    scores = translation.evaluate_translator(model, preprocessor, pairs, **options)
    return bleu_scores(scores, beam_width)


def _translation_corpus(args):
    return corpora.translation_corpus(args.data, variants=args.variants)


def _train_translator(args, corpus, output_dir, common, family):
    recipe = translation.recipe_arguments(args.recipe, **common)
    if args.average_epochs is not None:
        recipe["average_last_epochs"] = args.average_epochs
    result = translation.train_translator(corpus, output_dir, family=family, **recipe)
    plots.plot_learning_curves(
        result["history"],
        result["bleu_history"],
        os.path.join(output_dir, "learning_curves.png"),
    )
    scores = score_translator(
        result["model"], result["preprocessor"], corpus.test, args.beam_width
    )
    bleu, cased = scores.values()
    how = "greedy" if args.beam_width == 1 else f"{args.beam_width} beams"
    return Trained(
        result,
        metrics={**scores, "train_minutes": result["train_minutes"]},
        run={},
        summary=f"test BLEU {bleu:.2f} (cased {cased:.2f}), {how}",
    )


def _evaluate_translator(trained, data, args):
    pairs = corpora.translation_corpus(data).test
    return score_translator(trained.model, trained.preprocessor, pairs, args.beam_width)


def _export_translator(trained, export_dir, version):
    return _exporter().export_translator(
        trained.model, trained.preprocessor, export_dir, version=version
    )


def _train_classifier(args, corpus, output_dir, common):
    result = tasks.train_classifier(corpus, output_dir, **common)
    return Trained(
        result,
        metrics={"test_accuracy": result["test_accuracy"]},
        run={"max_length": result["max_length"]},
        summary=f"test accuracy {result['test_accuracy']:.1%}",
    )


def _evaluate_classifier(trained, data, args):
    corpus = corpora.sentiment_corpus(data)
    print(f"classifying the {len(corpus.test):,} test texts...", flush=True)
    probabilities = trained.classify([t for t, _ in corpus.test])
    labels = [label for _, label in corpus.test]
    return {"test_accuracy": float((probabilities.argmax(-1) == labels).mean())}


def _export_classifier(trained, export_dir, version):
    return _exporter().export_classifier(
        trained.model,
        trained.tokenizers["text"],
        export_dir,
        version=version,
        max_length=trained.run.get("max_length"),
    )


def _train_language_model(args, corpus, output_dir, common):
    result = tasks.train_language_model(corpus, output_dir, **common)
    prompt = " ".join(corpus.validation[0].split()[:4])
    trained = model_dir.TrainedModel(
        output_dir,
        "language-model",
        result["model"],
        {},
        {"text": result["tokenizer"]},
    )
    sample = trained.generate(prompt, seed=args.seed)
    return Trained(
        result,
        metrics={
            "validation_perplexity": result["validation_perplexity"],
            "test_perplexity": result["test_perplexity"],
        },
        run={"sequence_length": result["sequence_length"]},
        summary=(
            f"validation perplexity {result['validation_perplexity']:.1f}, "
            f"test perplexity {result['test_perplexity']:.1f} (per token)"
        ),
        notes=(f"sample: {sample}",),
    )


def _masked_loss(model, dataset):
    model.compile(loss=MaskedSparseCategoricalCrossentropy())
    return float(model.evaluate(dataset, verbose=0, return_dict=True)["loss"])


def _evaluate_language_model(trained, data, args):
    dataset = text.make_language_model_dataset(
        corpora.text_corpus(data).test,
        trained.tokenizers["text"],
        trained.run.get("sequence_length", 128),
        32,
    )
    return {"test_perplexity": math.exp(_masked_loss(trained.model, dataset))}


def _export_language_model(trained, export_dir, version):
    return _exporter().export_language_model(
        trained.model, trained.tokenizers["text"], export_dir, version=version
    )


def _train_masked_language_model(args, corpus, output_dir, common):
    result = tasks.train_masked_language_model(
        (corpus.train, corpus.validation), output_dir, **common
    )
    accuracy = result["validation_masked_accuracy"]
    return Trained(
        result,
        metrics={"validation_masked_accuracy": accuracy},
        run={},
        summary=f"validation masked-token accuracy {accuracy:.1%}",
    )


def _evaluate_masked_language_model(trained, data, args):
    model = trained.model
    dataset = text.make_masked_language_model_dataset(
        corpora.text_corpus(data).test,
        trained.tokenizers["text"],
        model.get_config()["max_length"],
        64,
    )
    return {"test_masked_loss": _masked_loss(model, dataset)}


FAMILIES = {
    "translator": Family(
        presets=zoo.TRANSLATOR_PRESETS,
        builder=zoo.build_translator,
        corpus=_translation_corpus,
        train=functools.partial(_train_translator, family="translator"),
        evaluate=_evaluate_translator,
        export=_export_translator,
        translates=True,
    ),
    "classifier": Family(
        presets=zoo.CLASSIFIER_PRESETS,
        builder=zoo.build_classifier,
        corpus=lambda args: corpora.sentiment_corpus(args.data),
        train=_train_classifier,
        evaluate=_evaluate_classifier,
        export=_export_classifier,
    ),
    "masked-language-model": Family(
        presets=zoo.ENCODER_PRESETS,
        builder=zoo.build_masked_language_model,
        corpus=lambda args: corpora.text_corpus(args.data),
        train=_train_masked_language_model,
        evaluate=_evaluate_masked_language_model,
    ),
    "language-model": Family(
        presets=zoo.LANGUAGE_MODEL_PRESETS,
        builder=zoo.build_language_model,
        corpus=lambda args: corpora.text_corpus(args.data),
        train=_train_language_model,
        evaluate=_evaluate_language_model,
        export=_export_language_model,
    ),
    "rnn-translator": Family(
        presets=zoo.RNN_TRANSLATOR_PRESETS,
        builder=zoo.build_rnn_translator,
        corpus=_translation_corpus,
        train=functools.partial(_train_translator, family="rnn-translator"),
        evaluate=_evaluate_translator,
        translates=True,
    ),
}
