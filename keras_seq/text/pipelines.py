"""`tf.data` pipelines that feed `model.fit` for every family of the zoo.

The translation pipeline is `TranslationPreprocessor.dataset`
(`keras_seq.text.translation_preprocessor`), which uses the bucketing and
word dropout steps below.

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

import keras_hub
import numpy as np
import tensorflow as tf

from keras_seq.text.dataset_ops import (
    map_without_autograph,
    ordered_slices,
    tokenize_all,
    warn_truncated,
)
from keras_seq.text.vocabulary import (
    END_ID,
    MASK_ID,
    PAD_ID,
    RESERVED_TOKENS,
    START_ID,
    UNK_ID,
    _check_texts,
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


def make_classification_dataset(
    texts,
    labels,
    tokenizer,
    max_length,
    batch_size,
    shuffle=False,
    seed=0,
    epoch=None,
    drop_remainder=False,
):
    """Batches of `(token_ids, labels)` for an encoder classifier.

    Args:
        texts: a list of strings.
        labels: one label per text: class ids (ints) or scores (floats),
            shape (N,) or (N, K).
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int; every batch is padded to this length and longer
            texts are truncated (one warning says how many).
        batch_size: int.
        shuffle: bool, shuffle every epoch.
        seed: int, the shuffle seed.
        epoch: optional `tf.Variable` holding the epoch number (see
            `keras_seq.callbacks.ShuffleEpoch`); each epoch's order
            is then a function of `(seed, epoch)`, so a resumed run replays
            it. Without one, the order follows the passes made so far.
        drop_remainder: bool, drop the last, incomplete batch.

    Returns:
        A `tf.data.Dataset` of `(token_ids (B, max_length) int32, labels)`,
        labels int32 for ints and float32 for floats.
    """
    texts = _check_texts(texts)
    max_length = _check_size(max_length, "max_length")
    batch_size = _check_size(batch_size, "batch_size")
    labels = np.asarray(labels)
    if labels.ndim == 0 or len(labels) != len(texts):
        raise ValueError(
            f"`labels` must hold one label per text ({len(texts)}); received "
            f"shape {labels.shape}."
        )
    if labels.dtype.kind in "iub":
        labels = labels.astype("int32")
    elif labels.dtype.kind == "f":
        labels = labels.astype("float32")
    else:
        raise ValueError(
            f"`labels` must be integers or floats; received dtype {labels.dtype}."
        )
    lengths, token_ids = tokenize_all(texts, tokenizer, max_length)
    warn_truncated(lengths > max_length, "texts", max_length)

    dataset = ordered_slices((token_ids, labels), shuffle, seed, epoch)
    dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)

    def pad(token_ids, labels):  # (B, None) ragged -> (B, max_length)
        return token_ids.to_tensor(PAD_ID, shape=[None, max_length]), labels

    dataset = map_without_autograph(dataset, pad)
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_language_model_dataset(
    texts,
    tokenizer,
    sequence_length,
    batch_size,
    shuffle=False,
    seed=0,
    epoch=None,
    drop_remainder=False,
    separator_id=END_ID,
):
    """Windows of a token stream for a causal language model.

    The texts are tokenized and concatenated into one stream, each followed
    by `separator_id` (`[END]`, so a model learns where a text ends and
    `generate` can stop there). The stream is cut into windows of
    `sequence_length + 1` tokens that start every `sequence_length` tokens,
    so consecutive windows share one token and every token but the first is
    a label exactly once; the last, partial window is dropped:

        window      w0 w1 w2 w3 w4
        token_ids   w0 w1 w2 w3
        labels      w1 w2 w3 w4

    Args:
        texts: a list of strings (lines, paragraphs or whole works).
        tokenizer: a tokenizer of `make_tokenizer`.
        sequence_length: int, T.
        batch_size: int.
        shuffle: bool, shuffle the windows every epoch.
        seed: int, the shuffle seed.
        epoch: optional `tf.Variable` holding the epoch number (see
            `keras_seq.callbacks.ShuffleEpoch`); each epoch's order
            is then a function of `(seed, epoch)`, so a resumed run replays
            it. Without one, the order follows the passes made so far.
        drop_remainder: bool, drop the last, incomplete batch.
        separator_id: int or `None`, the id put after each text.

    Returns:
        A `tf.data.Dataset` of `(token_ids, labels)`, both (B, T) int32.
    """
    texts = _check_texts(texts)
    sequence_length = _check_size(sequence_length, "sequence_length")
    batch_size = _check_size(batch_size, "batch_size")
    _, token_ids = tokenize_all(texts, tokenizer)
    if separator_id is not None:
        separators = tf.fill([len(texts), 1], tf.constant(separator_id, "int32"))
        token_ids = tf.concat([token_ids, separators], axis=1)
    stream = token_ids.flat_values.numpy()
    num_windows = (len(stream) - 1) // sequence_length
    if num_windows < 1:
        raise ValueError(
            f"`texts` hold {len(stream)} tokens; a window of "
            f"`sequence_length` + 1 = {sequence_length + 1} needs more."
        )
    starts = np.arange(num_windows)[:, None] * sequence_length  # (W, 1)
    windows = stream[starts + np.arange(sequence_length + 1)]  # (W, T + 1)

    dataset = ordered_slices((windows[:, :-1], windows[:, 1:]), shuffle, seed, epoch)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.prefetch(tf.data.AUTOTUNE)


def make_masked_language_model_dataset(
    texts,
    tokenizer,
    max_length,
    batch_size,
    mask_rate=0.15,
    seed=0,
    shuffle=False,
    epoch=None,
    drop_remainder=False,
):
    """Batches for masked language modelling (BERT's fill-in task).

    `keras_hub.layers.MaskedLMMaskGenerator` selects `ceil(mask_rate * n)`
    of the n tokens of each text (so short texts are masked slightly more
    often than `mask_rate`) and replaces 80% of them by `[MASK]`, 10% by a
    random token and leaves 10% unchanged (Devlin et al., 2019). Masks are
    drawn anew for every batch and epoch (dynamic masking); they follow
    TensorFlow's global seed (`keras.utils.set_random_seed`), since the
    keras-hub layer takes no seed of its own.

    Args:
        texts: a list of strings.
        tokenizer: a tokenizer of `make_tokenizer`.
        max_length: int; every batch is padded to this length and longer
            texts are truncated (one warning says how many).
        batch_size: int.
        mask_rate: float in (0, 1), the share of tokens selected.
        seed: int, the shuffle seed.
        epoch: optional `tf.Variable` holding the epoch number (see
            `keras_seq.callbacks.ShuffleEpoch`); each epoch's order
            is then a function of `(seed, epoch)`, so a resumed run replays
            it. Without one, the order follows the passes made so far.
        shuffle: bool, shuffle the texts every epoch.
        drop_remainder: bool, drop the last, incomplete batch.

    Returns:
        A `tf.data.Dataset` of `(token_ids, labels)`, both (B, max_length)
        int32: `labels` holds the original id at selected positions and 0
        (ignored by the loss) everywhere else.
    """
    texts = _check_texts(texts)
    max_length = _check_size(max_length, "max_length")
    batch_size = _check_size(batch_size, "batch_size")
    if not 0.0 < mask_rate < 1.0:
        raise ValueError(f"`mask_rate` must be in (0, 1); received {mask_rate}.")
    lengths, token_ids = tokenize_all(texts, tokenizer, max_length)
    warn_truncated(lengths > max_length, "texts", max_length)
    masker = keras_hub.layers.MaskedLMMaskGenerator(
        vocabulary_size=tokenizer.vocabulary_size(),
        mask_selection_rate=mask_rate,
        mask_token_id=MASK_ID,
        unselectable_token_ids=[PAD_ID, START_ID, END_ID, MASK_ID],
    )

    def mask(batch):  # (B, None) ragged.
        masked = masker(batch)
        # A random replacement may draw [PAD]; inside a text it would read
        # as padding, so it becomes [MASK] instead.
        inputs = tf.ragged.map_flat_values(
            lambda ids: tf.where(ids == PAD_ID, MASK_ID, ids), masked["token_ids"]
        )
        positions = masked["mask_positions"]  # (B, None) ragged
        indices = tf.stack(
            [positions.value_rowids(), tf.cast(positions.flat_values, "int64")],
            axis=-1,
        )
        shape = tf.stack([inputs.nrows(), tf.constant(max_length, "int64")])
        labels = tf.scatter_nd(indices, masked["mask_ids"].flat_values, shape)
        inputs = inputs.to_tensor(default_value=PAD_ID, shape=[None, max_length])
        return inputs, labels  # (B, max_length) each

    dataset = ordered_slices(token_ids, shuffle, seed, epoch)
    dataset = dataset.ragged_batch(batch_size, drop_remainder=drop_remainder)
    dataset = map_without_autograph(dataset, mask)
    return dataset.prefetch(tf.data.AUTOTUNE)


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
