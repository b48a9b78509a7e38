"""The model families of `keras-seq`: one table, read by every command.

`FAMILIES` maps a family's name (as `keras-seq train FAMILY` and `run.json`
spell it) to a `Family`: its presets, how `train` trains it on `--data`,
how `evaluate` scores it, how `export` serves it, and whether `translate`
takes it.
"""

import dataclasses
import functools
import math
from collections.abc import Callable

import numpy as np

import zoo
from keras_seq import text
from keras_seq.losses import MaskedSparseCategoricalCrossentropy
from zoo.cli import corpora
from zoo.recipes import tasks, translation


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
        train: `(args, output_dir, common) -> Trained`; `common` holds the
            recipe arguments every family takes.
        evaluate: `(loaded, data) -> dict` of test figures, where `loaded`
            is `model_dir.load_model_dir`'s dict and `data` the corpus.
        export: `(loaded, export_dir, version) -> path`, or None where the
            family has no serving signature.
        translates: bool, whether `translate` takes the family.
    """

    presets: dict
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


def _train_translator(args, output_dir, common, family):
    corpus = corpora.translation_corpus(args.data, variants=args.variants)
    result = translation.train_translator(
        corpus,
        output_dir,
        family=family,
        average_last_epochs=args.average_epochs,
        **common,
    )
    scores = translation.evaluate_translator(
        result["model"],
        result["source_tokenizer"],
        result["target_tokenizer"],
        corpus.test,
    )
    return Trained(
        result,
        metrics={
            "bleu": scores["bleu"],
            "bleu_cased": scores["bleu_cased"],
            "train_minutes": result["train_minutes"],
        },
        run={},
        summary=f"test BLEU {scores['bleu']:.2f} (cased {scores['bleu_cased']:.2f})",
    )


def _evaluate_translator(loaded, data):
    tokenizers = loaded["tokenizers"]
    scores = translation.evaluate_translator(
        loaded["model"],
        tokenizers["source"],
        tokenizers["target"],
        corpora.translation_corpus(data).test,
    )
    return {"bleu": scores["bleu"], "bleu_cased": scores["bleu_cased"]}


def _export_translator(loaded, export_dir, version):
    tokenizers = loaded["tokenizers"]
    return _exporter().export_translator(
        loaded["model"],
        tokenizers["source"],
        tokenizers["target"],
        export_dir,
        version=version,
    )


def _train_classifier(args, output_dir, common):
    corpus = corpora.sentiment_corpus(args.data)
    result = tasks.train_classifier(corpus, output_dir, **common)
    return Trained(
        result,
        metrics={"test_accuracy": result["test_accuracy"]},
        run={"max_length": result["max_length"]},
        summary=f"test accuracy {result['test_accuracy']:.1%}",
    )


def _evaluate_classifier(loaded, data):
    corpus = corpora.sentiment_corpus(data)
    model = loaded["model"]
    probabilities = tasks.classify_texts(
        model,
        loaded["tokenizers"]["text"],
        [t for t, _ in corpus.test],
        loaded["run"].get("max_length", model.get_config()["max_length"]),
    )
    labels = [label for _, label in corpus.test]
    return {"test_accuracy": float((probabilities.argmax(-1) == labels).mean())}


def _export_classifier(loaded, export_dir, version):
    return _exporter().export_classifier(
        loaded["model"],
        loaded["tokenizers"]["text"],
        export_dir,
        version=version,
        max_length=loaded["run"].get("max_length"),
    )


def _train_language_model(args, output_dir, common):
    corpus = corpora.text_corpus(args.data)
    result = tasks.train_language_model(corpus, output_dir, **common)
    prompt = " ".join(corpus.validation[0].split()[:4])
    sample = language_model_sample(
        result["model"], result["tokenizer"], prompt, args.seed
    )
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


def language_model_sample(model, tokenizer, prompt, seed, tokens=80):
    """Samples a continuation of `prompt` (top-k 20) from a language model.

    Training lines end with [END]; sampling runs past it, so the sample
    spans several lines.

    Args:
        model: a model of `zoo.build_language_model`.
        tokenizer: the tokenizer of its vocabulary.
        prompt: str, the start of the text.
        seed: int, of the sampler.
        tokens: int, the most new tokens (bounded by the model's
            `max_length`).

    Returns:
        The prompt and its continuation, lines joined by " / ".
    """
    ids = np.asarray(translation.tokenize_to_lists(tokenizer, [prompt]), "int32")
    tokens = min(tokens, model.get_config()["max_length"] - ids.shape[1])
    new = model.generate(
        ids,
        max_new_tokens=tokens,
        strategy="sample",
        top_k=20,
        seed=seed,
        end_token_id=None,
    )
    stream = np.concatenate([ids[0], np.asarray(new)[0]]).tolist()
    lines, line = [], []
    for token in stream + [text.END_ID]:
        if token == text.END_ID:
            lines.append(line)
            line = []
        else:
            line.append(token)
    decoded = text.detokenize(tokenizer, [row or [0] for row in lines])
    return " / ".join(line for line in decoded if line)


def _masked_loss(model, dataset):
    model.compile(loss=MaskedSparseCategoricalCrossentropy())
    return float(model.evaluate(dataset, verbose=0, return_dict=True)["loss"])


def _evaluate_language_model(loaded, data):
    dataset = text.make_language_model_dataset(
        corpora.text_corpus(data).test,
        loaded["tokenizers"]["text"],
        loaded["run"].get("sequence_length", 128),
        32,
    )
    return {"test_perplexity": math.exp(_masked_loss(loaded["model"], dataset))}


def _export_language_model(loaded, export_dir, version):
    return _exporter().export_language_model(
        loaded["model"], loaded["tokenizers"]["text"], export_dir, version=version
    )


def _train_masked_language_model(args, output_dir, common):
    corpus = corpora.text_corpus(args.data)
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


def _evaluate_masked_language_model(loaded, data):
    model = loaded["model"]
    dataset = text.make_masked_language_model_dataset(
        corpora.text_corpus(data).test,
        loaded["tokenizers"]["text"],
        model.get_config()["max_length"],
        64,
    )
    return {"test_masked_loss": _masked_loss(model, dataset)}


FAMILIES = {
    "translator": Family(
        presets=zoo.TRANSLATOR_PRESETS,
        train=functools.partial(_train_translator, family="translator"),
        evaluate=_evaluate_translator,
        export=_export_translator,
        translates=True,
    ),
    "classifier": Family(
        presets=zoo.CLASSIFIER_PRESETS,
        train=_train_classifier,
        evaluate=_evaluate_classifier,
        export=_export_classifier,
    ),
    "masked-language-model": Family(
        presets=zoo.ENCODER_PRESETS,
        train=_train_masked_language_model,
        evaluate=_evaluate_masked_language_model,
    ),
    "language-model": Family(
        presets=zoo.LANGUAGE_MODEL_PRESETS,
        train=_train_language_model,
        evaluate=_evaluate_language_model,
        export=_export_language_model,
    ),
    "rnn-translator": Family(
        presets=zoo.RNN_TRANSLATOR_PRESETS,
        train=functools.partial(_train_translator, family="rnn-translator"),
        evaluate=_evaluate_translator,
        translates=True,
    ),
}
