"""`tf.data` pipelines that feed `model.fit` for every family of the zoo.

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
from keras_seq.validation import check_positive_int, check_rate

# Bucket lengths start here and grow by this factor, rounded up to a multiple
# of 8 (see `default_bucket_boundaries`).
_FIRST_BUCKET = 8
_BUCKET_GROWTH = 1.5


def default_bucket_boundaries(max_length):
    """Bucket lengths for `make_translation_dataset`, derived from `max_length`.

    Lengths start at 8 and grow by a factor of 1.5, each rounded up to a
    multiple of 8, and end at `max_length`: 8, 16, 24, 40, 64 for
    `max_length=64`; 8, 16, 24, 40, 64, 96, 128 for 128. A batch is padded to
    its bucket's length, so padding wastes at most about a third of a batch,
    and a model compiles at most this many shapes.

    Args:
        max_length: int, the longest sequence: the model's `max_length`.

    Returns:
        A list of increasing ints ending at `max_length`.

    Example:

    >>> default_bucket_boundaries(64)
    [8, 16, 24, 40, 64]
    """
    boundaries = []
    length = _FIRST_BUCKET
    while length < max_length:
        boundaries.append(length)
        length = -(-int(length * _BUCKET_GROWTH) // 8) * 8  # Round up to 8.
    return boundaries + [max_length]


def make_translation_dataset(
    pairs,
    source_tokenizer,
    target_tokenizer,
    max_length,
    batch_tokens=4096,
    batch_size=None,
    shuffle=False,
    seed=0,
    training=False,
    bucket_boundaries=None,
    epoch=None,
    token_dropout=0.0,
):
    """Batches of (source, target) pairs for teacher forcing (Sec. 7.5).

    The target is packed as `[START] ids [END]`; the decoder reads it
    without its last token and learns to predict it without its first, so
    all target positions are trained at once:

        target          [START] ich  bin  da   [END]
        decoder input   [START] ich  bin  da
        labels          ich     bin  da   [END]

    Pairs are grouped by length (`tf.data.Dataset.bucket_by_sequence_length`)
    and every batch is padded to its bucket's length, so each bucket has one
    shape. Sentences longer than `max_length` tokens are truncated (a
    target keeps its `[END]`) and one warning says how many pairs were.

    Args:
        pairs: a list of `(source, target)` string pairs.
        source_tokenizer, target_tokenizer: tokenizers of `make_tokenizer`.
        max_length: int, the longest source and decoder sequence: the
            model's `max_length`.
        batch_tokens: int, the token budget of a batch: a bucket of length
            L holds `max(1, batch_tokens // L)` pairs.
        batch_size: int, a fixed number of pairs per batch instead of
            `batch_tokens`.
        shuffle: bool, shuffle the pairs every epoch (before bucketing).
        seed: int, the shuffle seed.
        epoch: optional `tf.Variable` holding the epoch number (see
            `keras_seq.callbacks.ShuffleEpoch`); each epoch's order
            is then a function of `(seed, epoch)`, so a resumed run replays
            it. Without one, the order follows the passes made so far.
        training: bool. `True` drops each bucket's last, incomplete batch,
            so batch sizes are fixed too (a bucket smaller than one batch
            gives one batch of all its pairs); `False` keeps every pair.
        bucket_boundaries: sorted ints, the lengths batches are padded to; a
            pair whose longer side has n tokens goes to the smallest one
            `>= n`. `max_length` is added if missing. Defaults to
            `default_bucket_boundaries(max_length)`.
        token_dropout: float in [0, 1), word dropout: the share of source
            and decoder-input tokens replaced by `[UNK]` in each batch, drawn
            anew every pass (labels are kept). 0 keeps every token.

    Returns:
        A `tf.data.Dataset` of `(features, labels)`: `features` a dict with
        `"encoder_token_ids"` (B, S) and `"decoder_token_ids"` (B, T),
        `labels` (B, T); all int32, 0-padded, and S == T == a bucket length.
    """
    sources, targets = _check_pairs(pairs)
    max_length = _check_size(max_length, "max_length", minimum=2)
    check_rate(token_dropout, "token_dropout")
    lengths = _check_boundaries(bucket_boundaries, max_length)
    if batch_size is not None:
        batch_size = _check_size(batch_size, "batch_size")
        batch_sizes = [batch_size] * len(lengths)
    else:
        batch_tokens = _check_size(batch_tokens, "batch_tokens")
        batch_sizes = [max(1, batch_tokens // length) for length in lengths]

    source_lengths, source_ids = tokenize_all(sources, source_tokenizer, max_length)
    # StartEndPacker trims to leave room for [START] and [END], so a long
    # target keeps its [END]; it pads to one fixed length, and `_tokenize`
    # drops that padding so that bucketing sees each target's own length.
    packer = keras_hub.layers.StartEndPacker(
        sequence_length=max_length + 1,
        start_value=START_ID,
        end_value=END_ID,
        pad_value=PAD_ID,
    )
    target_lengths, target_ids = tokenize_all(targets, target_tokenizer, pack=packer)
    truncated = (source_lengths > max_length) | (target_lengths > max_length - 1)
    warn_truncated(truncated, "sentence pairs", max_length)

    def split_target(source, target):
        features = {"encoder_token_ids": source, "decoder_token_ids": target[:-1]}
        return features, target[1:]

    dataset = ordered_slices((source_ids, target_ids), shuffle, seed, epoch)
    dataset = map_without_autograph(dataset, split_target)
    longer_sides = np.maximum(
        np.minimum(source_lengths, max_length),
        np.minimum(target_lengths, max_length - 1) + 1,  # decoder input
    )
    if training:
        # A bucket with fewer pairs than its batch size would be dropped
        # whole; its batch shrinks to the pairs it has instead.
        counts = np.bincount(
            np.searchsorted(lengths, longer_sides, side="left"),
            minlength=len(lengths),
        )
        batch_sizes = [max(1, min(b, c)) for b, c in zip(batch_sizes, counts)]
    dataset = _bucket(dataset, longer_sides, lengths, batch_sizes, training)
    if token_dropout:
        dataset = _drop_tokens(dataset, token_dropout, seed)
    return dataset.prefetch(tf.data.AUTOTUNE)


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


def _check_pairs(pairs):
    if isinstance(pairs, (str, bytes)):
        raise TypeError("`pairs` must be a list of (source, target) pairs.")
    pairs = list(pairs)
    if not pairs:
        raise ValueError("`pairs` is empty; expected (source, target) pairs.")
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise TypeError(
                f"`pairs` must hold (source, target) string pairs; item "
                f"{index} is {pair!r}."
            )
    return [source for source, _ in pairs], [target for _, target in pairs]


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


def _check_boundaries(boundaries, max_length):
    """The sorted bucket lengths, ending at `max_length`."""
    if boundaries is None:
        return default_bucket_boundaries(max_length)
    boundaries = [_check_size(value, "bucket_boundaries") for value in boundaries]
    if boundaries != sorted(set(boundaries)) or (
        boundaries and boundaries[-1] > max_length
    ):
        raise ValueError(
            f"`bucket_boundaries` must be strictly increasing lengths of at "
            f"most max_length={max_length}; received {boundaries}."
        )
    if not boundaries or boundaries[-1] < max_length:
        boundaries.append(max_length)
    return boundaries
