"""`keras-seq demo`: the translator recipe with the demo's settings
(`settings.DEMO`) on trans-de-en, and what the demo shows besides.

`run` trains through `workflow.train` as `keras-seq train translator`
does, then `show`: a cross-attention map (`attention.png`), the run's
figures as `metrics.json`, and a new exported SavedModel version that
translates sample sentences again, as TF Serving would.
"""

import dataclasses
import random

import numpy as np
import tensorflow as tf

from keras_seq.text import END_ID, PAD_ID, START_ID
from zoo.recipes import corpora, plots, run_dir, saved_model, workflow
from zoo.recipes.translator import RECIPE, TranslatorResult

SAMPLES = 8


@dataclasses.dataclass(frozen=True)
class DemoResult:
    """The trained translator and what the demo shows of it.

    Attributes:
        trained: the recipe's `translator.TranslatorResult`.
        metrics: dict, the contents of `metrics.json`.
        samples: list of `(source, reference, translation)` test triples.
        served: list of str, the first samples translated through the
            exported `serving_default`.
        export_path: str, the exported version.
        served_same: int, samples whose served translation equals the
            greedy one in process.
    """

    trained: TranslatorResult
    metrics: dict
    samples: list
    served: list
    export_path: str
    served_same: int


def run(corpus_path, output_dir, chosen, *, overwrite=False):
    """Trains the demo's translator into `output_dir` and shows it.

    Args:
        corpus_path: str or None, the trans-de-en dictionary (None: the
            installed one).
        output_dir: str.
        chosen: a `TranslatorSettings` (`settings.DEMO` with the flags).
        overwrite: bool, replace a finished run or another run's backup.

    Returns:
        A `DemoResult`.
    """
    corpus = corpora.translation_corpus(
        corpus_path, chosen.variants, chosen.phrases, chosen.train_pairs,
        chosen.seed, dictionary=True,
    )  # fmt: skip
    trained = workflow.train(
        RECIPE.name, corpus_path, output_dir, chosen, overwrite=overwrite,
        corpus=corpus,
    )  # fmt: skip
    return show(trained, corpus, output_dir, chosen)


def show(trained, corpus, output_dir, chosen):
    """The attention map, `metrics.json`, and samples served by a newly
    exported SavedModel version."""
    directory = run_dir.RunDir(output_dir)
    plot_attention(trained, corpus, directory.attention_path)
    # The run's own record (`run.json`, written once by `RunDir.save`), so
    # that both files give the same epochs after a resumed run.
    run = directory.read_run((RECIPE.name,))
    metrics = {
        **{k: run[k] for k in run if k not in ("family", "vocabulary_sha256")},
        "vocabulary_minutes": trained.vocabulary_minutes,
        "bleu_history": trained.bleu_history,
        "test_pairs": len(corpus.test),
    }
    directory.write_metrics(metrics)
    picks = random.Random(chosen.seed).sample(
        range(len(corpus.test)), min(SAMPLES, len(corpus.test))
    )
    (beam,) = [v for k, v in trained.test_hypotheses.items() if k != "greedy"] or [
        trained.test_hypotheses["greedy"]
    ]
    samples = [(*corpus.test[i], beam[i]) for i in picks]
    export_root, version = directory.next_export_version()
    export = RECIPE.export
    path = export(trained, export_root, version)
    served = saved_model.serve(path, [source for source, _, _ in samples])
    # `serving_default` decodes greedily: compare with the greedy outputs.
    greedy = trained.test_hypotheses.get("greedy", beam)
    same = sum(a == greedy[i] for a, i in zip(served, picks))
    return DemoResult(trained, metrics, samples, served, path, same)


def plot_attention(trained, corpus, path):
    """The cross attention of the last decoder block (mean of heads) for one
    test sentence of middling length, so the alignment has room to show."""
    model = trained.model
    source = next(
        (s for s, _ in corpus.test if 7 <= len(s.split()) <= 10), corpus.test[0][0]
    )
    # Tokenized and cut as every path tokenizes, then without the padding.
    padded = np.asarray(trained.preprocessor.generate_preprocess(tf.constant([source])))
    source_ids = padded[:, padded[0] != PAD_ID]
    output = np.asarray(model.generate(source_ids))[0].tolist()
    output = output[: output.index(END_ID) + 1] if END_ID in output else output
    decoder_ids = np.asarray([[START_ID] + output[:-1]], "int32")
    weights = np.asarray(model.cross_attention_weights(source_ids, decoder_ids))
    vocab_s = trained.source_tokenizer.get_vocabulary()
    vocab_t = trained.target_tokenizer.get_vocabulary()
    plots.plot_attention(
        weights[0].mean(axis=0),
        [vocab_s[i] for i in source_ids[0]],
        [vocab_t[i] for i in output],
        path,
        title="Cross attention, last decoder block (mean of heads)",
    )
