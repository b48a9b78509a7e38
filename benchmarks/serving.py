"""SavedModel serving: sentences per second through `serving_default`.

Ours only: the peers have no export that takes and returns strings. The
`small` translator (random weights) is exported with
`keras_seq.export.export_translator` over a synthetic 8,000-token
vocabulary, loaded back with `tf.saved_model.load` (as TF Serving would),
and fed batches of sentences of `real_length(length)` words, each one
WordPiece token. The output layer's bias on the end token is pushed down so
that every translation runs all `max_new_tokens` steps: the figure then
measures a fixed amount of work, tokenization and detokenization included.
"""

import tempfile

import numpy as np

from benchmarks import config as config_lib
from benchmarks import timing
from benchmarks.training import OURS, build_keras
from keras_seq import text


def _vocabulary(size):
    reserved = list(text.RESERVED_TOKENS)
    return reserved + [f"w{i}" for i in range(size - len(reserved))]


def _sentences(vocabulary, batch, words, seed):
    rng = np.random.default_rng(seed)
    picks = rng.integers(5, len(vocabulary), (batch, words))
    return [" ".join(vocabulary[i] for i in row) for row in picks]


def measure(config, repeats, batch_sizes=(1, 32), new_tokens=32, min_seconds=0.3):
    """dict batch -> {"ms", "sentences_per_s", "times"} for the SavedModel."""
    # TensorFlow only, and the JAX worker imports this module too.
    import tensorflow as tf

    from keras_seq.export import export_translator

    model = build_keras(OURS, config)
    bias = np.asarray(model.output_dense.bias)
    bias[text.END_ID] = -1e4  # Never end early: a fixed amount of work.
    model.output_dense.bias.assign(bias)
    source_vocabulary = _vocabulary(config["source_vocabulary_size"])
    target_vocabulary = _vocabulary(config["target_vocabulary_size"])
    with tempfile.TemporaryDirectory() as directory:
        preprocessor = text.TranslationPreprocessor(
            text.make_tokenizer(source_vocabulary),
            text.make_tokenizer(target_vocabulary),
            max_length=model.max_length,
        )
        path = export_translator(
            model,
            preprocessor,
            directory,
            max_new_tokens=new_tokens,
        )
        serve = tf.saved_model.load(path).signatures["serving_default"]
        words = config_lib.real_length(config["length"])
        calls = {}
        for batch in batch_sizes:
            sentences = tf.constant(
                _sentences(source_vocabulary, batch, words, seed=batch)
            )
            calls[batch] = lambda s=sentences: serve(sentences=s)["translations"]
        medians = timing.interleaved(calls, repeats, min_seconds=min_seconds)
    return {
        batch: {
            "ms": 1e3 * value["median"],
            "sentences_per_s": batch / value["median"],
            "times": value["times"],
        }
        for batch, value in medians.items()
    }
