"""The batching steps of the `tf.data` pipelines that feed `model.fit`.

Each family's pipeline is its preprocessor's `dataset`
(`TranslationPreprocessor`, `ClassificationPreprocessor`,
`LanguageModelPreprocessor`, `MaskedLanguageModelPreprocessor`); the
translation pipeline uses the bucketing and word dropout steps below.

Shape legend:
    B: batch size
    S: source length
    T: target (or sequence) length

Every pipeline tokenizes its texts once, eagerly, before the dataset is
built, and then only slices ids (`keras_seq.text.dataset_ops`), instead of
re-tokenizing every epoch. Ids are int32 and 0 is padding everywhere; the
losses of keras-seq ignore label 0.

Shapes are kept few so that XLA (`jit_compile=True`) compiles a handful of
graphs, not one per batch: translation batches are padded to the boundary of
their length bucket, the other pipelines to their fixed length.
"""

import numpy as np
import tensorflow as tf

from keras_seq.text.vocabulary import (
    RESERVED_TOKENS,
    UNK_ID,
)
from keras_seq.validation import check_positive_int


def _drop_tokens(dataset, rate, seed):
    """Word dropout: replaces a `rate` share of input tokens by `[UNK]`.

    Hiding words from the encoder and from the decoder's history makes the
    model lean on the rest of the sentence; on small corpora it is one of
    the regularisers that matter most (Sennrich & Zhang, 2019, after Gal &
    Ghahramani, 2016, who drop a word's embedding; `[UNK]` is that with an
    embedding of its own). Reserved tokens (padding, `[START]`, `[END]`)
    are kept, so lengths, masks and labels do not change.

    `Dataset.random` draws a seed per batch, anew on every pass.
    """
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)

    def drop(batch, batch_seed):
        features, labels = batch
        stateless_seed = tf.stack([batch_seed, tf.constant(seed, tf.int64)])
        dropped = {}
        for i, (name, ids) in enumerate(sorted(features.items())):
            keep = (
                tf.random.stateless_uniform(tf.shape(ids), stateless_seed + i) >= rate
            )
            keep |= ids < len(RESERVED_TOKENS)
            dropped[name] = tf.where(keep, ids, tf.constant(UNK_ID, ids.dtype))
        return dropped, labels

    dataset = tf.data.Dataset.zip(dataset, seeds)
    return dataset.map(tf.autograph.experimental.do_not_convert(drop))


def _bucket(dataset, example_lengths, bucket_lengths, batch_sizes, training):
    """Batches translation examples by length, padded to their bucket."""

    def longer_side(features, labels):
        return tf.maximum(tf.size(features["encoder_token_ids"]), tf.size(labels))

    # A bucket (previous length, length] is padded to `length`. TensorFlow's
    # boundaries are exclusive upper bounds, and its extra last bucket
    # (longer than max_length) stays empty.
    dataset = dataset.bucket_by_sequence_length(
        element_length_func=longer_side,
        bucket_boundaries=[length + 1 for length in bucket_lengths],
        bucket_batch_sizes=batch_sizes + [1],
        pad_to_bucket_boundary=True,
        drop_remainder=training,
    )
    # Bucketing hides the number of batches from tf.data; stating it lets
    # Keras show progress and spares its "ran out of data" warning.
    buckets = np.searchsorted(bucket_lengths, example_lengths, side="left")
    counts = np.bincount(buckets, minlength=len(bucket_lengths))
    if training:
        num_batches = sum(c // b for c, b in zip(counts, batch_sizes))
    else:
        num_batches = sum(-(-c // b) for c, b in zip(counts, batch_sizes))
    return dataset.apply(tf.data.experimental.assert_cardinality(int(num_batches)))


def _check_size(value, name, minimum=1):
    """`value` as a Python int of at least `minimum`, else a `ValueError`.

    NumPy integers are accepted too, as sizes and bucket lengths are often
    computed with NumPy.
    """
    if isinstance(value, np.integer):
        value = int(value)
    check_positive_int(value, name)
    if value < minimum:
        raise ValueError(f"`{name}` must be at least {minimum}; received {value}.")
    return value
