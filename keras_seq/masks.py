"""The one place where masks are built and merged.

Every mask in keras-seq is boolean and `True` means "may attend" or "is a
real token". Shapes:

- B: batch size
- T: query (target) length
- S: key (source) length

A padding mask is (B, T); an attention mask is (B, T, S). Masks are merged
with a logical AND, so any mask can only remove positions, never add them.
"""

import contextlib
import contextvars

import keras
import ml_dtypes
import numpy as np
from keras import ops

PADDING_ID = 0

# True inside `unread_ids()`: ids are then passed on without a host read.
_IDS_UNREAD = contextvars.ContextVar("keras_seq_ids_unread", default=False)


def _is_integer_dtype(dtype):
    dtype = keras.backend.standardize_dtype(dtype)
    return dtype.startswith("int") or dtype.startswith("uint")


def check_token_ids(token_ids, name="token_ids", vocabulary_size=None):
    """Validate a batch of token ids: rank 2 and an integer dtype.

    Args:
        token_ids: tensor of shape (B, T).
        name: the argument name to cite in the error message.
        vocabulary_size: optional; when the ids are concrete (eager), ids
            outside `[0, vocabulary_size)` are refused.

    Raises:
        TypeError: when `token_ids` is not an array or tensor (a nested list,
            say), whose shape and dtype could only be guessed.
        ValueError: on a wrong rank, a float dtype, or ids out of range.
    """
    if not (hasattr(token_ids, "shape") and hasattr(token_ids, "dtype")):
        raise TypeError(
            f"`{name}` must be an array or tensor of shape (batch_size, "
            f"sequence_length), e.g. numpy.asarray(ids, 'int32'); received "
            f"{type(token_ids).__name__}."
        )
    shape = tuple(token_ids.shape)
    if len(shape) != 2:
        raise ValueError(
            f"`{name}` must have rank 2, shape (batch_size, sequence_length); "
            f"received shape {shape}."
        )
    dtype = keras.backend.standardize_dtype(token_ids.dtype)
    if not _is_integer_dtype(dtype):
        raise ValueError(
            f"`{name}` must hold integer token ids (int32 or int64); "
            f"received dtype {dtype}."
        )
    if vocabulary_size is not None:
        check_id_range(token_ids, name, vocabulary_size)


def check_id_range(ids, name, size, size_name="vocabulary_size"):
    """Refuse concrete ids outside `[0, size)`; symbolic ids pass unread.

    An embedding lookup past its table does not fail the same way on every
    backend: TensorFlow raises from inside the graph, JAX reads NaN. Ids
    that can be read are therefore checked before they reach one.

    Args:
        ids: array or tensor of integer ids, any shape.
        name: the argument name to cite in the error message.
        size: int, the number of valid ids.
        size_name: what `size` is called in the message, e.g.
            `"num_classes"` for class labels.

    Raises:
        ValueError: when an id is negative or at least `size`.
    """
    values = _concrete_values(ids)
    if values is None or not values.size:
        return
    low, high = values.min(), values.max()
    if low < 0 or high >= size:
        raise ValueError(
            f"{id_range_rule(name, size, size_name)}; "
            f"received values in [{low}, {high}]."
        )


def id_range_rule(name, size, size_name="vocabulary_size", where=""):
    """The rule an id check states: "`name` must lie in [0, size) (...)".

    One wording for the eager check (`check_id_range`) and the one inside
    a `tf.data` pipeline (`assert_id_range`).

    Args:
        name: the argument's name, quoted in the message.
        size: int, the number of valid ids.
        size_name: what `size` is called, e.g. `"num_classes"`.
        where: text after the name, e.g. `" in the `x` dataset"`.
    """
    return f"`{name}`{where} must lie in [0, {size}) ({size_name}={size})"


def assert_id_range(ids, name, size, size_name="vocabulary_size", where=""):
    """A TensorFlow assertion that integer `ids` lie in `[0, size)`.

    For ids read inside a `tf.data` pipeline, where no Python check runs:
    a batch out of range stops the pipeline with an `InvalidArgumentError`
    carrying `id_range_rule`'s message and the batch's smallest and
    largest id, on every backend that the pipeline feeds (JAX would read
    NaN from an embedding past its table, or train on a label past the
    logits without a word). An empty batch passes.

    Args:
        ids: an integer `tf.Tensor`, any shape.
        name, size, size_name, where: as for `id_range_rule`.

    Returns:
        The assertion op, for `tf.control_dependencies`.
    """
    import tensorflow as tf  # Only pipelines call it; they run TensorFlow.

    low, high = tf.reduce_min(ids), tf.reduce_max(ids)
    in_range = tf.logical_and(low >= 0, high < size)
    return tf.debugging.Assert(
        tf.logical_or(tf.size(ids) == 0, in_range),
        [
            # Printed escaped by TensorFlow, hence no quotes of its own.
            f"{id_range_rule(name, size, size_name, where)}; a batch holds "
            "values in [min, max] =",
            low,
            high,
        ],
    )


@contextlib.contextmanager
def unread_ids():
    """Within this context, `check_id_range` does not read tensors' ids.

    On TensorFlow and JAX the ids inside a training step or a decoding loop
    are traced and cannot be read anyway; PyTorch runs those steps eagerly,
    and reading the ids there copies them to the host and waits for the
    device at every step. The steps' ids were checked where they entered
    (`fit`'s arrays, `generate`'s source, a `tf.data` pipeline's batches,
    checked inside the pipeline by the models that take them) or came from the
    model's own argmax. NumPy arrays are still checked.

    Example:

    >>> with unread_ids():
    ...     check_id_range(keras.ops.convert_to_tensor([[7]]), "ids", 5)
    """
    token = _IDS_UNREAD.set(True)
    try:
        yield
    finally:
        _IDS_UNREAD.reset(token)


def _concrete_values(x):
    """`x` as a NumPy array, or `None` when it is traced, symbolic or inside
    `unread_ids()`."""
    if isinstance(x, np.ndarray):
        return x
    if _IDS_UNREAD.get():
        return None
    try:
        return np.asarray(ops.convert_to_numpy(x))
    except Exception:  # Tracers and symbolic tensors cannot be read.
        return None


def padding_mask(token_ids, padding_id=PADDING_ID):
    """Padding mask of shape (B, T): True where `token_ids != padding_id`."""
    check_token_ids(token_ids)
    return ops.not_equal(token_ids, padding_id)


def causal_mask(query_length, key_length, offset=None, batch_size=None):
    """Causal mask, bottom-right aligned, with an optional cache offset.

    Query position `i` sits at absolute position `offset + i` and may attend
    to key positions `j <= offset + i` (Eq. 7.27: later keys are masked).
    Without an offset the query is aligned with the *end* of the keys,
    `offset = key_length - query_length`, which is what a query chunk
    appended to a cache of earlier keys needs; with equal lengths this is the
    usual lower-triangular mask.

    Args:
        query_length: T, an int or a scalar tensor.
        key_length: S, an int or a scalar tensor.
        offset: absolute position of the first query, e.g. the cache update
            index during decoding. An int or a scalar tensor.
        batch_size: if given, the mask is broadcast to (B, T, S).

    Returns:
        A boolean tensor of shape (T, S), or (B, T, S) with `batch_size`.
    """
    if offset is None:
        offset = key_length - query_length
    i = ops.arange(query_length, dtype="int32")[:, None]  # (T, 1)
    i = i + ops.cast(offset, "int32")
    j = ops.arange(key_length, dtype="int32")[None, :]  # (1, S)
    mask = ops.greater_equal(i, j)  # (T, S)
    if batch_size is not None:
        mask = ops.broadcast_to(mask[None], (batch_size, query_length, key_length))
    return mask


def merge_masks(*masks):
    """Logical AND of the given boolean masks, skipping `None`.

    Masks broadcast against each other, so a (B, 1, S) key mask merges with
    a (T, S) causal mask into (B, T, S). Returns `None` if all are `None`.
    """
    merged = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        merged = mask if merged is None else ops.logical_and(merged, mask)
    return merged


def attention_mask_from_padding(query_mask=None, key_mask=None):
    """(B, T, S) attention mask from (B, T) query and (B, S) key masks."""
    query_part = None if query_mask is None else ops.cast(query_mask, "bool")
    key_part = None if key_mask is None else ops.cast(key_mask, "bool")
    if query_part is not None:
        query_part = query_part[:, :, None]  # (B, T, 1)
    if key_part is not None:
        key_part = key_part[:, None, :]  # (B, 1, S)
    return merge_masks(query_part, key_part)


def attention_mask_per_head(
    attention_mask, batch_size, num_heads, query_length, key_length
):
    """An attention mask of any shape Keras takes, as (B, N, T, S).

    `keras.layers.MultiHeadAttention` takes (T, S) (one mask for every
    row), (B, T, S) and (B, N, T, S) (one per head); a batch or head axis
    of size 1 broadcasts. All come out with a batch and a head axis, each
    of its given size or 1, so they merge with padding and causal masks by
    broadcasting.

    Args:
        attention_mask: boolean mask, or None.
        batch_size, num_heads, query_length, key_length: the expected
            sizes B, N, T, S; None (or symbolic) where unknown.

    Returns:
        A boolean (B or 1, N or 1, T, S) tensor, or None.

    Raises:
        ValueError: naming `attention_mask` and the shapes it may have.
    """
    if attention_mask is None:
        return None
    shape = tuple(static_dim(d) for d in attention_mask.shape)
    allowed = {
        2: (query_length, key_length),
        3: (batch_size, query_length, key_length),
        4: (batch_size, num_heads, query_length, key_length),
    }
    expected = tuple(static_dim(d) for d in allowed.get(len(shape), ()))
    broadcast = (0, 1) if len(shape) == 4 else (0,) if len(shape) == 3 else ()
    fits = len(shape) in allowed and all(
        e is None or s is None or s == e or (s == 1 and axis in broadcast)
        for axis, (s, e) in enumerate(zip(shape, expected))
    )
    if not fits:
        named = [
            "(" + ", ".join("?" if d is None else str(d) for d in dims) + ")"
            for dims in allowed.values()
        ]
        raise ValueError(
            "`attention_mask` must have shape (query_length, key_length), "
            "(batch_size, query_length, key_length) or (batch_size, "
            "num_heads, query_length, key_length), a batch or head axis "
            f"possibly 1: here {named[0]}, {named[1]} or {named[2]}; "
            f"received shape {shape}."
        )
    attention_mask = ops.cast(attention_mask, "bool")
    if len(shape) == 2:
        return attention_mask[None, None]  # (1, 1, T, S)
    if len(shape) == 3:
        return attention_mask[:, None]  # (B, 1, T, S)
    return attention_mask


def masked_value(dtype):
    """A large negative logit for masked positions, safe in `dtype`.

    Chosen from the dtype's range instead of a hard-coded constant, which
    overflows to -inf in float16. The margin (0.7 of the most negative value)
    keeps `logit - max_logit` finite when every key of a row is masked.
    """
    dtype = keras.backend.standardize_dtype(dtype)
    if dtype == "bfloat16":
        # NumPy's finfo does not know bfloat16.
        info = ml_dtypes.finfo(ml_dtypes.bfloat16)
    else:
        info = np.finfo(np.dtype(dtype))
    return float(info.min) * 0.7


def token_logits_mask(token_ids, size):
    """(1, V) boolean mask of the ids that may be chosen, or None for all.

    Built once per decoding call and read at every step by
    `mask_token_logits`: a loop that runs eagerly (PyTorch's) would
    otherwise copy a fresh mask from the host at each step.

    Args:
        token_ids: a sequence of Python ints never to choose; ids outside
            [0, size) are ignored.
        size: int V, the number of logits of a step.

    Returns:
        A (1, V) boolean tensor, False at `token_ids`; None when none of
        them is below V.
    """
    chosen = [i for i in token_ids if 0 <= i < size]
    if not chosen:
        return None
    allowed = np.ones((1, size), bool)
    allowed[0, chosen] = False
    return ops.convert_to_tensor(allowed)


def mask_token_logits(logits, allowed):
    """(B, V) logits with the ids `allowed` rules out at the sentinel.

    Greedy choice, sampling (before temperature, top-k and top-p, so that
    the nucleus is drawn from the tokens that may be chosen) and beam
    search all read the masked logits.

    Args:
        logits: (B, V) float logits of the next token.
        allowed: the (1, V) mask of `token_logits_mask`, or None.

    Returns:
        The logits, unchanged where an id may be chosen.
    """
    if allowed is None:
        return logits
    return ops.where(allowed, logits, masked_value(logits.dtype))


def masked_softmax(scores, mask, dtype):
    """Softmax over the last axis in which masked keys get zero weight.

    The softmax runs in float32: float16 logits lose the small differences
    that decide the weights, and its range is too short for the masked
    value. A row whose every key is masked would come out uniform; it is
    set to zero instead, and `where` passes no gradient to its scores.

    Args:
        scores: (..., T, S) attention logits, any float dtype.
        mask: boolean, broadcastable to `scores`, True where a query may
            attend; or None.
        dtype: the dtype of the returned weights (the compute dtype).

    Returns:
        (..., T, S) weights in `dtype`, summing to 1 over each row that has
        a key, zero on masked keys.

    Example:
    >>> mask = keras.ops.array([[True, True, False]])
    >>> weights = masked_softmax(keras.ops.zeros((1, 3)), mask, "float32")
    >>> [float(w) for w in weights[0]]
    [0.5, 0.5, 0.0]
    """
    scores = ops.cast(scores, "float32")
    if mask is not None:
        scores = ops.where(mask, scores, masked_value("float32"))
    weights = ops.cast(ops.softmax(scores, axis=-1), dtype)
    if mask is not None:
        weights = ops.where(mask, weights, 0)
    return weights


def static_dim(dim):
    """`dim` as a Python int, or `None` when unknown or symbolic.

    JAX traces unknown batch sizes as symbolic dimensions that refuse
    comparisons, so shape checks only look at plain integers.
    """
    if dim is None or isinstance(dim, bool):
        return None
    if isinstance(dim, (int, np.integer)):
        return int(dim)
    return None


def check_mask_shape(mask, name, expected_shape):
    """Raise if the statically known dims of `mask` differ from `expected`.

    `expected_shape` may hold `None` for dims that are not checked.
    """
    if mask is None:
        return
    shape = tuple(static_dim(d) for d in mask.shape)
    expected_shape = tuple(static_dim(d) for d in expected_shape)
    ok = len(shape) == len(expected_shape) and all(
        e is None or s is None or s == e for s, e in zip(shape, expected_shape)
    )
    if not ok:
        readable = (
            "(" + ", ".join("?" if e is None else str(e) for e in expected_shape) + ")"
        )
        raise ValueError(
            f"`{name}` must have shape {readable}; received shape {shape}."
        )
