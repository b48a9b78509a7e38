"""The `tf.data` steps that every pipeline of `keras_seq.text.pipelines` shares.

Each pipeline tokenizes its texts once, eagerly, in one batched `tf.data`
pass (`tokenize_all`), before its dataset is built: that pass counts the
texts that will be truncated, so one warning can say how many
(`warn_truncated`), and the dataset then only slices ids instead of
re-tokenizing every epoch. The slices come in an order that is a function of
the seed and the epoch number (`ordered_slices`), so a resumed run replays
the epochs an uninterrupted one would have seen.
"""

import warnings

import numpy as np
import tensorflow as tf

from keras_seq.text.vocabulary import PAD_ID

# Texts tokenized per `tf.data` step of `tokenize_all`.
TOKENIZE_BATCH = 2048


class TruncationWarning(UserWarning):
    """Some texts were longer than a model's `max_length` and were cut."""


def ordered_slices(tensors, shuffle, seed, epoch):
    """`Dataset.from_tensor_slices(tensors)`, in a new order every epoch.

    tf.data's `shuffle(reshuffle_each_iteration=True)` draws each epoch's
    order from the number of passes the process has made, so a run resumed
    at epoch k by `BackupAndRestore` would replay epoch 0's order and end
    with other weights. Here the order is a stateless permutation of
    `(seed, epoch)`; without an `epoch` variable a counter of passes
    (incremented when a pass begins) stands in for it.

    Args:
        tensors: a tensor, array or nest of them, sliced along axis 0.
        shuffle: bool; `False` keeps the order of `tensors`.
        seed: int, the shuffle seed.
        epoch: optional `tf.Variable` holding the epoch number (see
            `keras_seq.callbacks.ShuffleEpoch`), or `None`.

    Returns:
        A `tf.data.Dataset` of the slices, whose `cardinality()` is their
        number.

    Example:

    >>> dataset = ordered_slices(np.arange(4), shuffle=True, seed=0, epoch=None)
    >>> sorted(int(x) for x in dataset)
    [0, 1, 2, 3]
    """
    dataset = tf.data.Dataset.from_tensor_slices(tensors)
    if not shuffle:
        return dataset
    size = int(dataset.cardinality())

    def order(number):
        seed_pair = tf.stack([tf.constant(seed, "int64"), number])
        permutation = tf.random.experimental.stateless_shuffle(
            tf.range(size, dtype="int64"), seed=seed_pair
        )
        return tf.data.Dataset.from_tensor_slices(permutation)

    def take(index):
        return tf.nest.map_structure(lambda t: tf.gather(t, index), tensors)

    indices = epoch_numbers(epoch).flat_map(order)
    # `flat_map` hides the length from tf.data; without it Keras learns an
    # epoch's length by running out of data, with its "Your input ran out of
    # data" warning, and a multi-worker split cannot cut the batches evenly.
    indices = indices.apply(tf.data.experimental.assert_cardinality(size))
    return indices.map(take, num_parallel_calls=tf.data.AUTOTUNE)


def epoch_numbers(epoch):
    """A dataset of one int64 scalar per pass over it: the value of `epoch`
    when the pass begins, or, with `epoch=None`, the number of passes begun
    before it.

    Args:
        epoch: optional `tf.Variable` holding the epoch number (see
            `keras_seq.callbacks.ShuffleEpoch`), or `None`.
    """
    if epoch is None:
        passes = tf.Variable(-1, dtype="int64", trainable=False)

        def epoch_number(_):
            return passes.assign_add(1)
    else:

        def epoch_number(_):
            return tf.cast(epoch, "int64")

    return tf.data.Dataset.from_tensors(0).map(epoch_number)


def tokenize_all(texts, tokenizer, max_length=None, pack=None):
    """Tokenizes all texts in one batched pass.

    Args:
        texts: a list of strings.
        tokenizer: a tokenizer of `make_tokenizer`, or a function from a
            (b,) string tensor to ragged (b, None) ids (such as
            `TranslationPreprocessor.tokenize_source`).
        max_length: optional int; the ids of each text are cut to it.
        pack: optional layer applied to each batch of ragged ids instead of
            the cut, such as a `keras_hub.layers.StartEndPacker`; its
            padding is dropped again.

    Returns:
        `(lengths, ids)`: a NumPy array of the token counts before any
        truncation, and a ragged (N, None) int32 tensor of the ids, cut to
        `max_length` or passed through `pack`.
    """

    tokenize_batch = getattr(tokenizer, "tokenize", tokenizer)

    def tokenize(batch):
        ids = tf.cast(tokenize_batch(batch), "int32")  # (b, None) ragged
        lengths = ids.row_lengths()
        if pack is not None:
            ids = tf.RaggedTensor.from_tensor(pack(ids), padding=PAD_ID)
        elif max_length is not None:
            ids = ids[:, :max_length]
        return lengths, ids

    # Inside `map` the keras-hub layers take their TensorFlow path; called
    # eagerly they would run their (slow) pure-Python path.
    dataset = tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string))
    dataset = map_without_autograph(dataset.batch(TOKENIZE_BATCH), tokenize)
    lengths, ids = [], []
    for batch_lengths, batch_ids in dataset:  # `map` keeps the order.
        lengths.append(batch_lengths.numpy())
        ids.append(batch_ids)
    return np.concatenate(lengths), tf.concat(ids, axis=0)


def map_without_autograph(dataset, function):
    """`dataset.map(function)` in parallel, without autograph.

    None of the pipelines' map functions (nor the keras-hub layers they
    call) has data-dependent Python control flow, so autograph has nothing
    to convert, and skipping it spares the conversion at every trace.

    Args:
        dataset: a `tf.data.Dataset`.
        function: the function to map.

    Returns:
        The mapped `tf.data.Dataset`, in the order of `dataset`.
    """
    function = tf.autograph.experimental.do_not_convert(function)
    return dataset.map(function, num_parallel_calls=tf.data.AUTOTUNE)


def strings_graph(fn):
    """`fn` of a (B,) `tf.string` tensor under `tf.function`, traced once.

    Without autograph, as `map_without_autograph`: the tokenizers have no
    data-dependent Python control flow (the exported graphs trace them
    without it), and converting keras-hub's functions is most of a first
    call's tracing.
    """
    return tf.function(
        fn, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
    )


def warn_truncated(truncated, what, max_length):
    """Warns once (`TruncationWarning`), saying how many items were cut.

    Args:
        truncated: a boolean array, one entry per item.
        what: the items' name in the message, e.g. `"texts"`.
        max_length: int, the length they were cut to.
    """
    count = int(np.sum(truncated))
    if count:
        warnings.warn(
            f"{count} of {len(truncated)} {what} were longer than "
            f"max_length={max_length} tokens and were truncated.",
            TruncationWarning,
            stacklevel=3,
        )
